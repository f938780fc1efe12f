"""The gated start of a sandboxed Bash call: bubblewrap sets the sandbox up while codeloop takes its
snapshot for planted configuration, and the command runs only after it (`--block-fd`). A snapshot
that refuses the call kills the waiting command before any of it runs."""

from __future__ import annotations

import time

from sandbox_helpers import make_sandbox, needs_bwrap, run_bash

from codeloop.sandbox import planted
from codeloop.tools.base import ToolError


@needs_bwrap
def test_the_command_runs_only_after_the_snapshot(tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()
    seen: list[bool] = []
    original = planted.Watch.__init__

    def slow_snapshot(self, *a, **kw):
        # the process exists now; had it not waited at the gate, `touch` would land within this second
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not (tmp_path / "ran").exists():
            time.sleep(0.02)
        seen.append((tmp_path / "ran").exists())
        original(self, *a, **kw)

    monkeypatch.setattr(planted.Watch, "__init__", slow_snapshot)
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "touch ran && echo done")
    assert not isinstance(res, Exception), res
    assert "done" in res.content
    assert seen == [False]
    assert (tmp_path / "ran").exists()


@needs_bwrap
def test_a_refused_snapshot_kills_the_waiting_command(tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()

    def too_big(*a, **kw):
        raise planted.TooBig(str(tmp_path))

    monkeypatch.setattr(planted, "take", too_big)
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "touch ran")
    assert isinstance(res, ToolError)
    assert "too many files" in str(res) and "Bash refused" in str(res)
    assert not (tmp_path / "ran").exists()
    # the placeholders the call made for missing protected paths went with it
    assert not (tmp_path / ".mcp.json").exists() and not (tmp_path / ".claude").exists()


@needs_bwrap
def test_calls_after_a_refusal_run_normally(tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()
    sandbox = make_sandbox(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(planted, "take", lambda *a, **kw: (_ for _ in ()).throw(planted.TooBig("x")))
        [refused] = run_bash(sandbox, tmp_path, "touch first")
    [res] = run_bash(sandbox, tmp_path, "touch second && echo ok")
    assert isinstance(refused, ToolError) and not (tmp_path / "first").exists()
    assert "ok" in res.content and (tmp_path / "second").exists()
