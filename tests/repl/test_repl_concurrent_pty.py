"""Issue 33 with the REPL in a real pty: the REPL holds the session it writes, so a `-p --continue`
started beside it forks (the REPL's conversation stays its own), and the REPL's `/resume` of a
session another process is writing resumes a fork of it."""

import json
import os
import re
import subprocess
import sys
import threading

from fakeapi import ScriptedAPI, sse, stalled, text

FORK_LINE = "is in use by another codeloop"


def _said(content):
    return content if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"][-1]


class Model:
    """Answers "answer to <prompt>"; a prompt starting with "slow" is held open until `release`."""

    def __init__(self):
        self.slow_arrived, self.release = threading.Event(), threading.Event()
        self.api = ScriptedAPI(*[self.answer] * 50)

    def answer(self, req):
        prompt = _said(req.messages[-1]["content"])
        if prompt.startswith("slow"):
            self.slow_arrived.set()
            if not self.release.wait(120):
                return stalled(text("never"))
        return sse(text(f"answer to {prompt}"))


def _cli(args, cwd, url, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                "HOME": str(cwd)})
    return subprocess.Popen([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _prompts(path):
    """The transcript's prompts, each checked to be followed by its own answer."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    chain = [(r["type"], _said(r["message"]["content"])) for r in records if r.get("type") in ("user", "assistant")]
    for (role, said), nxt in zip(chain, chain[1:], strict=False):
        assert role != nxt[0] and (role == "assistant" or nxt[1] == f"answer to {said}"), chain
    return [said for role, said in chain if role == "user"]


def _session_files(cwd):
    return {p.stem: p for p in (cwd / ".cfg" / "projects").rglob("*.jsonl") if "subagents" not in p.parts}


def test_print_continue_beside_a_repl_forks_and_the_repl_keeps_its_conversation(tmp_path, run):
    model = Model()
    with model.api.serve() as url:
        t = run(url)
        t.line("hello repl")
        t.expect("answer to hello repl")
        t.ready()
        [sid] = _session_files(tmp_path)
        beside = _cli(["-p", "beside", "--continue", "--output-format", "json"], tmp_path, url)
        out, err = beside.communicate(timeout=120)
        assert beside.returncode == 0, err
        forked = json.loads(out)["session_id"]
        [line] = [x for x in err.splitlines() if FORK_LINE in x]
        assert forked != sid and sid in line and forked in line
        listed = _cli(["sessions", "list", "--json"], tmp_path, url)
        rows = {r["session_id"]: r["live"] for r in json.loads(listed.communicate(timeout=60)[0])}
        assert rows[sid] is not None and rows[forked] is None   # the REPL is live; the -p run has ended
        t.line("again")
        t.expect("answer to again")
        t.ready()
        t.line("/exit")
        assert t.wait_exit() == 0
    files = _session_files(tmp_path)
    assert _prompts(files[sid]) == ["hello repl", "again"]
    assert _prompts(files[forked]) == ["hello repl", "beside"]


def test_repl_resume_of_a_session_another_process_writes_resumes_a_fork(tmp_path, run):
    model = Model()
    with model.api.serve() as url:
        first = _cli(["-p", "first", "--output-format", "json"], tmp_path, url)
        sid = json.loads(first.communicate(timeout=120)[0])["session_id"]
        writer = _cli(["-p", "slow one", "--resume", sid], tmp_path, url)
        try:
            assert model.slow_arrived.wait(120)
            t = run(url, cols=220)
            t.line("/resume")   # the list says which session is live
            t.expect(f"live: pid {writer.pid}")
            t.send("\x1b")
            t.expect("Resume cancelled.")
            t.ready()
            t.line(f"/resume {sid}")
            t.expect(r"resumed a fork of it: [0-9a-f-]{36}")
            forked = re.findall(r"resumed a fork of it: ([0-9a-f-]{36})", t.transcript)[-1]
            t.ready()
            t.line("in the fork")
            t.expect("answer to in the fork")
            t.ready()
        finally:
            model.release.set()
            writer.communicate(timeout=120)
        assert writer.returncode == 0
        t.line("/exit")
        assert t.wait_exit() == 0
    files = _session_files(tmp_path)
    assert forked != sid
    assert _prompts(files[forked]) == ["first", "in the fork"]
    assert _prompts(files[sid]) == ["first", "slow one"]
