"""A Conversation: one session's history, transcript, totals and permission state.

Front ends (print mode, REPL, library) submit prompts here. `submit()` runs the query loop
and records what it yields: messages into history and the transcript (written as they happen,
fsynced at turn ends), usage and cost per model, permission denials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

from codeloop.abort import AbortController, AbortReason
from codeloop.events import (ApiCallEvent, SystemEvent, AssistantEvent, CompactBoundary, Event, PermissionDenied, Terminal,
                             Tombstone, TranscriptEntry, UserEvent)
from codeloop.loop.query import QueryParams, query
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message, user_message
from codeloop.permissions.policy import PermissionPolicy, denial_record
from codeloop.providers.base import Provider
from codeloop.providers.pricing import cost_usd
from codeloop.session.hooks_bridge import ConversationHooks
from codeloop.tools.base import PermissionDecision, Tool, ToolContext
from codeloop.usage import Usage

AskUser = Callable[[Tool, Any, dict[str, Any]], Awaitable[PermissionDecision]]  # Any: the parsed input model


@dataclass
class ConversationConfig:
    """How a conversation is set up: cwd, model, tools, prompts, policy and limits."""
    cwd: Path
    model: str
    tools: list[Tool]
    system_prompt: list[str]
    user_context: dict[str, str]
    policy: PermissionPolicy = field(default_factory=PermissionPolicy)
    max_turns: int | None = None
    max_output_tokens: int | None = None
    fallback_models: list[str] = field(default_factory=list)
    token_budget: int | None = None
    persist: bool = True
    interactive: bool = False
    entrypoint: str = "cli"
    feature_flags: dict[str, Any] = field(default_factory=dict)
    agent_definitions: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, Any] = field(default_factory=dict)        # settings "hooks" (trusted sources only)
    hook_env: dict[str, str] = field(default_factory=dict)     # settings "env", passed to hook commands
    resumed: bool = False
    max_budget_usd: float | None = None
    thinking: dict[str, Any] | None = None
    # Re-reads (system_prompt, user_context) — CLAUDE.md, git branch, date — before each query
    # (spec 004 §6.1), so edits take effect without a restart. None: keep the values above.
    load_context: Callable[[], tuple[list[str], dict[str, str]]] | None = None


class Conversation:
    def __init__(self, config: ConversationConfig, provider: Provider, *, session_id: str,
                 messages: list[Message] | None = None, denials: list[dict[str, Any]] | None = None,
                 ask_user: AskUser | None = None, entries: list[dict[str, Any]] | None = None) -> None:
        from codeloop.session import store
        from codeloop.session.transcript import TranscriptWriter

        self.config = config
        self.provider = provider
        self.session_id = session_id
        self.messages: list[Message] = list(messages or [])
        self.permission_denials: list[dict[str, Any]] = list(denials or [])
        self.ask_user = ask_user
        self.usage_by_model: dict[str, Usage] = {}
        self.cost_usd = 0.0
        self.api_duration_ms = 0.0
        self.last_terminal: Terminal | None = None
        self.transcript_path = store.session_path(config.cwd, session_id)
        self.writer = (TranscriptWriter(self.transcript_path, session_id, str(config.cwd))
                       if config.persist else None)
        self.tool_context = ToolContext(cwd=config.cwd, project_dir=config.cwd,
                                        session_dir=store.session_dir(config.cwd, session_id),
                                        non_interactive=not config.interactive)
        self.abort: AbortController | None = None
        from codeloop.context.memory import NestedMemory
        from codeloop.loop.queue import CommandQueue

        self.queue = CommandQueue()
        self.nested_memory = NestedMemory(config.cwd)   # nested CLAUDE.md: once per session
        # A session the model ended stays ended (spec 000): the marker survives resume.
        self.ended_by_model = any(e.get("type") == "ended-by-model" for e in entries or [])
        self.side_listeners: list[Callable[[Event], None]] = []
        self.mcp: Any = None
        self._started = False
        self.read_filter_ready = False
        self.hooks = ConversationHooks(self._hook_runner())
        self._wire_tool_context()
        self._setup_context(entries or [])
        from codeloop.session.checkpoints import FileHistory
        self.file_history = FileHistory(store.config_dir() / "file-history" / session_id,
                                        self._write_entry if self.writer is not None else None)
        self.tool_context.before_write = self.file_history.before_write

    def tool_pool(self) -> list[Tool]:
        """Built-in tools plus the tools of connected MCP servers (which can come and go)."""
        return [*self.config.tools, *(self.mcp.tools() if self.mcp is not None else [])]

    def attach_mcp(self, manager: Any) -> None:
        self.mcp = manager
        self.tool_context.extra["tool_pool"] = self.tool_pool()

    def _hook_runner(self) -> Any | None:
        if not self.config.hooks:
            return None
        from codeloop.hooks.runner import HookRunner

        return HookRunner(self.config.hooks, session_id=self.session_id, transcript_path=self.transcript_path,
                          cwd=self.config.cwd, permission_mode_getter=lambda: self.config.policy.mode.value,
                          env=self.config.hook_env)

    def _wire_tool_context(self) -> None:
        ctx, cfg = self.tool_context, self.config
        ctx.session_id, ctx.model, ctx.entrypoint = self.session_id, cfg.model, cfg.entrypoint
        ctx.ended_by_model = self.ended_by_model
        ctx.messages = lambda: self.messages
        ctx.append_entry = self._write_entry
        ctx.emit = self._on_side_event
        ctx.post_tool_use = self.hooks.post_tool  # a no-op without hooks; SDK hooks may arrive later
        ctx.path_guard = self.config.policy.guard_path
        ctx.denied_inodes = self.config.policy.denied_inodes
        ctx.extra.update(feature_flags=dict(cfg.feature_flags), policy=cfg.policy)  # policy: ExitPlanMode, Skill
        ctx.extra["tool_pool"] = self.tool_pool()
        if any(t.name == "Agent" for t in cfg.tools):
            ctx.spawn_subagent = self._spawn_subagent
        from codeloop.session.background import wire_background
        wire_background(ctx, self.queue)  # each background shell or agent that ends is announced

    async def _spawn_subagent(self, *args: Any, **kw: Any) -> Any:
        """The Agent tool's capability (`session.subagent.spawn_for`, imported on first use)."""
        from codeloop.session.subagent import spawn_for
        return await spawn_for(self, *args, **kw)

    def _on_side_event(self, ev: Event) -> None:
        """Events from inside a tool (a subagent's messages): counted, shown, never added to history."""
        if isinstance(ev, ApiCallEvent):
            self._record_api_call(ev)
        for listener in list(self.side_listeners):
            listener(ev)

    def _setup_context(self, entries: list[dict[str, Any]]) -> None:
        """The five-stage pipeline (spec 004 §8) and its compactor, with state that survives resume."""
        from codeloop.context.collapse import ContextCollapse
        from codeloop.context.compact import Compactor
        from codeloop.context.pipeline import ContentReplacementState, ContextPipeline

        from codeloop.providers.metered import MeteredProvider

        self.collapse = ContextCollapse()
        # summaries and labels are paid for too: their usage joins the session's totals
        self.side_provider = self.tool_context.extra["side_provider"] = MeteredProvider(
            self.provider, lambda model, usage, ms: self._record_api_call(ApiCallEvent(model, usage, ms, None)))
        self.compactor = Compactor(self.side_provider, self.config.model, context=self.compact_context,
                                   before_compact=self.hooks.pre_compact, after_compact=self.hooks.post_compact)
        self.pipeline = ContextPipeline(
            compactor=self.compactor, session_dir=self.tool_context.session_dir,
            exempt_tools=ContextPipeline.exempt_from_tools(self.config.tools), collapse=self.collapse,
            replacement_state=ContentReplacementState.from_entries(entries), count_tokens=self._count_tokens)

    async def _count_tokens(self, messages: list[Message]) -> int | None:
        counter = getattr(self.provider, "count_tokens", None)
        if counter is None:
            return None
        from codeloop.loop.request import build_request

        return await counter(build_request(model=self.config.model, messages=messages,
                                           system_prompt=self.config.system_prompt,
                                           user_context=self.config.user_context, tools=self.config.tools))

    def compact_context(self) -> dict[str, Any]:
        """What a compaction must carry over: instructions, the todo list, where we are."""
        return {"instructions": self.config.user_context.get("claudeMd"), "todos": list(self.tool_context.todos),
                "cwd": self.tool_context.cwd}

    # -- totals ----------------------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        total = Usage()
        for u in self.usage_by_model.values():
            total.add(u)
        return total

    @property
    def budget_exhausted(self) -> bool:
        return self.config.max_budget_usd is not None and self.cost_usd >= self.config.max_budget_usd

    def _record_api_call(self, ev: ApiCallEvent) -> None:
        self.usage_by_model.setdefault(ev.model, Usage()).add(ev.usage)
        self.cost_usd += cost_usd(ev.usage, ev.model)
        self.api_duration_ms += ev.duration_ms

    # -- permissions -----------------------------------------------------------------------------
    async def can_use_tool(self, tool: Tool, inp: Any, block: dict[str, Any],
                           ctx: ToolContext) -> PermissionDecision:
        """The loop's CanUseTool: PreToolUse hooks, rules and mode, then the user (session.permission_gate)."""
        from codeloop.session.permission_gate import decide_tool_use

        return await decide_tool_use(self, tool, inp, block, ctx)

    # -- transcript ------------------------------------------------------------------------------
    def _write(self, msg: Message) -> None:
        self._persist(lambda w: w.append_message(msg))

    def _write_entry(self, entry: dict[str, Any]) -> None:
        self._persist(lambda w: w.append_entry(entry))

    def _persist(self, write: Callable[[Any], Any]) -> None:
        """A transcript that cannot be written (disk full, read-only) must not end the session:
        say so once, loudly, and carry on without one."""
        if self.writer is None:
            return
        from codeloop.session.transcript import TranscriptError

        try:
            write(self.writer)
        except TranscriptError as exc:
            self.writer = None
            self.hooks.pending_notices.append(SystemEvent(
                "transcript_error", f"{exc}. Continuing WITHOUT a transcript: this session cannot be resumed.",
                "error"))

    async def aclose(self, reason: str = "other") -> None:
        """End the session: SessionEnd hooks, then the transcript is synced and closed."""
        try:
            await self.hooks.session_end(reason)
        finally:
            self.close()
            if self.mcp is not None:
                await self.mcp.aclose()

    def add_messages(self, messages: list[Message]) -> None:
        """Add messages to the history without a model call (REPL `!cmd` output, @file attachments)."""
        for m in messages:
            self.messages.append(m)
            self._write(m)
        if messages:
            self.sync()

    def sync(self) -> None:
        """fsync the transcript (turn ends)."""
        self._persist(lambda w: w.sync())

    def close(self) -> None:
        from codeloop.session.background import stop_background
        stop_background(self.tool_context)  # no background task outlives its session
        self.sync()
        if self.writer is not None:
            self.writer.close()

    # -- the turn --------------------------------------------------------------------------------
    async def submit(self, prompt: str | list[dict[str, Any]] | Message, *,
                     abort: AbortController | None = None) -> AsyncIterator[Event]:
        if self.ended_by_model:
            yield SystemEvent("session_ended", "The model ended this conversation. Start a new session (or /clear).",
                              "error")
            done = Terminal(TerminalReason.ENDED_BY_MODEL, 0, "the session was ended by the model")
            self._record(done)
            yield done
            return
        if self.budget_exhausted:
            yield SystemEvent("budget_exceeded", f"The session's budget of ${self.config.max_budget_usd} is spent.",
                              "error")
            done = Terminal(TerminalReason.BUDGET_EXCEEDED, 0, "max budget reached")
            self._record(done)
            yield done
            return
        msg = prompt if isinstance(prompt, Message) else user_message(prompt)
        context: list[Message] = []
        if not self._started:
            self._started = True
            context += await self.hooks.session_start("resume" if self.config.resumed else "startup")
        if not msg.is_meta:
            verdict = await self.hooks.user_prompt(msg.text, msg.uuid)
            for ev in [*self.hooks.drain_notices(), *verdict.events]:
                yield ev
            if verdict.blocked:  # the prompt is erased: never sent, never recorded
                done = Terminal(TerminalReason.HOOK_STOPPED, 0, verdict.stop_reason)
                self._record(done)
                yield done
                return
            context += verdict.context
        from codeloop.loop.continuation import take_task_notifications
        context += take_task_notifications(self.queue)  # tasks that ended while no query ran
        for m in [msg, *context]:
            self.messages.append(m)
            self._write(m)
        if not msg.is_meta:
            self.file_history.begin_prompt(msg.uuid)  # files are checkpointed per prompt (/rewind)
        yield UserEvent(msg)
        self._reload_context()
        self.abort = abort or AbortController()
        self.tool_context.abort = self.abort
        # each query starts on the configured model; a fallback moves ctx.model for its rest only
        self.tool_context.model = self.tool_context.main_model = self.config.model
        from codeloop.tools.deferred import hint_for, request_tools
        from codeloop.tools.session_notes import session_notes

        ctx = self.tool_context
        ctx.extra["tool_pool"] = pool = self.tool_pool()
        hint = "\n\n".join(filter(None, [hint_for(pool, ctx), *session_notes(ctx)]))  # + skills, plan mode

        def refresh() -> list[Tool]:
            # a server that connected (or died) since the last turn changes what the model is offered
            ctx.extra["tool_pool"] = fresh = self.tool_pool()
            return request_tools(fresh, ctx)

        params = QueryParams(messages=list(self.messages),
                             system_prompt=[*self.config.system_prompt, *([hint] if hint else [])],
                             user_context=self.config.user_context, tools=request_tools(pool, ctx),
                             refresh_tools=refresh,
                             provider=self.provider, model=self.config.model, tool_context=self.tool_context,
                             can_use_tool=self.can_use_tool, max_turns=self.config.max_turns,
                             max_output_tokens=self.config.max_output_tokens,
                             fallback_models=list(self.config.fallback_models), queue=self.queue,
                             token_budget=self._token_budget(msg),
                             reactive_compact=self.compactor, context_pipeline=self.pipeline,
                             context_collapse=self.collapse, compact_context=self.compact_context,
                             stop_hooks=self.hooks.stop_hooks(), thinking=self.config.thinking,
                             memory=self.nested_memory.start)
        try:
            async for ev in query(params):
                self._record(ev)
                yield ev
                for notice in self.hooks.drain_notices():
                    yield notice
        finally:
            self.sync()

    async def compact(self, focus: str | None = None) -> AsyncIterator[Event]:
        """Manual `/compact [focus]`: summarise the history now and continue from the summary."""
        if not [m for m in self.messages if not m.is_meta]:
            yield SystemEvent("compact_skipped", "Nothing to compact yet.", "warning")
            done = Terminal(TerminalReason.COMPLETED, 0)
            self._record(done)
            yield done
            return
        outcome = await self.compactor.compact(self.messages, trigger="manual", focus=focus or None,
                                               **self.compact_context())
        ev = CompactBoundary("manual", outcome.pre_tokens, outcome.messages)
        self._record(ev)
        self.sync()
        yield ev
        done = Terminal(TerminalReason.COMPLETED, 0)
        self._record(done)
        yield done

    def _reload_context(self) -> None:
        """Spec 004 §6.1: the system prompt and CLAUDE.md are read per query, not once per session."""
        if self.config.load_context is None:
            return
        try:
            self.config.system_prompt, self.config.user_context = self.config.load_context()
        except OSError as exc:  # an unreadable CLAUDE.md keeps the last good context
            self.hooks.pending_notices.append(SystemEvent("context_warning", f"could not re-read instructions: {exc}",
                                                          "warning"))

    def _token_budget(self, msg: Message) -> int | None:
        from codeloop.loop.budget import parse_token_budget

        return parse_token_budget(msg.text) or self.config.token_budget

    def _record(self, ev: Event) -> None:
        if isinstance(ev, (AssistantEvent, UserEvent)):
            self.messages.append(ev.message)
            self._write(ev.message)
        elif isinstance(ev, Tombstone):
            self.messages = [m for m in self.messages if m.uuid != ev.message.uuid]
            self._write_entry({"type": "tombstone", "targetUuid": ev.message.uuid})
        elif isinstance(ev, CompactBoundary):
            self.messages = list(ev.messages)
            self._write_entry({"type": "system", "subtype": "compact_boundary",
                               "compactMetadata": {"trigger": ev.trigger, "preTokens": ev.pre_tokens}})
            for m in ev.messages:
                self._write(m)
            # a resumed session loads from the last boundary: carry the denials across it
            for record in self.permission_denials:
                self._write_entry({"type": "permission-denial", **record})
        elif isinstance(ev, TranscriptEntry):
            self._write_entry(ev.entry)
        elif isinstance(ev, ApiCallEvent):
            self._record_api_call(ev)
            if self.budget_exhausted and self.abort is not None:
                self.abort.abort(AbortReason.BUDGET)
        elif isinstance(ev, PermissionDenied):
            record = denial_record(ev.tool_name, ev.tool_use_id, ev.tool_input)
            self.permission_denials.append(record)
            self._write_entry({"type": "permission-denial", **record})
        elif isinstance(ev, Terminal):
            self.last_terminal = ev
            if ev.reason is TerminalReason.ENDED_BY_MODEL:
                self.ended_by_model = self.tool_context.ended_by_model = True
