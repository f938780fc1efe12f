"""Subagents: the runtime behind the Agent tool's `spawn_subagent` capability.

A subagent is a Conversation of its own, built from its parent's (`subagent_conversation`), so it
runs on the same loop as the main thread: context pipeline, autocompact, collapse-drain and
reactive compaction, model fallback, Stop hooks (as SubagentStop), the sandbox, permission rules
and the MCP servers' tools. Its definition is applied on top: tools (default: every parent tool)
minus Agent itself, so there is no recursion; model (`inherit` → the parent's model now); max
turns (default 50); the definition body as system prompt. It starts from a fresh history holding
only the prompt, with `agent_id` set on its tool context, which turns EndConversation into a
no-op — a subagent can never end the main session or itself. It shares the parent's abort, so
interrupting the parent stops it (a background one, started by the Agent tool's
`run_in_background`, brings its own id and abort).

Its messages go to the parent's `emit` with `parent_tool_use_id` set and are written to
`<session_dir>/subagents/agent-<agent_id>.jsonl` (a sidechain); they never enter the parent's
history. Its usage joins the parent's totals. The tool (tools layer) never imports the loop, the
prompt builder or the transcript — this module does.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from codeloop.messages import new_uuid
from codeloop.tools.base import Tool, ToolContext, ToolError
from codeloop.tools.builtin.task import LEGACY_NAME, NAME, SubagentOutcome

if TYPE_CHECKING:
    from codeloop.session.conversation import Conversation

log = logging.getLogger(__name__)


def subagent_tools(pool: list[Tool], allowed: tuple[str, ...] | None) -> list[Tool]:
    """The subagent's pool: the definition's tools (None = all), never Agent itself."""
    keep = None if allowed is None else {NAME if a == LEGACY_NAME else a for a in allowed}
    return [t for t in pool if t.name != NAME and (keep is None or t.name in keep)]


def subagent_conversation(parent: Conversation, definition: Any, parent_ctx: ToolContext, *, agent_id: str,
                          parent_tool_use_id: str | None, abort: Any, stop_hooks: Any = None) -> Conversation:
    """A subagent's Conversation: the parent's session with the definition applied on top."""
    from dataclasses import replace

    from codeloop.context.prompt import environment_block
    from codeloop.session.conversation import Conversation
    from codeloop.session.parts import SessionParts, Sidechain
    from codeloop.tools.agents import DEFAULT_MAX_TURNS, DEFAULT_SUBAGENT_PROMPT, resolve_agent_model

    cfg = parent.config
    denied = tuple(definition.disallowed_tools)
    tools = [t for t in subagent_tools(list(cfg.tools), definition.tools) if t.name not in denied]
    system_prompt = [definition.system_prompt or DEFAULT_SUBAGENT_PROMPT, environment_block(cfg.cwd)]
    config = replace(cfg, model=resolve_agent_model(definition, parent.model), tools=tools,
                     policy=subagent_policy(cfg.policy, definition, trusted=parent.trusted),
                     system_prompt=system_prompt, user_context=dict(cfg.user_context), load_context=None,
                     max_turns=definition.max_turns or DEFAULT_MAX_TURNS, token_budget=None, task_budget=None,
                     max_budget_usd=None,
                     thinking=None, resumed=False, feature_flags=dict(parent_ctx.feature_flags))
    side = Sidechain(agent_id=agent_id, agent_type=definition.name, parent=parent_ctx,
                     parent_tool_use_id=parent_tool_use_id, abort=abort or parent_ctx.abort, hooks=parent.hooks,
                     record_usage=parent._on_side_event, stop_hooks=stop_hooks, file_history=parent.file_history,
                     allowed_tools=definition.tools, disallowed_tools=denied)
    parts = SessionParts(settings=parent.settings, trusted=parent.trusted, mcp=parent.mcp, owns_mcp=False,
                         output_style=parent.output_style, api_key_source=parent.api_key_source,
                         listeners=[_forward(parent_ctx)], options=parent.parts.options, sidechain=side,
                         project_files=parent.parts.project_files)
    return Conversation(config, parent.provider, session_id=parent.session_id, ask_user=parent.ask_user, parts=parts)


# How much a mode lets through without asking: a definition from an untrusted project may not widen it.
_REACH = {"plan": 0, "dontAsk": 0, "default": 1, "acceptEdits": 2, "bypassPermissions": 3}


def subagent_policy(policy: Any, definition: Any, *, trusted: bool) -> Any:
    """The parent's policy (rules, directories, sandbox), in the definition's `permissionMode`.
    A parent in bypassPermissions keeps it (Claude Code: it cannot be overridden); a mode that
    lets more through than the parent's is taken only from the user's own definitions (user
    folder, --agents, the SDK) or a trusted project's — a hostile repository's agent file cannot
    turn prompts off."""
    from codeloop.permissions.policy import PermissionMode
    from codeloop.tools.agents import AgentSource

    wanted = definition.permission_mode
    if not wanted or wanted == policy.mode.value or policy.mode is PermissionMode.BYPASS:
        return policy
    widens = _REACH[wanted] > _REACH.get(policy.mode.value, 1)
    if widens and definition.source is AgentSource.PROJECT and not trusted:
        log.warning("agent %s: permissionMode %s ignored (an untrusted project's definition)", definition.name, wanted)
        return policy
    if wanted == PermissionMode.BYPASS.value and policy.bypass_disabled:
        return policy
    return dataclasses.replace(policy, mode=PermissionMode(wanted))


def _forward(parent_ctx: ToolContext) -> Any:
    """Side events from inside the subagent (a nested tool's) go on to the parent's front end."""
    def emit(ev: Any) -> None:
        if parent_ctx.emit is None:
            return
        try:
            parent_ctx.emit(ev)
        except Exception:  # a front end's failure must not kill the subagent
            log.exception("emitting a subagent event failed")
    return emit


def _write_sidecar(transcript: Any, meta: dict[str, Any]) -> None:
    """`agent-<id>.meta.json` beside the subagent's transcript, as Claude Code writes it: the Agent
    SDK's `get_subagent_messages` reads which tool call (and which agent) spawned it from there."""
    try:
        transcript.parent.mkdir(parents=True, exist_ok=True)
        sidecar = transcript.with_name(transcript.name.removesuffix(".jsonl") + ".meta.json")
        sidecar.write_text(json.dumps({k: v for k, v in meta.items() if v is not None}), encoding="utf-8")
    except OSError:   # the transcript writer reports an unwritable folder; the sidecar is a hint
        log.warning("could not write the subagent's .meta.json beside %s", transcript)


async def run_subagent(parent: Conversation, definition: Any, prompt: str, parent_ctx: ToolContext, *,
                       parent_tool_use_id: str | None, description: str = "", agent_id: str | None = None,
                       abort: Any = None) -> SubagentOutcome:
    from codeloop.events import ApiCallEvent, AssistantEvent, Terminal, Tombstone, UserEvent
    from codeloop.messages import user_message
    from codeloop.session.hooks_bridge import SubagentLifecycle
    from codeloop.session.wiring import subagent_transcript_path

    agent_id = agent_id or new_uuid()
    lifecycle = SubagentLifecycle(parent.hooks)
    side_path = (subagent_transcript_path(parent_ctx.session_dir, agent_id)
                 if parent_ctx.session_dir is not None and parent.config.persist else None)
    if side_path is not None:
        _write_sidecar(side_path, {"agentType": definition.name, "description": description,
                                   "toolUseId": parent_tool_use_id, "parentAgentId": parent_ctx.agent_id})
    started = time.monotonic()
    # task_started, SubagentStart hooks (their context joins the prompt)
    context = await lifecycle.start(parent_ctx.emit, agent_id=agent_id, agent_type=definition.name,
                                    description=description, prompt=prompt, tool_use_id=parent_tool_use_id)
    stop_hooks = lifecycle.stop_hooks(agent_id=agent_id, agent_type=definition.name,
                                      transcript_path=str(side_path or ""))
    child = subagent_conversation(parent, definition, parent_ctx, agent_id=agent_id,
                                  parent_tool_use_id=parent_tool_use_id, abort=abort, stop_hooks=stop_hooks)
    emit = _forward(parent_ctx)
    from codeloop.session.background import open_inbox
    close_inbox = open_inbox(parent_ctx, agent_id, child.queue)   # SendMessage reaches it while it runs
    first = user_message(prompt)
    first.parent_tool_use_id = parent_tool_use_id
    text_by_response: tuple[Any, str] = (None, "")
    last_usage = None
    terminal: Any = None
    tool_uses = 0
    try:
        async for ev in child.submit(first, context=context):
            if isinstance(ev, (AssistantEvent, UserEvent)):
                msg = ev.message
                msg.parent_tool_use_id = parent_tool_use_id
                if msg.role == "assistant" and not msg.is_api_error:
                    key, text = text_by_response
                    text_by_response = (msg.id, (text if key == msg.id and msg.id is not None else "") + msg.text)
                emit(ev)
            elif isinstance(ev, Tombstone):
                ev.message.parent_tool_use_id = parent_tool_use_id
                emit(ev)
            elif isinstance(ev, ApiCallEvent):
                last_usage = ev.usage   # the child's record of it already reached the parent's totals
            elif isinstance(ev, Terminal):
                terminal = ev
            # Stream deltas, attachments, compaction notices and the subagent's Terminal stay
            # inside: front ends read a Terminal as the end of *their* stream.
            if isinstance(ev, AssistantEvent):  # task_progress after each tool call
                names = [b.get("name", "") for b in ev.message.content
                         if isinstance(b, dict) and b.get("type") == "tool_use"]
                tool_uses += len(names)
                if names:
                    lifecycle.progress(parent_ctx.emit, agent_id=agent_id, tool_use_id=parent_tool_use_id,
                                       description=description, last_tool_name=names[-1], tool_uses=tool_uses,
                                       total_tokens=_tokens(last_usage),
                                       duration_ms=int((time.monotonic() - started) * 1000))
    finally:
        close_inbox()
        await child.aclose()
    total = _tokens(last_usage)
    reason = terminal.reason.value if terminal is not None else "aborted"
    text = text_by_response[1].strip() if terminal is not None and reason == "completed" else ""
    status = "completed" if text else "stopped" if reason.startswith("aborted") else "failed"
    lifecycle.end(parent_ctx.emit, agent_id=agent_id, tool_use_id=parent_tool_use_id, status=status,
                  summary=text[:2000] or f"Subagent ended: {reason}", output_file=str(side_path or ""),
                  total_tokens=total, tool_uses=tool_uses, duration_ms=int((time.monotonic() - started) * 1000))
    return SubagentOutcome(agent_id, text, reason, terminal.turn_count if terminal is not None else 0, total,
                           terminal.error if terminal is not None else None)


def _tokens(usage: Any) -> int:
    return (usage.total_input + usage.output_tokens) if usage is not None else 0


async def spawn_for(conv: Conversation, subagent_type: str, prompt: str, parent: ToolContext, *,
                    parent_tool_use_id: str | None, model: str | None = None, description: str = "",
                    agent_id: str | None = None, abort: Any = None) -> SubagentOutcome:
    """A Conversation's subagent capability (`ToolContext.spawn_subagent`): run the named agent
    type with the session as it is now (/model, a CLAUDE.md edit); ToolError for an unknown one."""
    from codeloop.tools.agents import BUILTIN_AGENTS

    definitions = dict(conv.config.agent_definitions) or {d.name: d for d in BUILTIN_AGENTS}
    definition = definitions.get(subagent_type)
    if definition is None:
        raise ToolError(f"Agent type '{subagent_type}' not found. Available agents: {', '.join(definitions)}")
    if model and model != "inherit":  # the call's own model overrides the agent's
        definition = dataclasses.replace(definition, model=model)
    return await run_subagent(conv, definition, prompt, parent, parent_tool_use_id=parent_tool_use_id,
                              description=description, agent_id=agent_id, abort=abort)
