"""query(): the conversation loop of spec 004 §7 — one `while True`, one `State` per iteration.

Each iteration: call the model (tools start mid-stream), then either recover and `continue`
(the six transitions of §11, in priority order), stop with a `Terminal` event, or collect the
tool results, run the continuation pipeline (§13.2) and go round again. Every exit leaves a
tool_result for every tool_use it sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from codeloop.abort import AbortReason
from codeloop.events import (AssistantEvent, AttachmentEvent, CompactBoundary, Event, PermissionDenied,
                             Terminal, Tombstone, TranscriptEntry, UserEvent)
from codeloop.loop.task_budget import remaining_after_compaction, task_budget_param
from codeloop.loop.continuation import Continuation, NestedMemory
from codeloop.loop.model_call import ModelTurn, call_model
from codeloop.loop.recovery import (MAX_OUTPUT_TOKENS_RECOVERY_LIMIT, ContextCollapse, ReactiveCompact, StopHooks,
                                    can_recover, max_output_tokens_error, recovery_message, run_stop_hooks)
from codeloop.loop.request import (ESCALATED_MAX_OUTPUT_TOKENS, can_escalate, env_max_output_tokens,
                                   max_output_tokens)
from codeloop.loop.state import State, TerminalReason, Transition
from codeloop.loop.tool_runner import CanUseTool
from codeloop.messages import (ENDED_BY_MODEL_TOOL_RESULT, INTERRUPT_MESSAGE, INTERRUPT_MESSAGE_FOR_TOOL_USE, Message,
                               api_error_message, missing_tool_results, user_message)
from codeloop.providers.base import Provider
from codeloop.providers.retry import RetryPolicy
from codeloop.tools.base import Tool, ToolContext

MAX_TOKENS_NOT_RUN = ("Tool call not executed: the response was cut off at the output token limit, "
                      "so its input may be incomplete.")


@dataclass
class QueryParams:
    """Everything one query of the loop needs: messages, prompts, tools, provider and limits."""
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
    fallback_models: list[str] = field(default_factory=list)
    retry: RetryPolicy = field(default_factory=RetryPolicy.from_env)
    queue: Any = None                                   # loop.queue.CommandQueue
    refresh_tools: Callable[[], list[Tool]] | None = None
    context_pipeline: Any = None                        # context.pipeline.ContextPipeline (§8)
    compact_context: Callable[[], dict[str, Any]] | None = None  # what compaction must keep
    context_collapse: ContextCollapse | None = None
    reactive_compact: ReactiveCompact | None = None
    stop_hooks: StopHooks | None = None
    token_budget: int | None = None
    task_budget: int | None = None                      # §9.1: output_config.task_budget's total
    # Nested CLAUDE.md files (§13.2): called once per query; the session's NestedMemory.start
    memory: Callable[[], NestedMemory] | None = None
    thinking: dict[str, Any] | None = None              # extended thinking config for the API
    # PostToolBatch and StopFailure hooks (hooks.lifecycle.LifecycleHooks): (tool_calls, agent) →
    # BatchVerdict; (error, last assistant text, agent) → None
    post_tool_batch: Callable[[list[dict[str, Any]], dict[str, Any] | None], Awaitable[Any]] | None = None
    stop_failure: Callable[[Any, str, dict[str, Any] | None], Awaitable[None]] | None = None


def _interruption(ctx: ToolContext, *, tool_use: bool) -> list[Message]:
    # A submit-interrupt is followed by the user's new message, which says enough; an ended
    # conversation is not an interruption at all.
    if ctx.abort.reason in (AbortReason.INTERRUPT, AbortReason.END_CONVERSATION, AbortReason.BUDGET):
        return []
    return [user_message(INTERRUPT_MESSAGE_FOR_TOOL_USE if tool_use else INTERRUPT_MESSAGE)]


def _abort_reason(ctx: ToolContext, default: TerminalReason) -> TerminalReason:
    return {AbortReason.END_CONVERSATION: TerminalReason.ENDED_BY_MODEL,
            AbortReason.BUDGET: TerminalReason.BUDGET_EXCEEDED}.get(ctx.abort.reason, default)  # type: ignore[arg-type]


def _agent(ctx: ToolContext) -> dict[str, Any] | None:
    return {"agent_id": ctx.agent_id, "agent_type": ctx.agent_type} if ctx.agent_id else None


def _tool_calls(blocks: list[dict[str, Any]], results: list[Message]) -> list[dict[str, Any]]:
    """PostToolBatch's tool_calls: each call with the tool_result content the model sees."""
    out = []
    for block, result in zip(blocks, results):
        answer = result.content[0] if isinstance(result.content, list) and result.content else {}
        out.append({"tool_name": block.get("name", ""), "tool_input": dict(block.get("input") or {}),
                    "tool_use_id": block["id"], "tool_response": answer.get("content")})
    return out


async def _stop_failure(p: QueryParams, error: Any, messages: list[Message], ctx: ToolContext) -> None:
    """StopFailure hooks fire instead of Stop when an API error ended the turn (fire and forget)."""
    if p.stop_failure is not None:
        from codeloop.hooks.stop import last_assistant_text

        await p.stop_failure(error, last_assistant_text(messages), _agent(ctx))


def _unanswered_text(ctx: ToolContext) -> str:
    if ctx.abort.reason is AbortReason.END_CONVERSATION:
        return ENDED_BY_MODEL_TOOL_RESULT
    return INTERRUPT_MESSAGE_FOR_TOOL_USE


async def query(p: QueryParams) -> AsyncIterator[Event]:
    state = State(messages=list(p.messages), tool_context=p.tool_context,
                  max_output_tokens_override=p.max_output_tokens)
    cont = Continuation(p)
    model, fallback_chain, tools = p.model, list(p.fallback_models), list(p.tools)
    task_budget_remaining: int | None = None   # §9.1: set from the first compaction on
    try:
        while True:
            messages_for_query = state.messages
            ctx: ToolContext = state.tool_context
            turn_count = state.turn_count
            # -- the five-stage pre-query pipeline (§8) -------------------------------------------------
            if p.context_pipeline is not None:
                piped = await p.context_pipeline.run(messages_for_query, model=model,
                                                     **(p.compact_context() if p.compact_context else {}))
                for record in piped.replacements:
                    yield TranscriptEntry(record)
                for notice in piped.notices:   # autocompact turned off, or back on
                    yield notice
                if piped.compacted is not None:
                    task_budget_remaining = remaining_after_compaction(p.task_budget, task_budget_remaining,
                                                                       messages_for_query)
                messages_for_query = piped.messages
                if piped.compacted is not None:
                    yield CompactBoundary(piped.compacted.trigger, piped.compacted.pre_tokens, piped.compacted.messages)
                    cont.compacted(messages_for_query, ctx)
            elif p.context_collapse is not None:
                messages_for_query = p.context_collapse.apply_collapses_if_needed(messages_for_query)

            # -- the model call: streaming, tools started mid-stream, retries, fallback (§9, §10) ------
            turn = ModelTurn(model=model, fallback_chain=fallback_chain, messages=messages_for_query,
                             task_budget=task_budget_param(p.task_budget, task_budget_remaining))
            async for ev in call_model(p, turn, tools=tools, ctx=ctx, system_prompt=p.system_prompt,
                                       max_tokens_override=state.max_output_tokens_override):
                yield ev
            model, fallback_chain, messages_for_query = turn.model, turn.fallback_chain, turn.messages
            cont.record_output_tokens(turn.usage.output_tokens)
            executor = turn.executor
            assert executor is not None

            # -- abort during streaming (§12.1) ----------------------------------------------------------
            if ctx.abort.aborted:
                async for upd in executor.get_remaining_results():
                    turn.results[upd.tool_use_id] = upd.message
                    yield UserEvent(upd.message)
                for m in missing_tool_results(turn.assistant_messages, _unanswered_text(ctx), set(turn.results)):
                    yield UserEvent(m)
                for m in _interruption(ctx, tool_use=False):
                    yield UserEvent(m)
                yield Terminal(_abort_reason(ctx, TerminalReason.ABORTED_STREAMING), turn_count)
                return

            # -- a fatal API error (§10.2): answer orphaned tool calls, show the real error --------------
            if turn.error is not None and turn.withheld is None:
                # the failed response leaves nothing behind: its partial blocks and any results
                # of tools it started are retracted, and the real error is shown instead
                executor.discard()
                for m in [*turn.assistant_messages, *turn.yielded_results]:
                    yield Tombstone(m)
                yield AssistantEvent(api_error_message(str(turn.error)))
                await _stop_failure(p, turn.error, messages_for_query, ctx)
                yield Terminal(TerminalReason.API_ERROR, turn_count, str(turn.error))
                return

            max_tokens_hit = turn.stop_reason == "max_tokens"
            if max_tokens_hit and turn.tool_use_blocks:
                # none of the cut response's tool calls count: a read-only one that already ran is
                # retracted, and every call is answered "not executed" exactly once
                executor.discard()
                for m in turn.yielded_results:
                    yield Tombstone(m)
                turn.results = {}
                for m in missing_tool_results(turn.assistant_messages, MAX_TOKENS_NOT_RUN):
                    turn.results[m.content[0]["tool_use_id"]] = m
                    yield UserEvent(m)
            needs_follow_up = bool(turn.tool_use_blocks) and not max_tokens_hit and turn.withheld is None
            answered = [turn.results[b["id"]] for b in turn.tool_use_blocks if b["id"] in turn.results]

            if not needs_follow_up:
                # -- 1. collapse_drain_retry (§11.1) ----------------------------------------------------
                if (turn.withheld == "prompt_too_long" and p.context_collapse is not None and can_recover(turn.error)
                        and state.transition is not Transition.COLLAPSE_DRAIN_RETRY):
                    drained = p.context_collapse.recover_from_overflow(messages_for_query)
                    if drained.committed > 0:
                        state = replace(state, messages=drained.messages, transition=Transition.COLLAPSE_DRAIN_RETRY)
                        continue
                # -- 2. reactive_compact_retry (§11.2) ----------------------------------------------------
                if turn.withheld is not None:
                    if (p.reactive_compact is not None and not state.has_attempted_reactive_compact
                            and can_recover(turn.error)):
                        compacted = await p.reactive_compact.try_reactive_compact(
                            has_attempted=state.has_attempted_reactive_compact, messages=messages_for_query,
                            model=model)
                        if compacted is not None:
                            task_budget_remaining = remaining_after_compaction(p.task_budget, task_budget_remaining,
                                                                               messages_for_query)
                            yield CompactBoundary(compacted.trigger, compacted.pre_tokens, compacted.messages)
                            cont.compacted(compacted.messages, ctx)
                            state = replace(state, messages=compacted.messages, has_attempted_reactive_compact=True,
                                            transition=Transition.REACTIVE_COMPACT_RETRY)
                            continue
                    yield AssistantEvent(api_error_message(str(turn.error)))
                    await _stop_failure(p, turn.error, messages_for_query, ctx)
                    reason = TerminalReason.IMAGE_ERROR if turn.withheld == "media" else TerminalReason.PROMPT_TOO_LONG
                    yield Terminal(reason, turn_count, str(turn.error))
                    return
                if max_tokens_hit:
                    # -- 3. max_output_tokens_escalate (§11.3): same request, bigger cap, once -----------
                    if state.max_output_tokens_override is None and env_max_output_tokens() is None \
                            and can_escalate(model):   # a model already asked its most goes to recovery
                        for m in [*turn.assistant_messages, *answered]:
                            yield Tombstone(m)
                        state = replace(state, max_output_tokens_override=ESCALATED_MAX_OUTPUT_TOKENS,
                                        transition=Transition.MAX_OUTPUT_TOKENS_ESCALATE)
                        continue
                    # -- 4. max_output_tokens_recovery (§11.4): ask the model to resume, at most 3 times --
                    if state.max_output_tokens_recovery_count < MAX_OUTPUT_TOKENS_RECOVERY_LIMIT:
                        nudge = recovery_message()
                        yield UserEvent(nudge)
                        state = replace(state, messages=[*messages_for_query, *turn.assistant_messages, *answered,
                                                         nudge],
                                        max_output_tokens_recovery_count=state.max_output_tokens_recovery_count + 1,
                                        transition=Transition.MAX_OUTPUT_TOKENS_RECOVERY)
                        continue
                    yield AssistantEvent(max_output_tokens_error(
                        max_output_tokens(model, state.max_output_tokens_override)))
                # -- 5. stop_hook_blocking (§11.5) --------------------------------------------------------
                verdict = await run_stop_hooks(p.stop_hooks, [*messages_for_query, *turn.assistant_messages],
                                               active=bool(state.stop_hook_active), blocks=state.stop_hook_blocks,
                                               turn_count=turn_count)
                for ev in verdict.events:
                    yield ev
                if verdict.terminal is not None:
                    yield verdict.terminal
                    return
                if verdict.blocking is not None:
                    state = replace(state, messages=[*messages_for_query, *turn.assistant_messages, *verdict.blocking],
                                    stop_hook_active=True, stop_hook_blocks=state.stop_hook_blocks + 1,
                                    transition=Transition.STOP_HOOK_BLOCKING)
                    continue
                # -- 6. token_budget_continuation (§11.6) -------------------------------------------------
                budget_nudge = cont.budget_nudge(ctx)
                if budget_nudge is not None:
                    yield UserEvent(budget_nudge)
                    state = replace(state, messages=[*messages_for_query, *turn.assistant_messages, budget_nudge],
                                    transition=Transition.TOKEN_BUDGET_CONTINUATION)
                    continue
                if cont.budget_report is not None:
                    yield cont.budget_report
                yield Terminal(TerminalReason.COMPLETED, turn_count)
                return

            # -- tool execution: collect what is still running (§13.1) ----------------------------------
            hook_stop: str | None = turn.hook_stop
            async for upd in executor.get_remaining_results():
                turn.results[upd.tool_use_id] = upd.message
                if upd.denied:
                    yield PermissionDenied(upd.tool_name, upd.tool_use_id, dict(upd.tool_input))
                if upd.prevent_continuation:
                    hook_stop = upd.stop_reason or f"a PostToolUse hook stopped the turn after {upd.tool_name}"
                yield UserEvent(upd.message)
            for m in missing_tool_results(turn.assistant_messages, _unanswered_text(ctx), set(turn.results)):
                turn.results[m.content[0]["tool_use_id"]] = m
                yield UserEvent(m)
            tool_results = [turn.results[b["id"]] for b in turn.tool_use_blocks]  # back in tool_use order

            # -- abort during tools (§12.2) ----------------------------------------------------------------
            if ctx.abort.aborted:
                for m in _interruption(ctx, tool_use=True):
                    yield UserEvent(m)
                if p.max_turns and turn_count + 1 > p.max_turns:
                    yield AttachmentEvent({"type": "max_turns_reached", "maxTurns": p.max_turns,
                                           "turnCount": turn_count + 1})
                yield Terminal(_abort_reason(ctx, TerminalReason.ABORTED_TOOLS), turn_count)
                return

            # -- a hook asked to stop after the tools ran (§13.1 hook_stopped_continuation) -------------
            if hook_stop is not None:
                yield Terminal(TerminalReason.HOOK_STOPPED, turn_count, hook_stop)
                return
            # the skill discovery prefetch runs from here until §13.2 step 4 collects it
            cont.start_skill_prefetch(ctx, tools, turn.tool_use_blocks, tool_results)
            # -- PostToolBatch hooks: once for the whole batch, before the next request ------------------
            extra: list[Message] = []
            if p.post_tool_batch is not None:
                batch = await p.post_tool_batch(_tool_calls(turn.tool_use_blocks, tool_results), _agent(ctx))
                if batch.stop_reason is not None:
                    yield Terminal(TerminalReason.HOOK_STOPPED, turn_count, batch.stop_reason)
                    return
                if batch.context:
                    note = user_message("<system-reminder>\nPostToolBatch hook additional context:\n"
                                        + "\n".join(batch.context) + "\n</system-reminder>", is_meta=True)
                    extra.append(note)
                    yield UserEvent(note)
            # -- a tool's result was the turn's answer (StructuredOutput: Claude Code's endsTurn) ---------
            # The turn ends as any other does: Stop hooks first (§11.5); a block sends the model on.
            transition = Transition.NEXT_TURN
            if ctx.ends_turn:
                ctx.ends_turn = False
                verdict = await run_stop_hooks(p.stop_hooks, [*messages_for_query, *turn.assistant_messages,
                                                              *tool_results],
                                               active=bool(state.stop_hook_active), blocks=state.stop_hook_blocks,
                                               turn_count=turn_count)
                for ev in verdict.events:
                    yield ev
                if verdict.blocking is None:
                    yield verdict.terminal or Terminal(TerminalReason.COMPLETED, turn_count)
                    return
                extra, transition = [*extra, *verdict.blocking], Transition.STOP_HOOK_BLOCKING

            # -- continuation pipeline (§13.2): queued commands, attachments, memory, tool refresh ---------
            async for ev in cont.attachments(ctx):
                if isinstance(ev, UserEvent):
                    extra.append(ev.message)
                yield ev
            tools = cont.refreshed_tools(tools)

            # -- max turns (§13.3) -------------------------------------------------------------------------
            next_turn_count = turn_count + 1
            if p.max_turns and next_turn_count > p.max_turns:
                yield AttachmentEvent({"type": "max_turns_reached", "maxTurns": p.max_turns,
                                       "turnCount": next_turn_count})
                yield Terminal(TerminalReason.MAX_TURNS, next_turn_count)
                return

            blocked = transition is Transition.STOP_HOOK_BLOCKING
            state = replace(state, messages=[*messages_for_query, *turn.assistant_messages, *tool_results, *extra],
                            turn_count=next_turn_count, max_output_tokens_recovery_count=0,
                            has_attempted_reactive_compact=False, max_output_tokens_override=p.max_output_tokens,
                            # blocks in a row stay counted when a hook blocks an answer given by a tool
                            stop_hook_active=True if blocked else state.stop_hook_active,
                            stop_hook_blocks=state.stop_hook_blocks + 1 if blocked else 0,
                            transition=transition)
    finally:
        cont.close()
