"""query(): the conversation loop of spec 004 §7 — one `while True`, one `State` per iteration.

Each iteration: build the request, stream the model (yielding each content block as it
completes), run the requested tools, then either stop with a `Terminal` event or rebuild the
state and `continue`. Every exit path leaves a tool_result for every tool_use it sent.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from typing import Any, AsyncIterator

from codeloop.abort import AbortReason
from codeloop.events import (ApiCallEvent, AssistantEvent, AttachmentEvent, Event, PermissionDenied,
                             StreamEvent, Terminal, UserEvent)
from codeloop.loop.request import build_request
from codeloop.loop.state import State, TerminalReason, Transition
from codeloop.loop.tool_runner import CanUseTool, run_tool_use
from codeloop.messages import (INTERRUPT_MESSAGE, INTERRUPT_MESSAGE_FOR_TOOL_USE, Message, api_error_message,
                               missing_tool_results, user_message)
from codeloop.providers.assembly import ResponseAssembler
from codeloop.providers.base import Provider
from codeloop.providers.errors import ProviderError
from codeloop.tools.base import Tool, ToolContext
from codeloop.usage import Usage


@dataclass
class QueryParams:
    messages: list[Message]
    system_prompt: list[str]
    user_context: dict[str, str]
    tools: list[Tool]
    provider: Provider
    model: str
    tool_context: ToolContext
    can_use_tool: CanUseTool
    max_turns: int | None = None
    max_output_tokens: int | None = None
    query_source: str = "repl_main_thread"


class _Aborted(Exception):
    pass


async def _until_abort(stream: AsyncIterator[dict[str, Any]], ctx: ToolContext) -> AsyncIterator[dict[str, Any]]:
    """Iterate the provider stream, stopping promptly when the query is aborted."""
    abort_wait = asyncio.ensure_future(ctx.abort.wait())
    try:
        while True:
            nxt = asyncio.ensure_future(anext(stream))
            done, _ = await asyncio.wait({nxt, abort_wait}, return_when=asyncio.FIRST_COMPLETED)
            if nxt not in done:
                nxt.cancel()
                await asyncio.gather(nxt, return_exceptions=True)
                raise _Aborted
            try:
                yield nxt.result()
            except StopAsyncIteration:
                return
    finally:
        abort_wait.cancel()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


def _interruption(ctx: ToolContext, *, tool_use: bool) -> list[Message]:
    # A submit-interrupt is followed by the user's new message, which says enough.
    if ctx.abort.reason is AbortReason.INTERRUPT:
        return []
    return [user_message(INTERRUPT_MESSAGE_FOR_TOOL_USE if tool_use else INTERRUPT_MESSAGE)]


async def query(p: QueryParams) -> AsyncIterator[Event]:
    state = State(messages=list(p.messages), tool_context=p.tool_context,
                  max_output_tokens_override=p.max_output_tokens)
    while True:
        messages_for_query = state.messages
        ctx: ToolContext = state.tool_context
        turn_count = state.turn_count

        # -- call the model, collecting each content block as it completes ----------------------
        request = build_request(model=p.model, messages=messages_for_query, system_prompt=p.system_prompt,
                                user_context=p.user_context, tools=p.tools,
                                max_tokens_override=state.max_output_tokens_override)
        assembler = ResponseAssembler()
        assistant_messages: list[Message] = []
        tool_use_blocks: list[dict[str, Any]] = []
        started = time.monotonic()
        try:
            async for raw in _until_abort(p.provider.stream(request), ctx):
                yield StreamEvent(raw)
                block = assembler.feed(raw)
                if block is None:
                    continue
                msg = Message(role="assistant", content=[block], id=assembler.id, model=assembler.model)
                assistant_messages.append(msg)
                yield AssistantEvent(msg)
                if block.get("type") == "tool_use":
                    tool_use_blocks.append(block)
        except _Aborted:
            pass
        except ProviderError as err:
            for m in missing_tool_results(assistant_messages, f"API error: {err}"):
                yield UserEvent(m)
            yield AssistantEvent(api_error_message(str(err)))
            yield Terminal(TerminalReason.MODEL_ERROR, turn_count, str(err))
            return
        if assistant_messages:
            assistant_messages[-1].stop_reason = assembler.stop_reason
            assistant_messages[-1].usage = dict(assembler.usage)
        if assembler.id is not None:
            yield ApiCallEvent(assembler.model or p.model, Usage.from_api(assembler.usage),
                               (time.monotonic() - started) * 1000, assembler.stop_reason)

        # -- abort during streaming (spec 004 §12.1) --------------------------------------------
        if ctx.abort.aborted:
            for m in missing_tool_results(assistant_messages, INTERRUPT_MESSAGE_FOR_TOOL_USE):
                yield UserEvent(m)
            for m in _interruption(ctx, tool_use=False):
                yield UserEvent(m)
            yield Terminal(TerminalReason.ABORTED_STREAMING, turn_count)
            return

        if not tool_use_blocks:
            yield Terminal(TerminalReason.COMPLETED, turn_count)
            return

        # -- run the tools (spec 004 §13.1) ------------------------------------------------------
        tool_results: list[Message] = []
        for block in tool_use_blocks:
            if ctx.abort.aborted:
                break
            run = await run_tool_use(block, p.tools, ctx, p.can_use_tool,
                                     invalid_json=assembler.invalid_json.get(block["id"]))
            if run.denied:
                yield PermissionDenied(run.tool_name, block["id"], dict(block.get("input") or {}))
            tool_results.append(run.message)
            yield UserEvent(run.message)

        # -- abort during tools (spec 004 §12.2) -------------------------------------------------
        if ctx.abort.aborted:
            answered = {tid for m in tool_results for tid in m.tool_result_ids()}
            for m in missing_tool_results(assistant_messages, INTERRUPT_MESSAGE_FOR_TOOL_USE, answered):
                yield UserEvent(m)
            for m in _interruption(ctx, tool_use=True):
                yield UserEvent(m)
            if p.max_turns and turn_count + 1 > p.max_turns:
                yield AttachmentEvent({"type": "max_turns_reached", "maxTurns": p.max_turns,
                                       "turnCount": turn_count + 1})
            yield Terminal(TerminalReason.ABORTED_TOOLS, turn_count)
            return

        # -- max turns (spec 004 §13.3) -------------------------------------------------------------
        next_turn_count = turn_count + 1
        if p.max_turns and next_turn_count > p.max_turns:
            yield AttachmentEvent({"type": "max_turns_reached", "maxTurns": p.max_turns,
                                   "turnCount": next_turn_count})
            yield Terminal(TerminalReason.MAX_TURNS, next_turn_count)
            return

        state = replace(state, messages=[*messages_for_query, *assistant_messages, *tool_results],
                        turn_count=next_turn_count, max_output_tokens_recovery_count=0,
                        has_attempted_reactive_compact=False, max_output_tokens_override=p.max_output_tokens,
                        transition=Transition.NEXT_TURN)
