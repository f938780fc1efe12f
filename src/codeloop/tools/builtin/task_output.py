"""TaskOutput and TaskStop: reading and stopping background tasks (Claude Code's current names).

TaskOutput `{task_id, block, timeout}` returns a background shell's or agent's output, waiting
for it to finish when `block` is true; TaskStop `{task_id}` stops one. Their older names
(`BashOutput`, `AgentOutputTool`, `KillShell`, `KillBash`) resolve here through the registry's
aliases, and the older parameter names (`bash_id`, `shell_id`) are accepted. The tasks
themselves live in `bash_background.BackgroundTasks`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.bash import truncate
from codeloop.tools.builtin.bash_background import BackgroundTask, TaskStatus

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000


class TaskOutputInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="The task ID to get output from")
    block: bool = Field(True, description="Whether to wait for completion")
    timeout: int = Field(DEFAULT_WAIT_MS, ge=0, le=MAX_WAIT_MS, description="Max wait time in ms")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and "bash_id" in data and "task_id" not in data:  # BashOutput's call
            # BashOutput's `filter` has no TaskOutput counterpart: the whole output is returned
            data = {("task_id" if k == "bash_id" else k): v for k, v in data.items() if k != "filter"}
        return data


class TaskStopInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str | SkipJsonSchema[None] = Field(None, description="The ID of the background task to stop")
    shell_id: str | SkipJsonSchema[None] = Field(None, description="Deprecated: use task_id instead")


def _find(ctx: ToolContext, task_id: str | None) -> tuple[Any, BackgroundTask]:
    reg = ctx.background
    if not task_id:
        raise ToolError("Give the task_id of a background task.")
    task = reg.get(task_id) if reg is not None else None
    if task is None:
        known = ", ".join(reg.tasks) if reg is not None and reg.tasks else "none"
        raise ToolError(f"No background task with id {task_id!r} (known: {known}).")
    return reg, task


class TaskOutputTool(Tool):
    name: ClassVar[str] = "TaskOutput"
    description: ClassVar[str] = (
        "Retrieves output from a running or completed background task (a background shell or a background "
        "agent), by the task_id its launch returned.\n- Use block=true (the default) to wait for the task to "
        "finish, up to `timeout` milliseconds; block=false returns the output so far at once.\n- The result "
        "says whether the task is still running, and its exit code once it has ended.\n- Task ids are also "
        "listed in the <task-notification> sent when a task ends.")
    input_model: ClassVar[type[BaseModel]] = TaskOutputInput

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True

    async def check_permissions(self, inp: BaseModel, ctx: ToolContext) -> PermissionDecision:
        return PermissionDecision(PermissionBehavior.ALLOW)  # reads what an already-allowed call produced

    async def call(self, inp: TaskOutputInput, ctx: ToolContext) -> ToolResult:
        reg, task = _find(ctx, inp.task_id)
        if inp.block and task.status is TaskStatus.RUNNING:
            await reg.wait(task, inp.timeout / 1000)
        state = task.status.value
        code = f"\n<exit_code>{task.exit_code}</exit_code>" if task.exit_code is not None else ""
        empty = "(no output yet)" if task.status is TaskStatus.RUNNING else "(no output)"
        body = truncate(task.output().rstrip("\n")) or empty
        return ToolResult(f"<task_id>{task.id}</task_id>\n<task_type>{task.kind.value}</task_type>\n"
                          f"<status>{state}</status>{code}\n<output>\n{body}\n</output>",
                          data={"task_id": task.id, "status": state, "exit_code": task.exit_code,
                                "output_file": str(task.output_file)})


class TaskStopTool(Tool):
    name: ClassVar[str] = "TaskStop"
    description: ClassVar[str] = (
        "Stops a running background task by its ID (a background shell with its child processes, or a "
        "background agent). Returns a success or failure status.")
    input_model: ClassVar[type[BaseModel]] = TaskStopInput

    def is_read_only(self, inp: BaseModel) -> bool:
        return False

    async def check_permissions(self, inp: BaseModel, ctx: ToolContext) -> PermissionDecision:
        # Stopping work this session started asks nothing, as in Claude Code.
        return PermissionDecision(PermissionBehavior.ALLOW)

    async def call(self, inp: TaskStopInput, ctx: ToolContext) -> ToolResult:
        reg, task = _find(ctx, inp.task_id or inp.shell_id)
        if task.status is not TaskStatus.RUNNING:
            raise ToolError(f"Task {task.id} is not running (status: {task.status.value}).")
        await reg.stop(task)
        return ToolResult(f"Successfully stopped task: {task.id} ({task.command or task.description})",
                          data={"message": "stopped", "task_id": task.id, "task_type": task.kind.value,
                                "command": task.command})
