"""The TodoWrite tool: the session's structured task list.

Owns the todo item schema, that it never needs permission, and where the list lives: `ctx.todos`, mirrored to
`<session_dir>/todos.json` when the session has a folder, so a resumed session finds it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.write import atomic_write

RESULT_TEXT = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to track "
    "your progress. Please proceed with the current tasks if applicable"
)

DESCRIPTION = """\
Use this tool to create and manage a structured task list for your current coding session. \
It helps you track progress, organize complex tasks, and shows the user how you are doing.

When to use it: complex multi-step tasks (3 or more distinct steps), when the user gives several \
tasks or explicitly asks for a todo list, and right after receiving new instructions (capture \
them as todos). Skip it for a single trivial task or purely conversational requests.

How to use it:
- Each call replaces the whole list; send every item, not just the changed ones.
- Each item has `content` (imperative, e.g. "Run tests"), `activeForm` (present continuous, \
e.g. "Running tests") and `status`: pending, in_progress or completed.
- Mark a task in_progress BEFORE beginning work on it; keep exactly one task in_progress at a time.
- Mark tasks completed IMMEDIATELY after finishing them; don't batch completions. Only mark a task \
completed when it is fully done (tests pass, no unresolved errors); otherwise keep it in_progress \
and add a todo for the blocker.
- Remove tasks that are no longer relevant."""


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    content: str = Field(min_length=1, description="What needs to be done, in imperative form")
    status: Literal["pending", "in_progress", "completed"] = Field(
        description="The task's state"
    )
    activeForm: str = Field(
        min_length=1, description="Present continuous form shown while the task is in progress"
    )


class TodoWriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    todos: list[TodoItem] = Field(description="The updated todo list")


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """Replace `$ref`s with their definitions; some OpenAI-compatible servers reject `$defs`."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_refs(defs[ref.rsplit("/", 1)[1]], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


class TodoWriteTool(Tool):
    name: ClassVar[str] = "TodoWrite"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = TodoWriteInput

    def is_read_only(self, inp: BaseModel) -> bool:
        return False

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return False

    async def check_permissions(self, inp: BaseModel, ctx: ToolContext) -> PermissionDecision:
        # The list lives in the session (and its own folder), never in the user's files: like
        # Claude Code, it is never asked about, in any mode (deny rules still apply).
        return PermissionDecision(PermissionBehavior.ALLOW)

    def _build_schema(self) -> dict[str, Any]:
        # Hooked below Tool.input_schema's per-model cache, so the inlining happens once.
        schema = dict(super()._build_schema())
        defs = schema.pop("$defs", {})
        return _inline_refs(schema, defs)

    async def call(self, inp: TodoWriteInput, ctx: ToolContext) -> ToolResult:
        old = list(ctx.todos)
        new = [item.model_dump() for item in inp.todos]
        if ctx.session_dir is not None:
            await asyncio.to_thread(self._persist, ctx, new)
        ctx.todos = new
        return ToolResult(RESULT_TEXT, data={"oldTodos": old, "newTodos": new})

    @staticmethod
    def _persist(ctx: ToolContext, todos: list[dict[str, Any]]) -> None:
        assert ctx.session_dir is not None
        try:
            atomic_write(ctx.session_dir / "todos.json", json.dumps(todos, indent=2).encode())
        except OSError as e:
            raise ToolError(f"Could not save the todo list: {e.strerror or e}") from e
