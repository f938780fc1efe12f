"""One submitted prompt's query parameters, and the prompts a session refuses outright.

`turn_params` gathers what the loop needs for a query from the Conversation — the same for the
main thread and a subagent: the tool pool as it is now (MCP servers come and go), the system
prompt with the deferred-tools hint and session notes, the context pipeline and its compactor
(autocompact, collapse-drain and reactive compaction), fallback models, the queue, nested memory
and the Stop (or SubagentStop) hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.events import Event, SystemEvent, Terminal
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message

if TYPE_CHECKING:
    from codeloop.loop.query import QueryParams
    from codeloop.session.conversation import Conversation
    from codeloop.tools.base import Tool


def refusal(conv: Conversation) -> list[Event] | None:
    """The events that answer a prompt the session cannot take (ended by the model, budget spent)."""
    if conv.ended_by_model:
        return [SystemEvent("session_ended", "The model ended this conversation. Start a new session (or /clear).",
                            "error"),
                Terminal(TerminalReason.ENDED_BY_MODEL, 0, "the session was ended by the model")]
    if conv.budget_exhausted:
        return [SystemEvent("budget_exceeded", f"The session's budget of ${conv.config.max_budget_usd} is spent.",
                            "error"),
                Terminal(TerminalReason.BUDGET_EXCEEDED, 0, "max budget reached")]
    return None


def turn_params(conv: Conversation, msg: Message) -> QueryParams:
    from codeloop.loop.budget import parse_token_budget
    from codeloop.loop.query import QueryParams
    from codeloop.tools.deferred import hint_for, request_tools
    from codeloop.tools.session_notes import session_notes

    ctx = conv.tool_context
    ctx.tool_pool = pool = conv.tool_pool()
    hint = "\n\n".join(filter(None, [hint_for(pool, ctx), *session_notes(ctx)]))  # + skills, plan mode

    def refresh() -> list[Tool]:
        # a server that connected (or died) since the last turn changes what the model is offered
        ctx.tool_pool = fresh = conv.tool_pool()
        return request_tools(fresh, ctx)

    side = conv.sidechain
    cfg = conv.config
    return QueryParams(messages=list(conv.messages), system_prompt=[*cfg.system_prompt, *([hint] if hint else [])],
                       user_context=cfg.user_context, tools=request_tools(pool, ctx), refresh_tools=refresh,
                       provider=conv.provider, model=cfg.model, tool_context=ctx, can_use_tool=conv.can_use_tool,
                       max_turns=cfg.max_turns, max_output_tokens=cfg.max_output_tokens,
                       fallback_models=list(cfg.fallback_models), queue=conv.queue,
                       token_budget=parse_token_budget(msg.text) or cfg.token_budget,
                       reactive_compact=conv.compactor, context_pipeline=conv.pipeline,
                       context_collapse=conv.collapse, compact_context=conv.compact_context,
                       stop_hooks=side.stop_hooks if side is not None else conv.hooks.stop_hooks(),
                       thinking=cfg.thinking, memory=conv.nested_memory.start)
