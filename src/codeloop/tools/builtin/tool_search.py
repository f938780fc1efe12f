"""The ToolSearch tool: loads deferred tools' full descriptions and schemas on demand.

Searches the enabled deferred tools of the pool (`ctx.tool_pool`, or the pool given to
the constructor), returns the matches as a `<functions>` listing and marks them loaded in
`ctx.loaded_deferred`, so the next request carries their full schema. A tool whose
gate is off is not searchable: deferral never bypasses `is_enabled`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import Tool, ToolContext, ToolResult
from codeloop.tools.deferred import (TOOL_SEARCH_NAME, loaded_deferred, render_functions, search_tools,
                                     searchable_tools)

DESCRIPTION = f"""\
Fetches the full description and input schema of deferred tools so they can be called.

Deferred tools are listed by name only (as "<name> (deferred tool)"); their full definitions are \
not loaded until you search for them. A deferred tool cannot be called before it is loaded. Once \
{TOOL_SEARCH_NAME} returns a tool's definition, the tool is available from your next response on; \
read its description and follow its rules before using it.

Query forms:
- "select:Name1,Name2" loads exactly the named tools (use this when you know the names).
- Keywords, e.g. "notebook edit", search tool names and descriptions and return the best matches. \
Prefix a word with "+" to require it, e.g. "+slack send".

The result is a <functions> block with one JSON definition (name, description, input_schema) per \
matching tool."""


class ToolSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description='"select:<tool_name>[,<tool_name>…]" for exact names, or keywords to search for')
    max_results: int = Field(default=5, ge=1, le=50, description="Maximum number of tools to return (default 5)")


class ToolSearchTool(Tool):
    name: ClassVar[str] = TOOL_SEARCH_NAME
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = ToolSearchInput
    interruptible: ClassVar[bool] = True  # read-only: cancelling it when the user types loses nothing

    def __init__(self, pool: Iterable[Tool] | Callable[[], Iterable[Tool]] | None = None) -> None:
        # Usually None: the registry builds tools without arguments and the pool comes from ctx.
        self._pool = pool

    def _candidates(self, ctx: ToolContext) -> list[Tool]:
        pool: Any = self._pool() if callable(self._pool) else self._pool
        if pool is None:
            pool = ctx.tool_pool
        return [t for t in searchable_tools(pool, ctx) if t.name != self.name]

    def is_read_only(self, inp: BaseModel) -> bool:
        return True  # it only changes which schemas the next request carries

    async def call(self, inp: ToolSearchInput, ctx: ToolContext) -> ToolResult:
        candidates = self._candidates(ctx)
        matches, missing = search_tools(candidates, inp.query, inp.max_results)
        names = [t.name for t in matches]
        loaded_deferred(ctx).update(names)
        data = {"query": inp.query, "matches": names, "total_deferred_tools": len(candidates)}
        if missing:
            data["not_found"] = missing
        if not matches:
            available = ", ".join(t.name for t in candidates) or "none"
            text = f"No matching deferred tools found for {inp.query!r}. Deferred tools available: {available}."
            return ToolResult(text, data=data)
        text = render_functions(matches)
        if missing:
            text += "\nNot found: " + ", ".join(missing)
        return ToolResult(text, data=data)
