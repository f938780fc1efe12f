"""`codeloop mcp serve` driven by the official `mcp` client library over stdio: the tools it
offers, a Read of a real file, and codeloop's permission policy on every call (a deny rule, a
call that would ask — refused, nobody is there to ask —, an allow rule, the mode)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

HANG_GUARD = 90


async def serve_session(tmp_path: Path, *flags: str, calls=(), env_extra=None):
    """Start `codeloop mcp serve FLAGS` in tmp_path; run (tool, args) calls; (tool names, results)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg"), "HOME": str(tmp_path),
                "PYTHONPATH": os.pathsep.join(sys.path)})
    env.update(env_extra or {})
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeloop", "mcp", "serve", *flags], env=env,
                                   cwd=str(tmp_path))
    results = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        for name, args in calls:
            res = await session.call_tool(name, args)
            results.append((res.is_error, "\n".join(getattr(c, "text", "") for c in res.content), res))
    return {t.name: t for t in listed.tools}, results


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, HANG_GUARD))


def test_lists_tools_and_reads_a_file(tmp_path):
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    # no key, and the embedded model "installed" (a server URL): a tool box still gets no local-model profile
    tools, [(err, out, _)] = run(serve_session(tmp_path, "--debug",   # debug lines go to stderr, not the protocol
                                               calls=[("Read", {"file_path": str(tmp_path / "notes.txt")})],
                                               env_extra={"CODELOOP_LOCAL_BASE_URL": "http://127.0.0.1:9/v1"}))
    assert {"Bash", "Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit", "TaskOutput"} <= set(tools)
    assert not {"Agent", "WebFetch", "AskUserQuestion", "ToolSearch"} & set(tools)
    assert tools["Read"].input_schema["required"] == ["file_path"]
    assert not err and "second line" in out


def test_policy_decides_every_call(tmp_path):
    calls = [("Bash", {"command": "touch planted"}),          # deny rule
             ("Bash", {"command": "echo served"}),            # allow rule
             ("Write", {"file_path": str(tmp_path / "w.txt"), "content": "x"}),   # would ask: refused
             ("Glob", {"pattern": "*.txt"}),                  # read-only: allowed
             ("Nope", {})]
    (tmp_path / "a.txt").write_text("a")
    _, results = run(serve_session(tmp_path, "--disallowedTools", "Bash(touch:*)", "--allowedTools", "Bash(echo:*)",
                                   calls=calls))
    (deny_err, deny_out, _), (ok_err, ok_out, _), (ask_err, ask_out, _), (glob_err, glob_out, _), (no_err, no_out, _) \
        = results
    assert deny_err and "deny rule Bash(touch:*)" in deny_out and not (tmp_path / "planted").exists()
    assert not ok_err and ok_out.strip() == "served"
    assert ask_err and "Write" in ask_out and "non-interactively" in ask_out and not (tmp_path / "w.txt").exists()
    assert not glob_err and "a.txt" in glob_out
    assert no_err and "No such tool" in no_out and "<tool_use_error>" not in no_out


def test_mode_and_settings_rules(tmp_path):
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    (tmp_path / "e.txt").write_text("old\n")
    calls = [("Write", {"file_path": str(tmp_path / "w.txt"), "content": "written"}),
             ("Read", {"file_path": str(tmp_path / "e.txt")}),
             ("Edit", {"file_path": str(tmp_path / "e.txt"), "old_string": "old", "new_string": "new"}),
             ("Bash", {"command": "rm -f e.txt"})]
    _, results = run(serve_session(tmp_path, "--permission-mode", "acceptEdits", "--settings", str(settings),
                                   calls=calls))
    (w_err, _, _), (r_err, _, _), (e_err, _, _), (rm_err, rm_out, _) = results
    assert not w_err and (tmp_path / "w.txt").read_text() == "written"     # acceptEdits: edits in cwd run
    assert not r_err and not e_err and (tmp_path / "e.txt").read_text() == "new\n"   # Read, then Edit: one session
    assert rm_err and "Bash(rm:*)" in rm_out and (tmp_path / "e.txt").exists()


def test_bad_flag_is_one_line(tmp_path):
    import subprocess

    r = subprocess.run([sys.executable, "-m", "codeloop", "mcp", "serve", "--permission-mode", "nonsense"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                       env={**os.environ, "HOME": str(tmp_path), "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg")})
    assert r.returncode != 0 and "Traceback" not in r.stderr and "nonsense" in r.stderr


def test_bash_runs_in_codeloops_sandbox(tmp_path):
    import shutil

    from codeloop.sandbox.bwrap import probe

    if probe().error is not None or not shutil.which("bwrap"):
        pytest.skip(f"bubblewrap cannot run here: {probe().error}")
    work = tmp_path / "work"
    work.mkdir()
    settings = tmp_path / "sandbox.json"
    settings.write_text(json.dumps({"sandbox": {"enabled": True}}))
    outside = tmp_path / "escape.txt"
    calls = [("Bash", {"command": "echo inside > in.txt && cat in.txt"}),
             ("Bash", {"command": f"echo out > {outside}"})]
    _, [(in_err, in_out, _), _] = run(serve_session(work, "--settings", str(settings), calls=calls))
    assert not in_err and "inside" in in_out and (work / "in.txt").exists()   # sandboxed: ran without asking
    assert not outside.exists()                     # outside the working folder the write never reached the host
