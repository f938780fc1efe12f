"""One model call of the loop (spec 004 §9–§10): stream, start tools mid-stream, retry, fall back.

`call_model` is an async generator: it yields events as they happen and fills in a `ModelTurn`
describing what the call produced. A failed attempt leaves nothing behind: its messages are
tombstoned and its executor discarded before the retry. Tool calls with side effects are held
until the response is known not to have been cut at max_tokens (their JSON could be truncated
yet still parse); read-only ones start as soon as their block is complete.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from codeloop.events import (ApiCallEvent, AssistantEvent, Event, PermissionDenied, StreamEvent, SystemEvent,
                             Tombstone, UserEvent)
from codeloop.loop.recovery import strip_thinking, withheld_kind
from codeloop.loop.request import build_request
from codeloop.loop.streaming import StreamingToolExecutor, ToolUpdate
from codeloop.loop.overflow import context_overflow
from codeloop.messages import Message, missing_tool_results
from codeloop.providers.assembly import ResponseAssembler
from codeloop.providers.errors import ProviderError
from codeloop.providers.retry import error_category, is_overloaded, is_retryable
from codeloop.tools.base import ToolContext
from codeloop.usage import Usage


class Aborted(Exception):
    """The query's abort controller fired while we were waiting on the model."""


@dataclass
class ModelTurn:
    """One model call of the loop: what was sent and what came back."""
    model: str
    fallback_chain: list[str]
    messages: list[Message]                   # what was sent (thinking stripped after a fallback)
    task_budget: dict[str, int] | None = None  # §9.1: {total, remaining?} for output_config.task_budget
    executor: StreamingToolExecutor | None = None
    assistant_messages: list[Message] = field(default_factory=list)
    tool_use_blocks: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, Message] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    error: ProviderError | None = None
    withheld: str | None = None               # 'prompt_too_long' | 'media'
    aborted: bool = False
    hook_stop: str | None = None              # a PostToolUse hook said `continue: false`
    yielded_results: list[Message] = field(default_factory=list)  # results already sent out mid-stream


async def _until_abort(stream: AsyncIterator[dict[str, Any]], ctx: ToolContext) -> AsyncIterator[dict[str, Any]]:
    """`stream`'s items until it ends; `Aborted` as soon as the abort fires, a pending read included.

    One watcher for the whole stream, not a race (a task and a wait) per item: while a read is
    pending, the abort cancels this task right there — and only there, never in the consumer's code
    between items, which sees the abort before the next read."""
    task = asyncio.current_task()
    assert task is not None
    state = {"reading": False, "cancelled": False}

    def on_abort(_: Any) -> None:
        if state["reading"] and not state["cancelled"]:
            state["cancelled"] = True
            task.cancel()

    watch = asyncio.ensure_future(ctx.abort.wait())
    watch.add_done_callback(on_abort)
    try:
        while True:
            if ctx.abort.aborted:
                raise Aborted
            state["reading"] = True
            try:
                item = await anext(stream)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                # ours, and no other cancellation asked for meanwhile: the abort, said as such
                if state["cancelled"] and task.uncancel() == 0:
                    raise Aborted from None
                raise
            finally:
                state["reading"] = False
            yield item
    finally:
        watch.remove_done_callback(on_abort)
        watch.cancel()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


async def _sleep_or_abort(seconds: float, ctx: ToolContext) -> None:
    try:
        await asyncio.wait_for(ctx.abort.wait(), timeout=seconds)
    except TimeoutError:
        return
    raise Aborted


def _short(err: ProviderError) -> str:
    text = getattr(err, "message", None) or str(err)
    return text if len(text) <= 120 else text[:117] + "..."


def _updates_to_events(turn: ModelTurn, updates: list[ToolUpdate]) -> list[Event]:
    events: list[Event] = []
    for upd in updates:
        turn.results[upd.tool_use_id] = upd.message
        if upd.prevent_continuation:
            turn.hook_stop = upd.stop_reason or f"a PostToolUse hook stopped the turn after {upd.tool_name}"
        if upd.denied:
            events.append(PermissionDenied(upd.tool_name, upd.tool_use_id, dict(upd.tool_input)))
        events.append(UserEvent(upd.message))
    return events


def _is_safe(block: dict[str, Any], tools: list) -> bool:
    from codeloop.tools.registry import find_tool, parse_tool_input
    from codeloop.tools.base import ToolError

    tool = find_tool(tools, block.get("name", ""))
    if tool is None:
        return True
    try:
        return tool.is_concurrency_safe(parse_tool_input(tool, block.get("input") or {}))
    except ToolError:
        return True


async def call_model(p, turn: ModelTurn, *, tools: list, ctx: ToolContext, system_prompt: list[str],
                     max_tokens_override: int | None) -> AsyncIterator[Event]:
    """Stream one model response into `turn`, retrying and falling back as needed."""
    overflow = context_overflow(turn.model, turn.messages, system_prompt, p.user_context)
    if overflow is not None:
        # unsent, but held back as a prompt-too-long answer would be: the loop recovers if it can
        turn.executor = StreamingToolExecutor(tools, p.can_use_tool, ctx)   # empty: nothing was asked
        turn.error, turn.withheld = overflow, withheld_kind(overflow)
        return
    attempt, overloaded_in_a_row = 0, 0
    first_started = time.monotonic()   # the retry budget counts from the first attempt
    while True:
        turn.executor = StreamingToolExecutor(tools, p.can_use_tool, ctx)
        turn.assistant_messages, turn.tool_use_blocks, turn.results = [], [], {}
        yielded_results: list[Message] = []
        assembler = ResponseAssembler()
        held: list[dict[str, Any]] = []     # complete blocks not yet handed to the executor
        request = build_request(model=turn.model, messages=turn.messages, system_prompt=system_prompt,
                                user_context=p.user_context, tools=tools, max_tokens_override=max_tokens_override,
                                thinking=p.thinking, task_budget=turn.task_budget)
        started = time.monotonic()
        # The newest complete block is yielded once we know what follows it, so the last one goes
        # out (and into the transcript) with the response's stop_reason and usage.
        pending: Message | None = None
        try:
            async for raw in _until_abort(p.provider.stream(request), ctx):
                yield StreamEvent(raw)
                etype = raw.get("type")
                block = assembler.feed(raw)
                if pending is not None and etype in ("content_block_start", "message_delta", "message_stop"):
                    if etype != "content_block_start":
                        pending.stop_reason, pending.usage = assembler.stop_reason, dict(assembler.usage)
                    yield AssistantEvent(pending)  # durable before any tool in it can start
                    pending = None
                if etype == "content_block_start" and held:
                    # a later block started, so held read-only blocks are complete and untruncated
                    for b in [b for b in held if _is_safe(b, tools)]:
                        turn.executor.add_tool(b, invalid_json=assembler.invalid_json.get(b["id"]))
                        held.remove(b)
                elif etype == "message_delta":
                    if (raw.get("delta") or {}).get("stop_reason") != "max_tokens":
                        for b in held:
                            turn.executor.add_tool(b, invalid_json=assembler.invalid_json.get(b["id"]))
                        held.clear()
                if block is not None:
                    pending = Message(role="assistant", content=[block], id=assembler.id, model=assembler.model)
                    turn.assistant_messages.append(pending)
                    if block.get("type") == "tool_use":
                        turn.tool_use_blocks.append(block)
                        held.append(block)
                for ev in _updates_to_events(turn, turn.executor.get_completed_results()):
                    if isinstance(ev, UserEvent):
                        yielded_results.append(ev.message)
                    yield ev
        except Aborted:
            turn.aborted = True
        except ProviderError as exc:
            turn.error = exc
        if pending is not None:
            yield AssistantEvent(pending)
        if turn.aborted:   # as Claude Code, an interrupted answer keeps the words already streamed
            for block in assembler.open_text():
                partial = Message(role="assistant", content=[block], id=assembler.id, model=assembler.model)
                turn.assistant_messages.append(partial)
                yield AssistantEvent(partial)
        turn.yielded_results = yielded_results
        turn.stop_reason = assembler.stop_reason
        if assembler.id is not None:
            usage = Usage.from_api(assembler.usage)
            turn.usage.add(usage)
            yield ApiCallEvent(assembler.model or turn.model, usage, (time.monotonic() - started) * 1000,
                               assembler.stop_reason)
        if turn.assistant_messages:
            turn.assistant_messages[-1].stop_reason = assembler.stop_reason
            turn.assistant_messages[-1].usage = dict(assembler.usage)
        err = turn.error
        if err is None or turn.aborted:
            return
        turn.withheld = withheld_kind(err)
        if turn.withheld is not None:
            return  # held back: the loop tries to recover before showing it

        overloaded_in_a_row = overloaded_in_a_row + 1 if is_overloaded(err) else 0
        fallback = (turn.fallback_chain and overloaded_in_a_row >= p.retry.fallback_after)
        if not fallback and (not is_retryable(err) or attempt >= p.retry.limit_for(err)):
            if is_retryable(err) and attempt and not err.hint:
                err.hint = f"gave up after {attempt + 1} attempts"
            return  # fatal: the loop reports it
        delay = p.retry.delay_s(attempt + 1, err)
        refusal = None if fallback else p.retry.refusal(err, delay, time.monotonic() - first_started)
        if refusal is not None:
            err.hint = f"{err.hint}; {refusal}" if err.hint else refusal
            return  # fatal: waiting longer would not be a retry but a hang
        # -- this attempt failed and will be redone: leave nothing of it behind ----------------------
        turn.executor.discard()
        answered = set(turn.results)
        orphans = missing_tool_results(turn.assistant_messages, "Model fallback triggered" if fallback
                                       else "Retrying after an API error", answered)
        for m in orphans:
            yield UserEvent(m)
        for m in [*turn.assistant_messages, *yielded_results, *orphans]:
            yield Tombstone(m)
        turn.error = None
        if fallback:
            original, turn.model = turn.model, turn.fallback_chain.pop(0)
            ctx.model = turn.model  # tools see who answers now; gates keep judging ctx.main_model
            turn.messages = strip_thinking(turn.messages)
            attempt, overloaded_in_a_row = 0, 0
            yield SystemEvent("model_fallback", f"Switched to {turn.model} due to high demand for {original}",
                              "warning", {"from_model": original, "to_model": turn.model})
            continue
        attempt += 1
        yield SystemEvent("api_retry", f"API error ({error_category(err)}: {_short(err)}); retrying in {delay:.1f}s "
                                       f"(attempt {attempt}/{p.retry.limit_for(err)})", "warning",
                          {"attempt": attempt, "max_retries": p.retry.limit_for(err),
                           "retry_delay_ms": int(delay * 1000), "error_status": getattr(err, "status", None),
                           "error": error_category(err)})
        try:
            await _sleep_or_abort(delay, ctx)
        except Aborted:
            turn.aborted = True
            turn.assistant_messages, turn.tool_use_blocks = [], []
            return
