"""Issue 27: a /rewind's successor goes on in the same transcript from the last kept message, so
loading it back (codeloop's resume) and following parentUuid from the newest leaf (Claude Code's
readers) both give the kept conversation plus what followed — also when nothing was kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text

from codeloop.session.assembly import successor
from codeloop.session.resume import load_from_last_boundary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "input"))
from inputhelpers import make_conv  # noqa: E402


def chain(path: Path) -> list[str]:
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    msgs = [e for e in entries if e.get("type") in ("user", "assistant")]
    by_uuid = {e["uuid"]: e for e in msgs}
    out, leaf = [], msgs[-1]
    while leaf is not None:
        c = leaf["message"]["content"]
        out.append(c if isinstance(c, str) else "".join(b.get("text", "") for b in c))
        leaf = by_uuid.get(leaf.get("parentUuid"))
    return out[::-1]


async def run(conv, prompt: str) -> None:
    async for _ in conv.submit(prompt):
        pass


@pytest.mark.parametrize(("rewind_at", "kept"), [(2, ["one", "A1"]), (0, [])])
async def test_the_successor_of_a_rewind_continues_the_same_transcript(tmp_path, monkeypatch, rewind_at, kept):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / ".cfg"))
    api = ScriptedAPI(sse(text("A1")), sse(text("A2")), sse(text("A3")))
    conv = make_conv(api, tmp_path)
    await run(conv, "one")
    await run(conv, "two")
    assert [m.text for m in conv.messages] == ["one", "A1", "two", "A2"]
    new = successor(conv, rewind_at=rewind_at)
    await conv.aclose("rewind")
    assert new.session_id == conv.session_id and [m.text for m in new.messages] == kept
    assert [m.text for m in load_from_last_boundary(conv.transcript_path).messages] == kept   # rewind, then exit
    await run(new, "three")
    await new.aclose()
    assert [m.text for m in load_from_last_boundary(conv.transcript_path).messages] == [*kept, "three", "A3"]
    assert chain(conv.transcript_path) == [*kept, "three", "A3"]


async def test_a_rewind_keeps_the_sessions_background_tasks_and_a_clear_ends_them(tmp_path, monkeypatch):
    import asyncio

    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / ".cfg"))
    conv = make_conv(ScriptedAPI(sse(text("A1"))), tmp_path)
    await run(conv, "one")
    tasks = conv.tool_context.background
    wait_for_go = ["sh", "-c", "while [ ! -e go ]; do sleep 0.02; done; echo finished"]
    kept = await tasks.start_shell("wait for go", wait_for_go, cwd=tmp_path, env={})
    new = successor(conv, rewind_at=0)
    await conv.aclose("rewind")                          # the old conversation closes: the task goes on
    assert new.tool_context.background is tasks and kept.status.value == "running"
    (tmp_path / "go").touch()
    await asyncio.wait_for(kept.done.wait(), 30)
    assert kept.status.value == "completed"
    notes = new.queue.peek_all()
    assert len(notes) == 1 and "wait for go" in str(notes[0].value)   # announced once, to the session that goes on

    (tmp_path / "go").unlink()
    ended = await tasks.start_shell("wait again", wait_for_go, cwd=tmp_path, env={})
    cleared = successor(new)                             # /clear: a new session; the old one's tasks end
    await new.aclose("clear")
    await asyncio.wait_for(ended.done.wait(), 30)
    assert ended.status.value == "killed" and cleared.tool_context.background is not tasks
    await cleared.aclose("exit")
