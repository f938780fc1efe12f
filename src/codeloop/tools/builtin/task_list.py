"""TaskCreate, TaskGet, TaskList and TaskUpdate: Claude Code's task list tools.

Names, input schemas, result texts and `tool_use_result` shapes follow Claude Code's (2.1.x);
the store is `tools.task_board` (persisted in the session folder). Like TodoWrite they touch only
the session's own state, so they never ask; like Claude Code's they are deferred (loaded through
ToolSearch). Each result's `data` also carries `tasks`, the whole list, so a front end can redraw
it the way it redraws TodoWrite's.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.task_board import TaskBoard, TaskRecord, board


class _SessionStateTool(Tool):
    should_defer: ClassVar[bool] = True

    async def check_permissions(self, inp: Any, ctx: ToolContext) -> PermissionDecision:
        # The list is session state, never the user's files: allowed in every mode (deny rules still apply).
        return PermissionDecision(PermissionBehavior.ALLOW)

    @staticmethod
    def _agent(ctx: ToolContext) -> dict[str, Any] | None:
        return {"agent_id": ctx.agent_id, "agent_type": ctx.agent_type} if ctx.agent_id else None

    @staticmethod
    async def _save(b: TaskBoard) -> None:
        try:
            await asyncio.to_thread(b.save)
        except OSError as e:
            raise ToolError(f"Could not save the task list: {e.strerror or e}") from e


class TaskCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(description="A brief title for the task")
    description: str = Field(description="What needs to be done")
    activeForm: str | None = Field(None, description='Present continuous form shown in the spinner while the '
                                                     'task is in_progress (e.g., "Running tests")')
    metadata: dict[str, Any] | None = Field(None, description="Arbitrary metadata to attach to the task")


class TaskCreateTool(_SessionStateTool):
    name: ClassVar[str] = "TaskCreate"
    description: ClassVar[str] = (
        "Add one task to the session's task list (status pending, no owner). Use it for work of three or more "
        "steps, or when the user gives several things to do: one call per task, with a short imperative `subject` "
        "and a `description` of what needs doing. Check TaskList first to avoid duplicates; set dependencies "
        "afterwards with TaskUpdate (addBlocks / addBlockedBy). Skip it for a single trivial task.")
    input_model: ClassVar[type[BaseModel]] = TaskCreateInput

    async def call(self, inp: TaskCreateInput, ctx: ToolContext) -> ToolResult:
        if not inp.subject.strip():
            raise ToolError("The subject is blank. Call TaskCreate again with a short title in `subject`.")
        b = board(ctx)
        rec = await asyncio.to_thread(b.create, inp.subject, inp.description, inp.activeForm, inp.metadata)
        if ctx.lifecycle_hooks is not None:   # TaskCreated hooks may refuse it (exit 2): then it never was
            refusal = await ctx.lifecycle_hooks.task_created(rec.id, rec.subject, rec.description, self._agent(ctx))
            if refusal.refused:
                await asyncio.to_thread(b.delete, rec.id)
                raise ToolError(f"The task was not created: {refusal.reason}")
        data = {"task": {"id": rec.id, "subject": rec.subject, "description": rec.description},
                "tasks": b.snapshot()}
        return ToolResult(f"Task #{rec.id} created successfully: {rec.subject}", data=data)


class TaskGetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taskId: str = Field(description="The ID of the task to retrieve")


class TaskGetTool(_SessionStateTool):
    name: ClassVar[str] = "TaskGet"
    description: ClassVar[str] = (
        "Read one task of the task list by id: subject, description, status, the tasks it blocks and the open "
        "tasks blocking it. Use it before starting a task whose full description you have not read; check that "
        "its blockedBy list is empty first. TaskList gives every task in summary.")
    input_model: ClassVar[type[BaseModel]] = TaskGetInput

    def is_read_only(self, inp: Any) -> bool:
        return True

    async def call(self, inp: TaskGetInput, ctx: ToolContext) -> ToolResult:
        b = board(ctx)
        rec = b.get(inp.taskId)
        if rec is None:
            return ToolResult("Task not found", data={"task": None})
        task = {"id": rec.id, "subject": rec.subject, "description": rec.description, "status": rec.status,
                "blocks": list(rec.blocks), "blockedBy": b.open_blockers(rec)}
        lines = [f"Task #{rec.id}: {rec.subject}", f"Status: {rec.status}", f"Description: {rec.description}"]
        if task["blockedBy"]:
            lines.append("Blocked by: " + ", ".join(f"#{i}" for i in task["blockedBy"]))
        if rec.blocks:
            lines.append("Blocks: " + ", ".join(f"#{i}" for i in rec.blocks))
        return ToolResult("\n".join(lines), data={"task": task})


class TaskListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskListTool(_SessionStateTool):
    name: ClassVar[str] = "TaskList"
    description: ClassVar[str] = (
        "List every task of the task list in summary: id, subject, status, owner and the open tasks blocking it. "
        "Use it after finishing a task to pick the next one (prefer the lowest id that is pending, unowned and "
        "unblocked) or to report progress; TaskGet gives one task's full description.")
    input_model: ClassVar[type[BaseModel]] = TaskListInput

    def is_read_only(self, inp: Any) -> bool:
        return True

    async def call(self, inp: TaskListInput, ctx: ToolContext) -> ToolResult:
        b = board(ctx)
        tasks = [t for t in b.all() if not t.metadata.get("_internal")]
        rows = [{"id": t.id, "subject": t.subject, "status": t.status,
                 **({"owner": t.owner} if t.owner else {}), "blockedBy": b.open_blockers(t)} for t in tasks]
        if not rows:
            return ToolResult("No tasks found", data={"tasks": []})
        lines = []
        for r in rows:
            owner = f" ({r['owner']})" if r.get("owner") else ""
            blocked = (" [blocked by " + ", ".join(f"#{i}" for i in r["blockedBy"]) + "]") if r["blockedBy"] else ""
            lines.append(f"#{r['id']} [{r['status']}] {r['subject']}{owner}{blocked}")
        return ToolResult("\n".join(lines), data={"tasks": rows})


class TaskUpdateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taskId: str = Field(description="The ID of the task to update")
    subject: str | None = Field(None, description="New subject for the task")
    description: str | None = Field(None, description="New description for the task")
    activeForm: str | None = Field(None, description='Present continuous form shown in the spinner while the '
                                                     'task is in_progress (e.g., "Running tests")')
    status: Literal["pending", "in_progress", "completed", "deleted"] | None = Field(
        None, description="New status for the task (deleted removes it)")
    addBlocks: list[str] | None = Field(None, description="Task IDs that this task blocks")
    addBlockedBy: list[str] | None = Field(None, description="Task IDs that block this task")
    owner: str | None = Field(None, description="New owner for the task")
    metadata: dict[str, Any] | None = Field(None, description="Metadata keys to merge into the task. "
                                                              "Set a key to null to delete it.")


class TaskUpdateTool(_SessionStateTool):
    name: ClassVar[str] = "TaskUpdate"
    description: ClassVar[str] = (
        "Change a task of the task list: status (pending → in_progress → completed; deleted removes it), subject, "
        "description, activeForm, owner, metadata (merged; a null value deletes a key), and dependencies "
        "(addBlocks / addBlockedBy take task ids). Mark a task in_progress when you start it and completed only "
        "when it is fully done — not with failing tests or partial work. Read its latest state with TaskGet first.")
    input_model: ClassVar[type[BaseModel]] = TaskUpdateInput

    def is_concurrency_safe(self, inp: Any) -> bool:
        return False   # read-modify-write of one shared list

    async def call(self, inp: TaskUpdateInput, ctx: ToolContext) -> ToolResult:
        b = board(ctx)
        rec = b.get(inp.taskId)
        if rec is None:
            missing = {"success": False, "taskId": inp.taskId, "updatedFields": [], "error": "Task not found"}
            return ToolResult(f"Task #{inp.taskId} not found", data=missing)
        if inp.status == "deleted":
            ok = await asyncio.to_thread(b.delete, rec.id)
            gone = {"success": ok, "taskId": rec.id, "updatedFields": ["deleted"] if ok else [],
                    **({"statusChange": {"from": rec.status, "to": "deleted"}} if ok else {}), "tasks": b.snapshot()}
            return ToolResult(f"Updated task #{rec.id} deleted", data=gone)
        if inp.status == "completed" and rec.status != "completed" and ctx.lifecycle_hooks is not None:
            refusal = await ctx.lifecycle_hooks.task_completed(rec.id, rec.subject, rec.description, self._agent(ctx))
            if refusal.refused:   # a TaskCompleted hook (exit 2) holds the task open: nothing changes
                raise ToolError(f"Task #{rec.id} was not marked completed: {refusal.reason}")
        updated, change = self._apply(rec, inp, b)
        if updated:
            await self._save(b)
        data: dict[str, Any] = {"success": True, "taskId": rec.id, "updatedFields": updated, "tasks": b.snapshot()}
        if change is not None:
            data["statusChange"] = change
        return ToolResult(f"Updated task #{rec.id} {', '.join(updated)}", data=data)

    @staticmethod
    def _apply(rec: TaskRecord, inp: TaskUpdateInput, b: TaskBoard) -> tuple[list[str], dict[str, str] | None]:
        updated: list[str] = []
        for name in ("subject", "description", "activeForm", "owner"):
            value = getattr(inp, name)
            if value is not None and value != getattr(rec, name):
                setattr(rec, name, value)
                updated.append(name)
        if inp.metadata is not None:
            for key, value in inp.metadata.items():
                if value is None:
                    rec.metadata.pop(key, None)
                else:
                    rec.metadata[key] = value
            updated.append("metadata")
        change = None
        if inp.status is not None and inp.status != rec.status:
            change = {"from": rec.status, "to": inp.status}
            rec.status = inp.status
            updated.append("status")
        new_blocks = [i for i in inp.addBlocks or [] if i not in rec.blocks and b.get(i) is not None]
        for other in new_blocks:
            b.link(rec.id, other)
        if new_blocks:
            updated.append("blocks")
        new_blockers = [i for i in inp.addBlockedBy or [] if i not in rec.blockedBy and b.get(i) is not None]
        for other in new_blockers:
            b.link(other, rec.id)
        if new_blockers:
            updated.append("blockedBy")
        return updated, change
