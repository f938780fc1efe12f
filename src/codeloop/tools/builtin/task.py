"""The Task tool: runs a subagent — a nested query with its own id, tools, model, prompt and
transcript — and returns its final answer.

What the subagent gets: the definition's tools (default: every parent tool) minus Task itself,
so there is no recursion; the definition's model (`inherit` → the parent's); its max turns
(default 50); the definition body as system prompt; a fresh history holding only the prompt; and
a ToolContext with `agent_id` set, which turns EndConversation into a no-op — a subagent can
never end the main session or itself. It shares the parent's abort, so interrupting the parent
stops it. Its messages are passed to `ctx.emit` with `parent_tool_use_id` set and written to
`<session_dir>/subagents/agent-<agent_id>.jsonl`; they never enter the parent's history.

The runtime comes from `ctx.extra["subagent_runtime"]` (a `SubagentRuntime`, set by the
Conversation). The Task's own tool_use id comes from the `CURRENT_TOOL_USE_ID` context variable,
which the tool runner sets around each call (a contextvar, because tools run in parallel tasks).
"""

from __future__ import annotations

import logging
import sys
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

log = logging.getLogger(__name__)

NAME = "Task"
RUNTIME_KEY = "subagent_runtime"
ENDED_REFUSAL = "The session was ended by the model; start a new session (or /clear) to continue."

# Set by the tool runner around `tool.call` to the tool_use id being run. If
# codeloop.loop.tool_runner defines its own CURRENT_TOOL_USE_ID, that one is read first.
CURRENT_TOOL_USE_ID: ContextVar[str | None] = ContextVar("CURRENT_TOOL_USE_ID", default=None)


def runtime_of(ctx: ToolContext) -> "SubagentRuntime | None":
    """The runtime wired into `ctx`: an instance, or a zero-argument factory (built on first use)."""
    value = ctx.extra.get(RUNTIME_KEY)
    if callable(value) and not isinstance(value, SubagentRuntime):
        value = ctx.extra[RUNTIME_KEY] = value()
    return value if isinstance(value, SubagentRuntime) else None


def current_tool_use_id() -> str | None:
    runner = sys.modules.get("codeloop.loop.tool_runner")
    var = getattr(runner, "CURRENT_TOOL_USE_ID", None)
    if isinstance(var, ContextVar) and var is not CURRENT_TOOL_USE_ID:
        value = var.get(None)
        if value:
            return value
    return CURRENT_TOOL_USE_ID.get()


@dataclass
class SubagentRuntime:
    provider: Any                                   # codeloop.providers.base.Provider
    model: str                                      # the parent's model
    tools: list[Tool]                               # the parent's whole (ungated) pool
    can_use_tool: Callable[..., Any]                # codeloop.loop.tool_runner.CanUseTool
    user_context: dict[str, str] = field(default_factory=dict)
    cwd: Path = field(default_factory=Path.cwd)
    session_dir: Path | None = None                 # None: no subagent transcripts
    definitions: dict[str, Any] = field(default_factory=dict)  # name → tools.agents.AgentDefinition
    stop_hooks: Any = None                          # SubagentStop hooks (loop.recovery.StopHooks)


DESCRIPTION = """\
Launch a subagent to handle a complex, multi-step task autonomously. The subagent starts with a \
fresh context holding only your prompt, works with its own tools, and returns one final message \
as this tool's result; the user does not see that message, so relay what matters.

When to use it: open-ended searches that may take several rounds, investigations whose details \
would flood your context, or independent pieces of work that can run in parallel (send several \
Task calls in one response). Do not use it to read a known file or look up one symbol — use \
Read, Grep or Glob directly.

How to use it:
- Write a complete, self-contained prompt: the goal, what you already know, and exactly what to \
report back. The subagent cannot ask you questions.
- Say whether it should change code or only research.
- Pick `subagent_type` from the available agent types."""


class TaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(description="A short (3-5 word) description of the task")
    prompt: str = Field(description="The task for the agent to perform")
    subagent_type: str = Field(description="The type of specialized agent to use for this task")


class TaskTool(Tool):
    name: ClassVar[str] = NAME
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = TaskInput

    def __init__(self, definitions: dict[str, Any] | None = None) -> None:
        # Definitions only make the description list the agent types; calls use the runtime's.
        self._definitions = definitions

    def api_schema(self) -> dict[str, Any]:
        from codeloop.tools.agents import BUILTIN_AGENTS, agent_listing

        definitions = self._definitions or {d.name: d for d in BUILTIN_AGENTS}
        description = f"{DESCRIPTION}\n\nAvailable agent types:\n{agent_listing(definitions)}"
        return {"name": self.name, "description": description, "input_schema": self.input_schema()}

    def is_enabled(self, ctx: ToolContext) -> bool:
        # Never inside a subagent (no recursion), and only where a runtime was wired in.
        return ctx.agent_id is None and ctx.extra.get(RUNTIME_KEY) is not None

    def is_read_only(self, inp: BaseModel) -> bool:
        return False

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True  # parallel subagents are the point; each of their tools is checked on its own

    async def check_permissions(self, inp: BaseModel, ctx: ToolContext) -> PermissionDecision:
        # Launching asks nothing: every tool the subagent runs goes through can_use_tool.
        return PermissionDecision(PermissionBehavior.ALLOW)

    async def call(self, inp: TaskInput, ctx: ToolContext) -> ToolResult:
        from codeloop.tools.agents import BUILTIN_AGENTS

        if ctx.ended_by_model:
            raise ToolError(ENDED_REFUSAL)
        if ctx.agent_id is not None:
            raise ToolError("Subagents cannot launch subagents.")
        runtime = runtime_of(ctx)
        if runtime is None:
            raise ToolError("Subagents are not available in this session.")
        definitions = dict(runtime.definitions) or {d.name: d for d in BUILTIN_AGENTS}
        definition = definitions.get(inp.subagent_type)
        if definition is None:
            raise ToolError(f"Agent type '{inp.subagent_type}' not found. Available agents: "
                            f"{', '.join(definitions)}")
        outcome = await run_subagent(runtime, definition, inp.prompt, ctx, parent_tool_use_id=current_tool_use_id())
        data = {"agent_id": outcome.agent_id, "total_tokens": outcome.total_tokens,
                "num_turns": outcome.num_turns, "terminal_reason": outcome.terminal_reason}
        if not outcome.text:
            detail = f": {outcome.error}" if outcome.error else ""
            return ToolResult(f"The subagent ended without a final answer (terminal reason: "
                              f"{outcome.terminal_reason}{detail}).", is_error=True, data=data)
        return ToolResult(outcome.text, data=data)


# -- the nested query -------------------------------------------------------------------------------

@dataclass
class SubagentOutcome:
    agent_id: str
    text: str
    terminal_reason: str
    num_turns: int
    total_tokens: int
    error: str | None = None


def subagent_tools(pool: list[Tool], allowed: tuple[str, ...] | None) -> list[Tool]:
    """The subagent's pool: the definition's tools (None = all), never Task itself."""
    keep = None if allowed is None else set(allowed)
    return [t for t in pool if t.name != NAME and (keep is None or t.name in keep)]


def transcript_path(session_dir: Path, agent_id: str) -> Path:
    return session_dir / "subagents" / f"agent-{agent_id}.jsonl"


class _SidechainLog:
    """The subagent's transcript; a failed write disables it instead of failing the subagent."""

    def __init__(self, path: Path | None, session_id: str | None, cwd: Path, agent_id: str) -> None:
        from codeloop.session.transcript import TranscriptWriter

        self.agent_id = agent_id
        self.writer = TranscriptWriter(path, session_id or agent_id, cwd) if path is not None else None

    def _guard(self, fn: Callable[[], Any]) -> None:
        from codeloop.session.transcript import TranscriptError

        if self.writer is None:
            return
        try:
            fn()
        except (TranscriptError, OSError) as exc:
            log.warning("subagent %s transcript disabled: %s", self.agent_id, exc)
            self.writer = None

    def message(self, msg: Any) -> None:
        from codeloop.session.transcript import message_to_entry

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
                       parent_tool_use_id: str | None) -> SubagentOutcome:
    from codeloop.context.prompt import environment_block
    from codeloop.events import ApiCallEvent, AssistantEvent, Terminal, Tombstone, UserEvent
    from codeloop.loop.query import QueryParams, query
    from codeloop.messages import user_message
    from codeloop.tools.agents import DEFAULT_MAX_TURNS, DEFAULT_SUBAGENT_PROMPT, resolve_agent_model
    from codeloop.tools.deferred import LOADED_KEY, POOL_KEY, hint_for, request_tools

    agent_id = str(uuid.uuid4())
    model = resolve_agent_model(definition, runtime.model)
    pool = subagent_tools(list(runtime.tools), definition.tools)
    history: list[Any] = []
    ctx = ToolContext(
        cwd=parent.cwd, project_dir=parent.project_dir, abort=parent.abort,  # a parent abort stops it
        session_dir=(runtime.session_dir / "subagents" / f"agent-{agent_id}") if runtime.session_dir else None,
        agent_id=agent_id, non_interactive=parent.non_interactive, session_id=parent.session_id, model=model,
        entrypoint=parent.entrypoint, messages=lambda: list(history),
        # the parent's permission guards and hooks hold inside the subagent too
        path_guard=parent.path_guard, read_denied=parent.read_denied, post_tool_use=parent.post_tool_use,
        extra={POOL_KEY: pool, LOADED_KEY: set(), "feature_flags": parent.extra.get("feature_flags") or {},
               "side_provider": parent.extra.get("side_provider")})  # WebFetch/WebSearch side calls
    system_prompt = [definition.system_prompt or DEFAULT_SUBAGENT_PROMPT, environment_block(runtime.cwd)]
    hint = hint_for(pool, ctx)
    if hint:
        system_prompt.append(hint)
    sidechain = _SidechainLog(transcript_path(runtime.session_dir, agent_id) if runtime.session_dir else None,
                              parent.session_id, runtime.cwd, agent_id)
    first = user_message(prompt)
    params = QueryParams(messages=[first], system_prompt=system_prompt, user_context=dict(runtime.user_context),
                         tools=request_tools(pool, ctx), provider=runtime.provider, model=model, tool_context=ctx,
                         can_use_tool=runtime.can_use_tool, max_turns=definition.max_turns or DEFAULT_MAX_TURNS,
                         refresh_tools=lambda: request_tools(pool, ctx), memory_prefetch=False,
                         stop_hooks=runtime.stop_hooks, query_source=f"agent:{definition.name}")

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
    finally:
        sidechain.close()
    total = (last_usage.total_input + last_usage.output_tokens) if last_usage is not None else 0
    reason = terminal.reason.value if terminal is not None else "aborted"
    text = text_by_response[1].strip() if terminal is not None and reason == "completed" else ""
    return SubagentOutcome(agent_id, text, reason, terminal.turn_count if terminal is not None else 0, total,
                           terminal.error if terminal is not None else None)
