"""A Conversation: one session's history, transcript, totals, permission state and model.

Built only by `session.assembly` (or directly by tests and the library from a config), never
patched afterwards. Front ends submit prompts here. `submit()` runs the query loop and records
what it yields: messages into history and the transcript (written as they happen, fsynced at
turn ends), usage and cost per model, permission denials. The same class runs a subagent (its
`SessionParts.sidechain` set): same loop, context pipeline, compaction and recoveries, its own
history and sidechain transcript, the parent's hooks, policy, MCP tools and totals.

One model switch (`set_model`) for everything that names the model: requests, compaction, token
counting, the tools' gates and cost; a fallback after overload moves all of them for the rest of
its query (`SystemEvent("model_fallback")`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.abort import AbortController, AbortReason
from codeloop.events import (ApiCallEvent, AssistantEvent, CompactBoundary, Event, PermissionDenied, SystemEvent,
                             Terminal, Tombstone, TranscriptEntry, UserEvent)
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message, user_message
from codeloop.permissions.policy import PermissionPolicy, denial_record
from codeloop.providers.base import Provider
from codeloop.providers.pricing import cost_usd
from codeloop.session.hooks_bridge import ConversationHooks
from codeloop.session.parts import SessionParts, SessionPersistence
from codeloop.session.wiring import SessionWiring
from codeloop.tools.base import PermissionDecision, Tool, ToolContext
from codeloop.usage import Usage

if TYPE_CHECKING:
    from codeloop.context.prompt import ContextLoader

log = logging.getLogger(__name__)
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
    task_budget: int | None = None     # --task-budget: output_config.task_budget's total (spec 004 §9.1)
    persist: bool = True
    interactive: bool = False
    entrypoint: str = "cli"
    feature_flags: dict[str, Any] = field(default_factory=dict)
    agent_definitions: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, Any] = field(default_factory=dict)        # settings "hooks" (trusted sources only)
    hook_env: dict[str, str] = field(default_factory=dict)     # settings "env", passed to hook commands
    env_pass: tuple[str, ...] = ()     # secret-looking variables the model's commands may see (shell_env)
    resumed: bool = False
    max_budget_usd: float | None = None
    thinking: dict[str, Any] | None = None
    setup_trigger: str | None = None   # --init / --maintenance: Setup hooks before SessionStart
    # Re-reads (system_prompt, user_context) — CLAUDE.md, git branch, date — before each query
    # (spec 004 §6.1), so edits take effect without a restart. None: keep the values above.
    load_context: ContextLoader | None = None


class Conversation(SessionWiring):
    def __init__(self, config: ConversationConfig, provider: Provider, *, session_id: str,
                 messages: list[Message] | None = None, denials: list[dict[str, Any]] | None = None,
                 ask_user: AskUser | None = None, entries: list[dict[str, Any]] | None = None,
                 parts: SessionParts | None = None) -> None:
        from codeloop.loop.queue import CommandQueue

        parts = parts or SessionParts()
        self.config, self.provider, self.session_id, self.parts = config, provider, session_id, parts
        self.sidechain = parts.sidechain
        self.messages: list[Message] = list(messages or [])
        self.permission_denials: list[dict[str, Any]] = list(denials or [])
        self.ask_user = ask_user
        self.usage_by_model: dict[str, Usage] = {}
        self.cost_usd = 0.0
        self.api_duration_ms = 0.0
        self.last_terminal: Terminal | None = None
        self.settings, self.trusted, self.mcp = parts.settings, parts.trusted, parts.mcp
        self.output_style, self.api_key_source = parts.output_style, parts.api_key_source
        self.side_listeners: list[Callable[[Event], None]] = parts.listeners
        self.queue = parts.queue or CommandQueue()
        self.abort: AbortController | None = None
        self._started = False
        self.start_source: str | None = None   # SessionStart's source when not startup/resume ("clear")
        self.read_filter_ready = False
        # A session the model ended stays ended (spec 000): the marker survives resume.
        self.ended_by_model = any(e.get("type") == "ended-by-model" for e in entries or [])
        self.transcript_path, writer = self._make_writer()
        self.hooks = self.sidechain.hooks if self.sidechain is not None else ConversationHooks(self._hook_runner())
        self.persistence = SessionPersistence(writer, self._notice, parts.hold, take_hold=self.sidechain is None)
        self.tool_context = self._make_context()
        self._setup_context(entries or [])

    @property
    def writer(self) -> Any:
        return self.persistence.writer

    # -- model -------------------------------------------------------------------------------------
    @property
    def model(self) -> str:
        """The model answering now: the configured one, or its fallback for the rest of a query."""
        return self.tool_context.model or self.config.model

    def set_model(self, model: str | None) -> str:
        """The one model switch (/model, the SDK's set_model, a custom command's model): requests,
        compaction, token counting, the tools' gates and cost all follow it. `None` or
        "default": the default model. Returns the resolved id."""
        from codeloop.providers.aliases import resolve_model

        resolved = resolve_model(None if model in (None, "", "default") else model)
        self.config.model = resolved
        self._use_model(resolved, configured=True)
        return resolved

    def _use_model(self, model: str, *, configured: bool) -> None:
        self.tool_context.model = model
        if configured:
            self.tool_context.main_model = model
        self.compactor.model = model

    def _notice(self, ev: SystemEvent) -> None:
        """A notice for the user, shown with the next event; a subagent's are logged (its transcript
        trouble is its own, and the main thread's notices are the main thread's)."""
        if self.sidechain is None:
            self.hooks.pending_notices.append(ev)
        else:
            log.warning("subagent %s: %s", self.sidechain.agent_id, ev.text)

    def _hook_runner(self) -> Any | None:
        if not self.config.hooks:
            return None
        from codeloop.hooks.runner import HookRunner

        return HookRunner(self.config.hooks, session_id=self.session_id, transcript_path=self.transcript_path,
                          cwd=self.config.cwd, permission_mode_getter=lambda: self.config.policy.mode.value,
                          env=self.config.hook_env)

    def add_hook_callbacks(self, source: Any) -> None:
        """Hook callbacks registered at run time (the SDK's `initialize`), beside settings hooks."""
        if self.hooks.runner is None:
            from codeloop.hooks.runner import HookRunner

            self.hooks.runner = HookRunner({}, session_id=self.session_id, transcript_path=self.transcript_path,
                                           cwd=self.config.cwd, env=self.config.hook_env,
                                           permission_mode_getter=lambda: self.config.policy.mode.value)
        self.hooks.runner.callbacks = source
        self.tool_context.lifecycle_hooks = self.hooks.lifecycle   # the tools' events reach them now too

    def add_agents(self, definitions: dict[str, Any]) -> None:
        """Agent definitions added at run time (the SDK's `initialize`): the Agent tool offers them."""
        self.config.agent_definitions.update(definitions)
        if any(t.name == "Agent" for t in self.config.tools):   # its description lists the agent types
            from codeloop.tools.builtin.task import TaskTool

            task = TaskTool(dict(self.config.agent_definitions))
            self.config.tools = [task if t.name == "Agent" else t for t in self.config.tools]

    def _on_side_event(self, ev: Event) -> None:
        """Events from inside a tool (a subagent's messages): counted, shown, never added to history."""
        if isinstance(ev, ApiCallEvent):
            self._record_api_call(ev)
        for listener in list(self.side_listeners):
            listener(ev)

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
        self.persistence.message(msg)

    def _write_entry(self, entry: dict[str, Any]) -> None:
        self.persistence.entry(entry)

    async def aclose(self, reason: str = "other") -> None:
        """End the session: SessionEnd hooks, then the transcript is synced and closed."""
        try:
            if self.sidechain is None:
                await self.hooks.session_end(reason)
        finally:
            self.close()
            if self.mcp is not None and self.parts.owns_mcp:
                await self.mcp.aclose()

    def hand_over(self) -> None:
        """A successor (/clear, /resume, /rewind) takes the shared parts: closing this one keeps them."""
        self.parts.owns_mcp = False

    def add_messages(self, messages: list[Message]) -> None:
        """Add messages to the history without a model call (REPL `!cmd` output, @file attachments)."""
        for m in messages:
            self.messages.append(m)
            self._write(m)
        if messages:
            self.sync()

    def sync(self) -> None:
        """fsync the transcript (turn ends)."""
        self.persistence.sync()

    def close(self) -> None:
        if self.sidechain is None:
            from codeloop.session.background import stop_background
            from codeloop.tools.made_on_use import made

            stop_background(self.tool_context)  # no background task outlives its session
            if (scheduler := made(self.tool_context, "scheduler")) is not None:
                scheduler.close()   # nor a scheduled prompt (none if it was never made)
        self.persistence.close()

    # -- the turn --------------------------------------------------------------------------------
    async def submit(self, prompt: str | list[dict[str, Any]] | Message, *, abort: AbortController | None = None,
                     context: list[Message] | None = None) -> AsyncIterator[Event]:
        """Run one prompt to its end. `context`: messages that follow the prompt (a subagent's
        SubagentStart hook context)."""
        if (refused := self._refusal()) is not None:
            for ev in refused:
                if isinstance(ev, Terminal):
                    self._record(ev)
                yield ev
            return
        # a prompt given as text is stored as text, as Claude Code stores `-p "…"` and typed prompts
        msg = prompt if isinstance(prompt, Message) else user_message(prompt, sent_as_text=isinstance(prompt, str))
        extra: list[Message] = list(context or [])
        if not self._started and self.sidechain is None:
            if self.config.setup_trigger:
                extra += await self.hooks.setup(self.config.setup_trigger)
            source = self.start_source or ("resume" if self.config.resumed else "startup")
            extra += await self.hooks.session_start(source)
            await self.hooks.instructions_loaded(self.config.user_context, "session_start")
        self._started = True
        if not msg.is_meta and self.sidechain is None:
            await self.hooks.check_workspace(self.tool_context.cwd)   # CwdChanged, FileChanged since the last look
            verdict = await self.hooks.user_prompt(msg.text, msg.uuid)
            for ev in [*self.hooks.drain_notices(), *verdict.events]:
                yield ev
            if verdict.blocked:  # the prompt is erased: never sent, never recorded
                done = Terminal(TerminalReason.HOOK_STOPPED, 0, verdict.stop_reason)
                self._record(done)
                yield done
                return
            extra += verdict.context
        from codeloop.loop.continuation import take_task_notifications
        extra += take_task_notifications(self.queue)  # tasks that ended while no query ran
        day = self.config.load_context.date_change() if self.config.load_context is not None else None
        if day is not None:   # the prompt keeps its snapshot (and its cache); the new day is said here
            extra.append(user_message(day, is_meta=True))
        for m in [msg, *extra]:
            self.messages.append(m)
            self._write(m)
        if not msg.is_meta and self.sidechain is None:
            self.file_history.begin_prompt(msg.uuid)  # files are checkpointed per prompt (/rewind)
        yield UserEvent(msg)
        self._reload_context()
        self.abort = abort or (self.sidechain.abort if self.sidechain is not None else AbortController())
        self.tool_context.abort = self.abort
        # each query starts on the configured model; a fallback moves it for the rest of that query
        self._use_model(self.config.model, configured=True)
        from codeloop.loop.query import query

        cfg_context = self.config.user_context
        try:
            async for ev in query(self._turn_params(msg)):
                self._record(ev)
                # hooks on what happened; MessageDisplay changes what is shown, never the record
                yield ev if self.sidechain is not None else await self.hooks.after_event(ev, cfg_context)
                if self.sidechain is None:   # hook notices are the main thread's to show
                    for notice in [*self.hooks.drain_notices(), *self._skipped_files()]:
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
        self.compactor.model = self.config.model
        outcome = await self.compactor.compact(self.messages, trigger="manual", focus=focus or None,
                                               **self.compact_context())
        ev = CompactBoundary("manual", outcome.pre_tokens, outcome.messages)
        self._record(ev)
        await self.hooks.instructions_loaded(self.config.user_context, "compact")
        self.sync()
        yield ev
        for notice in self.pipeline.tracking.drain_notices():   # autocompact back on, said now
            yield notice
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
        self.hooks.pending_notices += self._skipped_files()

    def _skipped_files(self) -> list[Event]:
        """The project files the session's reader skipped since last asked (a CLAUDE.md linking out of
        the project…), as warnings: each once, on the main thread (a subagent's wait for it)."""
        files = self.parts.project_files
        if files is None or self.sidechain is not None:
            return []
        return [SystemEvent("context_warning", line, "warning") for line in files.drain()]

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
            if self.sidechain is not None:
                self.sidechain.record_usage(ev)   # the parent's totals include its subagents
            if self.budget_exhausted and self.abort is not None:
                self.abort.abort(AbortReason.BUDGET)
        elif isinstance(ev, PermissionDenied):
            record = denial_record(ev.tool_name, ev.tool_use_id, ev.tool_input)
            self.permission_denials.append(record)
            self._write_entry({"type": "permission-denial", **record})
        elif isinstance(ev, SystemEvent) and ev.subtype == "model_fallback" and ev.data.get("to_model"):
            self._use_model(str(ev.data["to_model"]), configured=False)   # compaction follows the fallback
        elif isinstance(ev, Terminal):
            self.last_terminal = ev
            if ev.reason is TerminalReason.ENDED_BY_MODEL:
                self.ended_by_model = self.tool_context.ended_by_model = True
