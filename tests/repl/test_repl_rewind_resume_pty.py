"""Issue 27: `/rewind` in the REPL, then leaving and `codeloop -c` / `--resume`: the next request
holds exactly the conversation the rewind kept (and what followed it), and the transcript's
parentUuid chain — what Claude Code's readers follow — agrees. A real pty for the rewind, the CLI
as a subprocess for the resume, the model faked at the HTTP layer."""

import json
import re
import sys
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_print_mode import codeloop  # noqa: E402


def conversation(req) -> list[tuple[str, str]]:
    """(role, text) of each message the request sent (the user context the harness puts before
    the first prompt left out)."""
    out = []
    for m in req.messages:
        c = m["content"]
        said = c if isinstance(c, str) else "".join(b.get("text", "") for b in c)
        out.append((m["role"], re.sub(r"^<system-reminder>.*?</system-reminder>\n", "", said, flags=re.S)))
    return out


def chain(cwd: Path) -> list[str]:
    """The texts along the parentUuid chain from the newest message record, oldest first (how
    Claude Code reads a session back)."""
    [path] = sorted((cwd / ".cfg" / "projects").rglob("*.jsonl"))
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_uuid = {e["uuid"]: e for e in entries if e.get("type") in ("user", "assistant")}
    leaf = [e for e in entries if e.get("type") in ("user", "assistant")][-1]
    out = []
    while leaf is not None:
        c = leaf["message"]["content"]
        out.append(c if isinstance(c, str) else "".join(b.get("text", "") for b in c))
        leaf = by_uuid.get(leaf.get("parentUuid"))
    return out[::-1]


def two_prompts(s):
    s.term.send("first prompt\r")
    s.wait_text("Answer one.")
    s.term.send("second prompt\r")
    s.wait_text("Answer two.")


def rewind(s, choice: str):
    s.term.send("/rewind\r")
    s.wait_text("Rewind to just before which prompt?")
    s.term.send(choice)
    s.wait_text("Restore conversation")
    s.term.send("1")
    s.wait_text("Conversation rewound")


def test_rewind_then_continue_sends_exactly_what_was_kept(tmp_path, screen):
    api = ScriptedAPI(sse(text("Answer one.")), sse(text("Answer two.")), sse(text("After the rewind.")))
    with api.serve() as url:
        s = screen(url)
        two_prompts(s)
        rewind(s, "1")                                  # back to before "second prompt"
        s.term.send("/exit\r")
        s.term.wait_exit()
        r = codeloop(["-c", "-p", "third prompt"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert conversation(api.requests[-1]) == [("user", "first prompt"), ("assistant", "Answer one."),
                                              ("user", "third prompt")]
    assert chain(tmp_path) == ["first prompt", "Answer one.", "third prompt", "After the rewind."]


def test_what_follows_a_rewind_is_kept_too_and_resume_by_id_agrees(tmp_path, screen):
    api = ScriptedAPI(sse(text("Answer one.")), sse(text("Answer two.")), sse(text("Fresh answer.")),
                      sse(text("Resumed by id.")), sse(text("Continued.")))
    with api.serve() as url:
        s = screen(url)
        two_prompts(s)
        rewind(s, "1")
        s.term.send("after rewind\r")
        s.wait_text("Fresh answer.")
        s.term.send("/exit\r")
        s.term.wait_exit()
        [path] = sorted((tmp_path / ".cfg" / "projects").rglob("*.jsonl"))
        r = codeloop(["--resume", path.stem, "-p", "by id"], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        r = codeloop(["--continue", "-p", "once more"], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
    kept = [("user", "first prompt"), ("assistant", "Answer one."), ("user", "after rewind"),
            ("assistant", "Fresh answer.")]
    assert conversation(api.requests[3]) == [*kept, ("user", "by id")]
    assert conversation(api.requests[4]) == [*kept, ("user", "by id"), ("assistant", "Resumed by id."),
                                             ("user", "once more")]
    assert chain(tmp_path) == ["first prompt", "Answer one.", "after rewind", "Fresh answer.", "by id",
                               "Resumed by id.", "once more", "Continued."]


def test_rewind_to_the_first_prompt_then_continue_starts_from_nothing(tmp_path, screen):
    api = ScriptedAPI(sse(text("Answer one.")), sse(text("Answer two.")), sse(text("From scratch.")))
    with api.serve() as url:
        s = screen(url)
        two_prompts(s)
        rewind(s, "2")                                  # back to before "first prompt": nothing kept
        s.term.send("/exit\r")
        s.term.wait_exit()
        r = codeloop(["-c", "-p", "new start"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert conversation(api.requests[-1]) == [("user", "new start")]
    assert chain(tmp_path) == ["new start", "From scratch."]


def test_rewind_then_continue_in_the_repl(tmp_path, screen):
    api = ScriptedAPI(sse(text("Answer one.")), sse(text("Answer two.")), sse(text("Back again.")))
    with api.serve() as url:
        s = screen(url)
        two_prompts(s)
        rewind(s, "1")
        s.term.send("/exit\r")
        s.term.wait_exit()
        s = screen(url, "--continue")
        assert "(2 messages)" in s.wait_text("Resumed session")
        s.term.send("next one\r")
        s.wait_text("Back again.")
        s.term.send("/exit\r")
        s.term.wait_exit()
    assert conversation(api.requests[-1]) == [("user", "first prompt"), ("assistant", "Answer one."),
                                              ("user", "next one")]


def test_the_session_stays_held_by_the_repl_after_a_rewind(tmp_path, screen):
    api = ScriptedAPI(sse(text("Answer one.")), sse(text("Answer two.")), sse(text("From the side.")),
                      sse(text("Fresh answer.")))
    with api.serve() as url:
        s = screen(url)
        two_prompts(s)
        rewind(s, "1")
        [path] = sorted((tmp_path / ".cfg" / "projects").rglob("*.jsonl"))
        # right after the rewind, before anything new is written, another process resuming it forks:
        # the hold moved to the session that goes on, never let go in between
        r = codeloop(["--resume", path.stem, "-p", "from the side"], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        assert f"session {path.stem} is in use by another codeloop" in r.stderr
        s.term.send("after rewind\r")
        shown = s.wait_text("Fresh answer.")
        assert "also being written" not in shown
        s.term.send("/exit\r")
        s.term.wait_exit()
    assert "from the side" not in path.read_text() and "after rewind" in path.read_text()
