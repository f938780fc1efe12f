"""A tool call's record is on disk before the call can change anything; a call that only reads is
not fsynced on its own (re-running a read harms nothing), the turn's end syncs it."""

from __future__ import annotations

import os

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.cli.startup.options import options_from_argv
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.assembly import open_session
from codeloop.session.transcript import TranscriptWriter


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    return tmp_path


async def _run(project, monkeypatch, command: str) -> tuple[list[bool], int]:
    """(for each fsync of the turn: whether made.txt existed then, fsyncs before the 2nd request)."""
    fsyncs: list[bool] = []
    real = os.fsync

    def record(fd):
        fsyncs.append((project / "made.txt").exists())
        real(fd)

    monkeypatch.setattr(os, "fsync", record)
    at_second: list[int] = []

    def answer(_req):
        at_second.append(len(fsyncs))
        return sse(text("done"))

    api = ScriptedAPI(sse(tool_use("Bash", {"command": command})), answer)
    conv, _ = await open_session(options_from_argv(["-p", "x", "--allowedTools", "Bash"]),
                                 provider=AnthropicProvider(api_key="k", base_url="http://fake",
                                                            transport=api.transport()))
    assert conv.writer is not None
    [ev async for ev in conv.submit("go")]
    await conv.aclose()
    assert len(api.requests) == 2
    return fsyncs, at_second[0]


async def test_a_call_that_changes_files_is_fsynced_before_it_runs(project, monkeypatch):
    fsyncs, before_second = await _run(project, monkeypatch, "touch made.txt")
    assert (project / "made.txt").exists()
    assert before_second >= 1 and fsyncs[0] is False   # durable while made.txt did not exist yet


async def test_a_read_only_call_waits_for_the_turns_end(project, monkeypatch):
    fsyncs, before_second = await _run(project, monkeypatch, "ls -la")
    assert before_second == 0          # nothing fsynced on the way to the tool and back
    assert fsyncs                      # but the turn's end made it all durable


@pytest.mark.parametrize("check, synced", [(lambda blocks: True, False), (lambda blocks: False, True),
                                           (lambda blocks: 1 / 0, True), (None, True)])
def test_the_writer_asks_its_check_and_fails_closed(tmp_path, monkeypatch, check, synced):
    calls = []
    monkeypatch.setattr(os, "fsync", calls.append)
    w = TranscriptWriter(tmp_path / "s.jsonl", "sid", str(tmp_path))
    w.only_reads = check
    seen: list = []
    if check is not None:
        w.only_reads = lambda blocks: (seen.append([b["name"] for b in blocks]), check(blocks))[1]
    w.append_entry({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "reading"}, {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}})
    assert bool(calls) is synced
    assert seen == ([] if check is None else [["Read"]])
    w.close()
