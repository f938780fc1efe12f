"""Ctrl+B under the real bubblewrap sandbox (issue 27): a sandboxed foreground command moved to the
background keeps running inside the sandbox, and the sandbox's layout for it stays up until the
command ends (as for run_in_background), not until the Bash call returns."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

from sandbox_helpers import make_sandbox, needs_bwrap

from codeloop.tools.base import CURRENT_TOOL_USE_ID, ToolContext
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.builtin.bash_background import TaskStatus, registry
from codeloop.tools.registry import parse_tool_input

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from test_bash_detach import until  # noqa: E402


@needs_bwrap
async def test_a_sandboxed_command_moved_to_the_background_stays_contained_and_keeps_its_layout(tmp_path, outside):
    (tmp_path / "home").mkdir()
    sandbox = make_sandbox(tmp_path)
    released = []
    prepare = sandbox.prepare

    @contextlib.contextmanager
    def watched(*args, **kw):
        with prepare(*args, **kw) as prefix:
            yield prefix
        released.append(True)           # the layout is torn down here
    sandbox.prepare = watched
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "session", sandbox=sandbox)
    gate = tmp_path / "go"
    CURRENT_TOOL_USE_ID.set("sb1")
    command = (f"echo BEFORE; while [ ! -e {gate} ]; do sleep 0.02; done; echo inside > made.txt; "
               f"echo escaped > {outside}/x.txt; echo AFTER")
    call = asyncio.ensure_future(BashTool().call(parse_tool_input(BashTool(), {"command": command}), ctx))
    await until(lambda: "BEFORE" in ctx.live_output.get("sb1", lambda: "")())
    registry(ctx).background_foreground()
    res = await asyncio.wait_for(call, 10)
    task = ctx.background.get(res.data["backgroundTaskId"])
    assert task.status is TaskStatus.RUNNING
    assert not released                  # the call returned; the command still runs in its sandbox
    gate.touch()
    assert await ctx.background.wait(task, 30)
    assert released == [True]
    out = task.output()
    assert out.startswith("BEFORE\n") and "AFTER" in out
    assert (tmp_path / "made.txt").read_text() == "inside\n"
    assert not (outside / "x.txt").exists()   # the project is writable, the rest is not — still
