"""Ctrl+B (issue 27): a running foreground Bash command moved to the background — the call returns
at once with the task id and output file, the command goes on, its output (before and after the
move) lands in the task's file and its end is announced like run_in_background's. Real shells."""

from __future__ import annotations

import asyncio
from pathlib import Path

from codeloop.tools.base import CURRENT_TOOL_USE_ID, ToolContext
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.builtin.bash_background import TaskStatus, registry
from codeloop.tools.registry import parse_tool_input
from test_background import alive, gone, marker_sleep


async def until(predicate, timeout: float = 20.0) -> None:
    """Wait for a condition (polled), failing after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "condition never held"
        await asyncio.sleep(0.01)


def start(ctx: ToolContext, command: str, tool_use_id: str = "fg1") -> asyncio.Task:
    CURRENT_TOOL_USE_ID.set(tool_use_id)
    inp = parse_tool_input(BashTool(), {"command": command, "description": "gated job"})
    return asyncio.ensure_future(BashTool().call(inp, ctx))


async def test_a_running_command_moved_to_the_background_goes_on_and_is_announced(tmp_path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "session")
    (tmp_path / "session").mkdir()
    ended = []
    registry(ctx).listeners.append(ended.append)
    gate = tmp_path / "go"
    call = start(ctx, f"echo BEFORE; while [ ! -e {gate} ]; do sleep 0.02; done; echo AFTER; cd /")
    await until(lambda: "BEFORE" in ctx.live_output.get("fg1", lambda: "")())
    assert list(ctx.background.foreground) == ["fg1"]
    assert ctx.background.background_foreground() == 1
    res = await asyncio.wait_for(call, 10)                       # returns at once, the command still runs
    task = ctx.background.get(res.data["backgroundTaskId"])
    assert res.content == (f"Command was manually backgrounded by user with ID: {task.id}. "
                           f"Output is being written to: {task.output_file}")
    assert res.data["backgroundedByUser"] is True and not res.is_error
    assert task.status is TaskStatus.RUNNING and task.tool_use_id == "fg1" and task.description == "gated job"
    assert task.output_file.parent == tmp_path / "session" / "tasks"
    assert ctx.background.foreground == {} and "fg1" not in ctx.live_output
    assert not ended
    gate.touch()
    assert await ctx.background.wait(task, 20)
    assert task.status is TaskStatus.COMPLETED and task.exit_code == 0
    assert task.output() == "BEFORE\nAFTER\n"
    assert ended == [task]
    assert ctx.cwd == tmp_path                                    # a moved command's `cd` does not carry over
    assert not list((tmp_path / "session").glob("codeloop-cwd-*"))  # released once it ended


async def test_a_command_that_ends_in_the_foreground_leaves_nothing_to_move(tmp_path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    res = await BashTool().call(parse_tool_input(BashTool(), {"command": "echo hi"}), ctx)
    assert res.content == "hi"
    assert ctx.foreground == {}
    assert ctx.background is None   # never moved: no background registry was needed (nor its import)
    from codeloop.tools.builtin.bash_background import registry

    assert registry(ctx).background_foreground() == 0 and registry(ctx).foreground is ctx.foreground


async def test_a_moved_command_that_fails_is_announced_failed(tmp_path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "session")
    gate = tmp_path / "go"
    call = start(ctx, f"while [ ! -e {gate} ]; do sleep 0.02; done; echo oops >&2; exit 3", "fg2")
    await until(lambda: "fg2" in ctx.foreground)
    registry(ctx).background_foreground()   # what the REPL's Ctrl+B does (its read of ctx.background makes it)
    res = await asyncio.wait_for(call, 10)
    task = ctx.background.get(res.data["backgroundTaskId"])
    gate.touch()
    assert await ctx.background.wait(task, 20)
    assert task.status is TaskStatus.FAILED and task.exit_code == 3 and "oops" in task.output()


def test_kept_output_goes_to_the_file_before_what_follows(tmp_path):
    from codeloop.tools.builtin.bash import _Capture

    cap = _Capture()
    cap.head += b"early "
    cap.total = 6
    path = Path(tmp_path / "out")
    import os
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    cap.spill(fd)
    assert cap.sink == fd
    os.close(fd)
    assert path.read_bytes() == b"early "


async def test_a_moved_command_is_stopped_like_any_background_task(tmp_path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "session")
    command, marker = marker_sleep()
    call = start(ctx, f"echo UP; {command} & {command}; wait", "fg3")
    await until(lambda: "UP" in ctx.live_output.get("fg3", lambda: "")())
    registry(ctx).background_foreground()
    res = await asyncio.wait_for(call, 10)
    task = ctx.background.get(res.data["backgroundTaskId"])
    await asyncio.wait_for(ctx.background.stop(task), 20)
    assert task.status is TaskStatus.KILLED and task.done.is_set()
    assert task.output() == "UP\n"
    assert await gone(marker) and not alive(marker)   # the whole group went with it
