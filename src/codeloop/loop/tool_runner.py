"""Runs one tool_use block: find the tool, validate input, ask permission, call, wrap the result.

Always returns a user message holding exactly one tool_result for the block, whatever happens,
so the history never holds a dangling tool_use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


from codeloop.messages import Message, tool_result_message
from codeloop.tools.base import (CURRENT_TOOL_USE_ID, PermissionBehavior, PermissionDecision, Tool, ToolContext,
                                 ToolError, ToolResult)

log = logging.getLogger(__name__)


# Any: the parsed input model
CanUseTool = Callable[[Tool, Any, dict[str, Any], ToolContext], Awaitable[PermissionDecision]]


@dataclass
class ToolRun:
    """One tool call's outcome as the loop records it."""
    message: Message
    denied: bool = False
    tool_name: str = ""
    prevent_continuation: bool = False   # a PostToolUse hook said `continue: false`
    stop_reason: str | None = None


async def run_tool_use(block: dict[str, Any], tools: list[Tool], ctx: ToolContext, can_use_tool: CanUseTool,
                       *, invalid_json: str | None = None) -> ToolRun:
    from codeloop.tools.registry import find_tool, parse_tool_input

    tid, name = block["id"], block.get("name", "")

    def error(text: str, denied: bool = False) -> ToolRun:
        return ToolRun(tool_result_message(tid, f"<tool_use_error>{text}</tool_use_error>", is_error=True,
                                           tool_use_result=f"Error: {text}"), denied, name)

    tool = find_tool(tools, name)
    if tool is None:
        return error(f"No such tool available: {name}")
    if invalid_json is not None:
        return error(f"InputValidationError: {name} input was not valid JSON: {invalid_json[:200]!r}")
    try:
        inp = parse_tool_input(tool, block.get("input") or {})
    except ToolError as exc:
        return error(str(exc))

    decision = await can_use_tool(tool, inp, block, ctx)
    if decision.behavior is not PermissionBehavior.ALLOW:
        return error(decision.message or f"Permission to use {name} was denied.", denied=True)
    if decision.updated_input is not None:
        try:
            inp = parse_tool_input(tool, decision.updated_input)
        except ToolError as exc:
            return error(str(exc))

    token = CURRENT_TOOL_USE_ID.set(tid)
    started = time.monotonic()
    # hook payloads name the subagent a tool ran in (Claude Code's agent_id / agent_type)
    agent = {"agent_id": ctx.agent_id, "agent_type": ctx.agent_type} if ctx.agent_id else None
    failure: str | None = None
    try:
        result: ToolResult = await tool.call(inp, ctx)
    except ToolError as exc:
        failure = str(exc)
    except (OSError, UnicodeError) as exc:
        failure = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a bug in the tool: report it and keep the session alive
        log.exception("tool %s crashed", name)
        failure = f"{name} failed unexpectedly: {type(exc).__name__}: {exc}"
    finally:
        CURRENT_TOOL_USE_ID.reset(token)
    duration_ms = int((time.monotonic() - started) * 1000)
    if failure is not None:  # PostToolUseFailure hooks: their feedback joins the error
        post = (await ctx.post_tool_use(name, dict(block.get("input") or {}), None, tid, error=failure,
                                        duration_ms=duration_ms, is_interrupt=ctx.abort.aborted, agent=agent)
                if ctx.post_tool_use else None)
        run = error(failure + (f"\n\n{post.feedback}" if post is not None and post.feedback else ""))
        if post is not None and post.prevent_continuation:
            run.prevent_continuation, run.stop_reason = True, post.stop_reason
        return run
    content = result.content if result.content != "" else f"({name} completed with no output)"
    data = result.data if result.data is not None else content
    post = (await ctx.post_tool_use(name, dict(block.get("input") or {}), data, tid, duration_ms=duration_ms,
                                    agent=agent) if ctx.post_tool_use else None)
    if post is not None and post.feedback:
        # PostToolUse feedback (exit 2 stderr, additionalContext) is shown to the model with the result
        content = ([*content, {"type": "text", "text": post.feedback}] if isinstance(content, list)
                   else f"{content}\n\n{post.feedback}")
    return ToolRun(tool_result_message(tid, content, is_error=result.is_error, tool_use_result=data), False, name,
                   bool(post and post.prevent_continuation), post.stop_reason if post else None)
