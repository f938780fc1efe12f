"""Subagents at the session level: the runtime the Agent tool's `spawn_subagent` capability runs.

A subagent is a nested query with its own id, tools, model, prompt and transcript. What it gets:
the definition's tools (default: every parent tool) minus Agent itself, so there is no
recursion; the definition's model (`inherit` → the parent's); its max turns (default 50); the
definition body as system prompt; a fresh history holding only the prompt; and a ToolContext
with `agent_id` set, which turns EndConversation into a no-op — a subagent can never end the
main session or itself. It shares the parent's abort, so interrupting the parent stops it (a background one, started by
the Agent tool's `run_in_background`, brings its own id and abort). Its
messages are passed to `ctx.emit` with `parent_tool_use_id` set and written to
`<session_dir>/subagents/agent-<agent_id>.jsonl`; they never enter the parent's history.

The Conversation builds a `SubagentRuntime` on each Agent call and hands the tool
`runtime.spawn` as `ToolContext.spawn_subagent`: the tool (tools layer) never imports the
loop, the prompt builder or the transcript — this module does.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from codeloop.messages import new_uuid
from codeloop.session.transcript import TranscriptError, TranscriptWriter, message_to_entry
from codeloop.tools.base import Tool, ToolContext, ToolError
from codeloop.tools.builtin.task import LEGACY_NAME, NAME, SubagentOutcome

log = logging.getLogger(__name__)


@dataclass
class SubagentRuntime:
    """What subagents inherit from their parent: provider, model, tools and permissions."""
    provider: Any                                   # codeloop.providers.base.Provider
    model: str                                      # the parent's model
    tools: list[Tool]                               # the parent's whole (ungated) pool
    can_use_tool: Callable[..., Any]                # codeloop.loop.tool_runner.CanUseTool
    user_context: dict[str, str] = field(default_factory=dict)
    cwd: Path = field(default_factory=Path.cwd)
    session_dir: Path | None = None                 # None: no subagent transcripts
    definitions: dict[str, Any] = field(default_factory=dict)  # name → tools.agents.AgentDefinition
    stop_hooks: Any = None                          # SubagentStop hooks (loop.recovery.StopHooks)
    lifecycle: Any = None                           # session.hooks_bridge.SubagentLifecycle (hooks, task events)

    async def spawn(self, subagent_type: str, prompt: str, parent: ToolContext, *,
                    parent_tool_use_id: str | None, model: str | None = None,
                    description: str = "", agent_id: str | None = None, abort: Any = None) -> SubagentOutcome:
        """`ToolContext.spawn_subagent`: run the named agent type; ToolError for an unknown one.

        A background run (the Agent tool's `run_in_background`) brings its own id and abort."""
        from codeloop.tools.agents import BUILTIN_AGENTS

        definitions = dict(self.definitions) or {d.name: d for d in BUILTIN_AGENTS}
        definition = definitions.get(subagent_type)
        if definition is None:
            raise ToolError(f"Agent type '{subagent_type}' not found. Available agents: "
                            f"{', '.join(definitions)}")
        if model and model != "inherit":  # the call's own model overrides the agent's
            definition = dataclasses.replace(definition, model=model)
        return await run_subagent(self, definition, prompt, parent, parent_tool_use_id=parent_tool_use_id,
                                  description=description, agent_id=agent_id, abort=abort)


def subagent_tools(pool: list[Tool], allowed: tuple[str, ...] | None) -> list[Tool]:
    """The subagent's pool: the definition's tools (None = all), never Agent itself."""
    keep = None if allowed is None else {NAME if a == LEGACY_NAME else a for a in allowed}
    return [t for t in pool if t.name != NAME and (keep is None or t.name in keep)]


def transcript_path(session_dir: Path, agent_id: str) -> Path:
    return session_dir / "subagents" / f"agent-{agent_id}.jsonl"


class _SidechainLog:
    """The subagent's transcript; a failed write disables it instead of failing the subagent."""

    def __init__(self, path: Path | None, session_id: str | None, cwd: Path, agent_id: str) -> None:
        self.agent_id = agent_id
        self.writer = TranscriptWriter(path, session_id or agent_id, cwd) if path is not None else None

    def _guard(self, fn: Callable[[], Any]) -> None:
        if self.writer is None:
            return
        try:
            fn()
        except (TranscriptError, OSError) as exc:
            log.warning("subagent %s transcript disabled: %s", self.agent_id, exc)
            self.writer = None

    def message(self, msg: Any) -> None:
        def write() -> None:
            assert self.writer is not None
            entry = message_to_entry(msg, session_id=self.writer.session_id, cwd=self.writer.cwd,
                                     parent_uuid=self.writer.last_uuid)
            entry.update(isSidechain=True, agentId=self.agent_id)
            self.writer.append_entry(entry)
        self._guard(write)

    def entry(self, entry: dict[str, Any]) -> None:
        self._guard(lambda: self.writer.append_entry({**entry, "isSidechain": True, "agentId": self.agent_id}))

    def close(self) -> None:
        self._guard(lambda: (self.writer.sync(), self.writer.close()))


async def run_subagent(runtime: SubagentRuntime, definition: Any, prompt: str, parent: ToolContext, *,
                       parent_tool_use_id: str | None, description: str = "", agent_id: str | None = None,
                       abort: Any = None) -> SubagentOutcome:
    from codeloop.context.prompt import environment_block
    from codeloop.events import ApiCallEvent, AssistantEvent, Terminal, Tombstone, UserEvent
    from codeloop.loop.query import QueryParams, query
    from codeloop.messages import user_message
    from codeloop.tools.agents import DEFAULT_MAX_TURNS, DEFAULT_SUBAGENT_PROMPT, resolve_agent_model
    from codeloop.tools.deferred import LOADED_KEY, POOL_KEY, hint_for, request_tools

    agent_id = agent_id or new_uuid()
    model = resolve_agent_model(definition, runtime.model)
    denied = set(getattr(definition, "disallowed_tools", ()))
    pool = [t for t in subagent_tools(list(runtime.tools), definition.tools) if t.name not in denied]
    history: list[Any] = []
    ctx = ToolContext(
        # a parent abort stops a foreground subagent; a background one has its own
        cwd=parent.cwd, project_dir=parent.project_dir, abort=abort or parent.abort,
        session_dir=(runtime.session_dir / "subagents" / f"agent-{agent_id}") if runtime.session_dir else None,
        agent_id=agent_id, non_interactive=parent.non_interactive, session_id=parent.session_id, model=model,
        entrypoint=parent.entrypoint, messages=lambda: list(history),
        # the parent's permission guards and hooks hold inside the subagent too
        path_guard=parent.path_guard, read_denied=parent.read_denied, post_tool_use=parent.post_tool_use,
        denied_inodes=parent.denied_inodes,
        extra={POOL_KEY: pool, LOADED_KEY: set(), "feature_flags": parent.extra.get("feature_flags") or {},
               "agent_type": definition.name, "sandbox": parent.extra.get("sandbox"),
               "side_provider": parent.extra.get("side_provider"),  # WebFetch/WebSearch side calls
               "background_tasks": parent.extra.get("background_tasks")})  # killed with the session
    system_prompt = [definition.system_prompt or DEFAULT_SUBAGENT_PROMPT, environment_block(runtime.cwd)]
    hint = hint_for(pool, ctx)
    if hint:
        system_prompt.append(hint)
    sidechain = _SidechainLog(transcript_path(runtime.session_dir, agent_id) if runtime.session_dir else None,
                              parent.session_id, runtime.cwd, agent_id)
    first = user_message(prompt)
    lifecycle, stop_hooks, started = runtime.lifecycle, runtime.stop_hooks, time.monotonic()
    side_path = transcript_path(runtime.session_dir, agent_id) if runtime.session_dir else None
    context: list[Any] = []
    if lifecycle is not None:  # task_started, SubagentStart hooks (their context joins the prompt)
        context = await lifecycle.start(parent.emit, agent_id=agent_id, agent_type=definition.name,
                                        description=description, prompt=prompt, tool_use_id=parent_tool_use_id)
        stop_hooks = lifecycle.stop_hooks(agent_id=agent_id, agent_type=definition.name,
                                          transcript_path=str(side_path or ""))
    params = QueryParams(messages=[first, *context], system_prompt=system_prompt,
                         user_context=dict(runtime.user_context),
                         tools=request_tools(pool, ctx), provider=runtime.provider, model=model, tool_context=ctx,
                         can_use_tool=runtime.can_use_tool, max_turns=definition.max_turns or DEFAULT_MAX_TURNS,
                         refresh_tools=lambda: request_tools(pool, ctx), stop_hooks=stop_hooks)

    def emit(ev: Any) -> None:
        if parent.emit is None:
            return
        try:
            parent.emit(ev)
        except Exception:  # a front end's failure must not kill the subagent
            log.exception("emitting a subagent event failed")

    history.append(first)
    first.parent_tool_use_id = parent_tool_use_id
    sidechain.message(first)
    emit(UserEvent(first))
    text_by_response: tuple[Any, str] = (None, "")
    last_usage = None
    terminal: Any = None
    tool_uses = 0
    try:
        async for ev in query(params):
            if isinstance(ev, (AssistantEvent, UserEvent)):
                msg = ev.message
                msg.parent_tool_use_id = parent_tool_use_id
                history.append(msg)
                sidechain.message(msg)
                if msg.role == "assistant" and not msg.is_api_error:
                    key, text = text_by_response
                    text_by_response = (msg.id, (text if key == msg.id and msg.id is not None else "") + msg.text)
                emit(ev)
            elif isinstance(ev, Tombstone):
                ev.message.parent_tool_use_id = parent_tool_use_id
                history[:] = [m for m in history if m.uuid != ev.message.uuid]
                sidechain.entry({"type": "tombstone", "targetUuid": ev.message.uuid})
                emit(ev)
            elif isinstance(ev, ApiCallEvent):
                last_usage = ev.usage
                emit(ev)  # so the session's cost totals include the subagent
            elif isinstance(ev, Terminal):
                terminal = ev
            # Stream deltas, attachments and the subagent's Terminal stay inside: front ends read
            # a Terminal as the end of *their* stream.
            if isinstance(ev, AssistantEvent) and lifecycle is not None:  # task_progress after each tool call
                names = [b.get("name", "") for b in ev.message.content
                         if isinstance(b, dict) and b.get("type") == "tool_use"]
                tool_uses += len(names)
                if names:
                    lifecycle.progress(parent.emit, agent_id=agent_id, tool_use_id=parent_tool_use_id,
                                       description=description, last_tool_name=names[-1], tool_uses=tool_uses,
                                       total_tokens=(last_usage.total_input + last_usage.output_tokens) if last_usage
                                       else 0, duration_ms=int((time.monotonic() - started) * 1000))
    finally:
        sidechain.close()
    total = (last_usage.total_input + last_usage.output_tokens) if last_usage is not None else 0
    reason = terminal.reason.value if terminal is not None else "aborted"
    text = text_by_response[1].strip() if terminal is not None and reason == "completed" else ""
    if lifecycle is not None:
        status = "completed" if text else "stopped" if reason.startswith("aborted") else "failed"
        lifecycle.end(parent.emit, agent_id=agent_id, tool_use_id=parent_tool_use_id, status=status,
                      summary=text[:2000] or f"Subagent ended: {reason}", output_file=str(side_path or ""),
                      total_tokens=total, tool_uses=tool_uses, duration_ms=int((time.monotonic() - started) * 1000))
    return SubagentOutcome(agent_id, text, reason, terminal.turn_count if terminal is not None else 0, total,
                           terminal.error if terminal is not None else None)


async def spawn_for(conv: Any, subagent_type: str, prompt: str, parent: ToolContext, *,
                    parent_tool_use_id: str | None, **kw: Any) -> SubagentOutcome:
    """A Conversation's subagent capability. The runtime is built per call, so a subagent gets the
    session's model and instructions as they are now (/model, a CLAUDE.md edit)."""
    from codeloop.session.hooks_bridge import SubagentLifecycle

    runtime = SubagentRuntime(conv.provider, conv.config.model, conv.config.tools, conv.can_use_tool,
                              conv.config.user_context, conv.config.cwd, conv.tool_context.session_dir,
                              dict(conv.config.agent_definitions), conv.hooks.stop_hooks("SubagentStop"),
                              lifecycle=SubagentLifecycle(conv.hooks))
    return await runtime.spawn(subagent_type, prompt, parent, parent_tool_use_id=parent_tool_use_id, **kw)
