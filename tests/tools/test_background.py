"""Background Bash and the TaskOutput / TaskStop tools (issue 16 item 3): real shells, real files.

Processes are looked up by a unique marker in their command line (/proc), which also works for
commands inside the sandbox's PID namespace."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from codeloop.loop.continuation import take_task_notifications, task_notification
from codeloop.loop.queue import CommandQueue
from codeloop.tools.base import ToolContext, ToolError
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.builtin.bash_background import TaskStatus, registry
from codeloop.tools.builtin.task_output import TaskOutputTool, TaskStopTool
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input


def alive(marker: str) -> list[int]:
    """PIDs whose command line contains `marker`."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(proc.name))
    return pids


async def gone(marker: str) -> bool:
    """Whether every process carrying `marker` has exited (reaping may lag a signal briefly)."""
    for _ in range(200):
        if not alive(marker):
            return True
        await asyncio.sleep(0.05)
    return False


def marker_sleep() -> tuple[str, str]:
    """A `sleep` whose argument is unique to this test: (command, marker)."""
    frac = str(uuid.uuid4().int)[:9]
    return f"sleep 300.{frac}", f"300.{frac}"


@pytest.fixture
def bg_ctx(tmp_path: Path) -> ToolContext:
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "session")
    events: list = []
    ctx.emit = events.append
    return ctx


async def call(tool, ctx, **raw):
    return await tool.call(parse_tool_input(tool, raw), ctx)


async def test_background_command_writes_its_output_to_a_session_file_and_is_announced(bg_ctx, tmp_path):
    queue = CommandQueue()
    registry(bg_ctx).listeners.append(lambda t: queue.enqueue(task_notification(t)))
    res = await call(BashTool(), bg_ctx, command="echo start; sleep 1; echo done >&2; exit 3",
                     run_in_background=True, description="slow job")
    task_id = res.data["backgroundTaskId"]
    assert task_id in res.content and not res.is_error
    task = bg_ctx.background.get(task_id)
    assert task.output_file.parent == tmp_path / "session" / "tasks"
    assert task.status is TaskStatus.RUNNING  # the call returned before the command ended

    out = await call(TaskOutputTool(), bg_ctx, task_id=task_id, block=True, timeout=60_000)
    assert "<status>failed</status>" in out.content and "<exit_code>3</exit_code>" in out.content
    assert "start\ndone" in out.content and task.output_file.read_text() == "start\ndone\n"

    # the model is told at the next turn boundary: exit status and the tail of the output
    [msg] = take_task_notifications(queue)
    note = msg.content[0]["text"]
    assert msg.is_meta and f"<task-id>{task_id}</task-id>" in note and "exit code 3" in note
    assert "start\ndone" in note and str(task.output_file) in note
    assert take_task_notifications(queue) == []
    # system/task_started and task_notification, in the shapes claude-agent-sdk parses
    subtypes = [(e.subtype, e.data) for e in bg_ctx.emit.__self__]
    assert subtypes[0][0] == "task_started" and subtypes[0][1]["task_type"] == "local_bash"
    assert subtypes[0][1]["description"] == "slow job"
    assert subtypes[1][0] == "task_notification" and subtypes[1][1]["status"] == "failed"
    assert subtypes[1][1]["output_file"] == str(task.output_file)


async def test_non_blocking_output_and_stop_kill_the_whole_group(bg_ctx):
    command, marker = marker_sleep()
    # a child of the shell, in the background of the background command, goes too
    res = await call(BashTool(), bg_ctx, command=f"echo up; {command} & {command}; wait", run_in_background=True)
    task_id = res.data["backgroundTaskId"]
    for _ in range(200):
        if len(alive(marker)) >= 2:
            break
        await asyncio.sleep(0.05)
    assert len(alive(marker)) >= 2
    out = await call(TaskOutputTool(), bg_ctx, task_id=task_id, block=False)
    assert "<status>running</status>" in out.content and "<exit_code>" not in out.content

    stopped = await call(TaskStopTool(), bg_ctx, task_id=task_id)
    assert task_id in stopped.content and stopped.data["task_type"] == "local_bash"
    assert await gone(marker)
    assert bg_ctx.background.get(task_id).status is TaskStatus.KILLED
    notes = [e for e in bg_ctx.emit.__self__ if e.subtype == "task_notification"]
    assert notes[-1].data["status"] == "stopped"
    with pytest.raises(ToolError, match="not running"):
        await call(TaskStopTool(), bg_ctx, task_id=task_id)
    with pytest.raises(ToolError, match="No background task"):
        await call(TaskOutputTool(), bg_ctx, task_id="nope")


async def test_old_tool_and_parameter_names_still_work(bg_ctx):
    tools = builtin_tools()
    assert find_tool(tools, "BashOutput").name == "TaskOutput"
    assert find_tool(tools, "KillShell").name == "TaskStop" and find_tool(tools, "KillBash").name == "TaskStop"
    res = await call(BashTool(), bg_ctx, command="echo old", run_in_background=True)
    task_id = res.data["backgroundTaskId"]
    out = await call(find_tool(tools, "BashOutput"), bg_ctx, bash_id=task_id, filter="old")
    assert "old" in out.content and "<status>completed</status>" in out.content
    command, marker = marker_sleep()
    res = await call(BashTool(), bg_ctx, command=command, run_in_background=True)
    await call(find_tool(tools, "KillShell"), bg_ctx, shell_id=res.data["backgroundTaskId"])
    assert await gone(marker)


async def test_kill_all_and_the_tasks_listing(bg_ctx):
    command, marker = marker_sleep()
    await call(BashTool(), bg_ctx, command=command, run_in_background=True)
    res = await call(BashTool(), bg_ctx, command="true", run_in_background=True)
    reg = bg_ctx.background
    await reg.wait(reg.get(res.data["backgroundTaskId"]), 60)
    listing = reg.listing()
    assert any("running" in line and command in line for line in listing)
    assert any("completed, exit 0" in line for line in listing)
    assert reg.kill_all() == 1
    assert await gone(marker)


async def test_background_command_refused_like_a_foreground_one(bg_ctx, tmp_path):
    # a missing working directory falls back to the project, and an unknown shell error is a ToolError
    bg_ctx.cwd = tmp_path / "gone"
    res = await call(BashTool(), bg_ctx, command="pwd", run_in_background=True)
    reg = bg_ctx.background
    task = reg.get(res.data["backgroundTaskId"])
    await reg.wait(task, 60)
    assert task.output().strip() == str(tmp_path)


async def test_huge_output_is_read_as_head_and_tail(bg_ctx):
    # 3 MB of numbered lines: TaskOutput reads a bounded head and tail, and says how much it skipped
    res = await call(BashTool(), bg_ctx, command="seq 1 400000", run_in_background=True)
    out = await call(TaskOutputTool(), bg_ctx, task_id=res.data["backgroundTaskId"], timeout=60_000)
    assert "<status>completed</status>" in out.content
    assert "\n1\n2\n" in out.content and "\n400000\n</output>" in out.content
    assert "bytes not read" in out.content or "characters truncated" in out.content
    assert len(out.content) < 100_000
