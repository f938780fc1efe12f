"""Background Bash under the real bubblewrap sandbox (issue 16 item 3): the bwrap process is the
background task, so the command keeps running after the call returns, stays contained, and
stopping the task (or the session) ends everything inside bwrap's PID namespace."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from sandbox_helpers import make_sandbox, needs_bwrap

from codeloop.tools.base import ToolContext
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.builtin.bash_background import TaskStatus
from codeloop.tools.builtin.task_output import TaskOutputTool, TaskStopTool
from codeloop.tools.registry import parse_tool_input

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from test_background import alive, gone, marker_sleep  # noqa: E402


async def call(tool, ctx, **raw):
    return await tool.call(parse_tool_input(tool, raw), ctx)


def context(tmp_path: Path) -> ToolContext:
    (tmp_path / "home").mkdir(exist_ok=True)
    return ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "session",
                       sandbox=make_sandbox(tmp_path))


@needs_bwrap
async def test_sandboxed_background_command_runs_contained_after_the_call_returns(tmp_path, outside):
    ctx = context(tmp_path)
    res = await call(BashTool(), ctx, run_in_background=True,
                     command=f"sleep 1; echo inside > made.txt; echo escaped > {outside}/x.txt; echo done")
    task = ctx.background.get(res.data["backgroundTaskId"])
    assert task.status is TaskStatus.RUNNING
    out = await call(TaskOutputTool(), ctx, task_id=task.id, block=True, timeout=60_000)
    assert "done" in out.content and "<status>completed</status>" in out.content
    assert (tmp_path / "made.txt").read_text() == "inside\n"
    assert not (outside / "x.txt").exists()       # the project is writable, the rest is not
    # the output file lives outside the sandbox's view, written through the inherited descriptor
    assert task.output_file.parent == tmp_path / "session" / "tasks" and "done" in task.output()


@needs_bwrap
async def test_stopping_a_sandboxed_background_task_ends_the_pid_namespace(tmp_path):
    ctx = context(tmp_path)
    command, marker = marker_sleep()
    res = await call(BashTool(), ctx, command=f"{command} & {command}; wait", run_in_background=True)
    task_id = res.data["backgroundTaskId"]
    for _ in range(200):
        if len(alive(marker)) >= 2:
            break
        await asyncio.sleep(0.05)
    assert len(alive(marker)) >= 2
    await call(TaskStopTool(), ctx, task_id=task_id)
    assert await gone(marker)
    # and kill_all (session end) does the same for a task still running
    command, marker = marker_sleep()
    await call(BashTool(), ctx, command=command, run_in_background=True)
    for _ in range(200):
        if alive(marker):
            break
        await asyncio.sleep(0.05)
    assert alive(marker) and ctx.background.kill_all() == 1
    assert await gone(marker)


@needs_bwrap
async def test_a_background_command_gets_the_unix_socket_filter_too(tmp_path):
    ctx = context(tmp_path)
    code = ("import socket; a, b = socket.socketpair(); print('pair ok'); "
            "socket.socket(socket.AF_UNIX)")
    res = await call(BashTool(), ctx, run_in_background=True, command=f'python3 -c "{code}"')
    out = await call(TaskOutputTool(), ctx, task_id=res.data["backgroundTaskId"], block=True, timeout=60_000)
    assert "pair ok" in out.content and "Operation not permitted" in out.content, out.content


@needs_bwrap
async def test_configuration_a_background_command_plants_is_undone_and_reported(tmp_path):
    """Issue 25 #5: when a sandboxed background task ends, what it planted is undone, and the
    note lands in its output, where TaskOutput and the end-of-task notice read."""
    ctx = context(tmp_path)
    res = await call(BashTool(), ctx, run_in_background=True,
                     command="mkdir -p sub/.claude && echo '{}' > sub/.claude/settings.json && echo done")
    task = ctx.background.get(res.data["backgroundTaskId"])
    out = await call(TaskOutputTool(), ctx, task_id=task.id, block=True, timeout=60_000)
    assert "<status>completed</status>" in out.content
    assert not (tmp_path / "sub" / ".claude").exists()
    assert "undid configuration" in task.output() and "sub/.claude" in task.output()
