"""A command ends when its shell is reaped: once its output pipes are closed, the Bash tool waits
on the exit itself rather than on a timed poll (whose timer tick followed every command)."""

from __future__ import annotations

import asyncio

from codeloop.tools.base import ToolContext
from codeloop.tools.builtin import bash as bash_mod
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.registry import parse_tool_input

HANG_GUARD_S = 30   # only to fail instead of hanging; never a timing assertion


async def test_a_command_ends_when_it_exits_not_at_the_next_poll(tmp_path, monkeypatch):
    """With polls ten minutes apart, every command still ends as soon as it exits (before, this
    sat out a poll of a tenth of POLL_S and hit the guard)."""
    monkeypatch.setattr(bash_mod, "POLL_S", 600.0)
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    tool = BashTool()
    for command, code in (("true", 0), ("echo done", 0), ("exit 3", 3),
                          ("exec >/dev/null 2>&1; sleep 0.2", 0)):   # pipes closed long before the exit
        r = await asyncio.wait_for(tool.call(parse_tool_input(tool, {"command": command}), ctx), HANG_GUARD_S)
        assert r.data["exitCode"] == code


async def test_a_shell_that_closed_its_pipes_still_times_out_and_aborts(tmp_path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    tool = BashTool()
    slow = parse_tool_input(tool, {"command": "exec >/dev/null 2>&1; sleep 60", "timeout": 300})
    r = await asyncio.wait_for(tool.call(slow, ctx), HANG_GUARD_S)
    assert r.data["interrupted"] is True and r.content.startswith("Command timed out")
    started = tmp_path / "started"
    task = asyncio.ensure_future(tool.call(parse_tool_input(
        tool, {"command": f"touch {started}; exec >/dev/null 2>&1; sleep 60"}), ctx))
    while not started.exists():            # running, its pipes about to close: then abort
        await asyncio.sleep(0.01)
    ctx.abort.abort()
    r = await asyncio.wait_for(task, HANG_GUARD_S)
    assert r.data["interrupted"] is True
