"""Input dispatch for the interactive session (spec 004 §2–§5): onSubmit, handlePromptSubmit's
five exclusive paths, executeUserInput, onQuery and the queue processor.

    on_submit ─ LOCAL `/` command while busy, immediate or sent by a key binding → run now
              (a PROMPT command sent by a key binding goes on: it is queued like typed input)
              ─ empty input → ignored;  ended session → refused (slash commands still run)
              ─ idle-return check (dialog | hint | off)
              └ handle_prompt_submit ─① queued commands      → execute_user_input(them)
                                     ─② exit / quit / :q …    → handle_prompt_submit("/exit")
                                     ─③ busy + immediate cmd  → run now
                                     ─④ busy                  → enqueue (prompt/bash only),
                                                                aborting an interruptible tool
                                     └⑤ otherwise             → execute_user_input([cmd])

"Interruptible" (path ④): the model has finished streaming and every tool still running declares
itself `interruptible` (Read, Glob, Grep, ToolSearch: cancelling them loses nothing). Then the
query is aborted with AbortReason.INTERRUPT, the tool executor cancels those tools at once, and
the queued prompt runs as soon as the query ends. Interrupting mid-stream would throw away a
half-written answer, and cancelling Bash/Edit/Write/Task could leave work half done — those
finish, and the queued prompt reaches the model between turns (the loop drains Priority.NEXT
commands) or right after the query ends (the queue processor here).

The front end supplies a `FrontEnd`: where events are rendered, notices shown, the current
Conversation. Everything else — the guard, the queue policy, overrides — lives here, testable
without a terminal.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from codeloop.abort import AbortController, AbortReason
from codeloop.events import AssistantEvent, Event, StreamEvent, UserEvent
from codeloop.input.commands import CommandHost, CommandRegistry, CommandType, context_tokens, parse_slash
from codeloop.input.guard import QueryGuard
from codeloop.input.process import add_to_context, expand_pasted_text, process_user_input
from codeloop.loop.queue import Priority, QueuedCommand, QueueMode

if TYPE_CHECKING:
    from codeloop.messages import Message
    from codeloop.session.conversation import Conversation

EXIT_ALIASES = frozenset({"exit", "quit", ":q", ":q!", ":wq", ":wq!"})
IDLE_RETURN_AFTER_S = 75 * 60
IDLE_RETURN_MIN_TOKENS = 100_000
ENDED_REFUSAL = "The model ended this conversation. Start a new session (or /clear)."


class SubmitPath(str, Enum):
    """Which way a submission went; returned so tests (and the REPL) can tell."""
    IGNORED = "ignored"
    REFUSED = "refused"
    QUEUED_EXECUTED = "queued_executed"   # ①
    EXIT_ALIAS = "exit_alias"             # ②
    IMMEDIATE = "immediate"               # ③ (and §2.1)
    ENQUEUED = "enqueued"                 # ④
    DROPPED = "dropped"                   # ④, a mode that cannot wait in the queue
    EXECUTED = "executed"                 # ⑤


class QueryPhase(str, Enum):
    IDLE = "idle"
    STREAMING = "streaming"
    TOOLS = "tools"


class IdleReturnMode(str, Enum):
    DIALOG = "dialog"
    HINT = "hint"
    OFF = "off"

    @classmethod
    def resolve(cls, settings_value: Any = None) -> IdleReturnMode:
        """env CODELOOP_IDLE_RETURN beats the `idleReturn` setting; anything unknown is `hint`."""
        for raw in (os.environ.get("CODELOOP_IDLE_RETURN"), settings_value):
            if isinstance(raw, str) and raw.strip().lower() in {m.value for m in cls}:
                return cls(raw.strip().lower())
        return cls.HINT


class FrontEnd(CommandHost, Protocol):
    def render_event(self, ev: Event) -> None: ...
    def query_started(self) -> None: ...
    def query_finished(self, duration_s: float, aborted: bool) -> None: ...


class BusyTracker:
    """What the running query is doing, from its events: streaming, or waiting on which tools."""

    def __init__(self, is_interruptible: Callable[[str], bool] | None = None) -> None:
        self.phase = QueryPhase.IDLE
        self.running: dict[str, str] = {}  # tool_use_id → tool name
        # By tool name; the Dispatcher asks the session's tool pool, the default the built-ins.
        self.is_interruptible = is_interruptible or _builtin_interruptible

    def reset(self) -> None:
        self.phase, self.running = QueryPhase.IDLE, {}

    def observe(self, ev: Event) -> None:
        if isinstance(ev, StreamEvent):
            kind = ev.raw.get("type")
            if kind == "message_start":
                self.phase = QueryPhase.STREAMING
            elif kind == "message_stop":
                self.phase = QueryPhase.TOOLS if self.running else self.phase
        elif isinstance(ev, AssistantEvent):
            for b in ev.message.tool_uses():
                self.running[b["id"]] = b.get("name", "")
        elif isinstance(ev, UserEvent):
            for tid in ev.message.tool_result_ids():
                self.running.pop(tid, None)

    @property
    def interruptible(self) -> bool:
        return (self.phase is QueryPhase.TOOLS and bool(self.running)
                and all(self.is_interruptible(name) for name in self.running.values()))


def _builtin_interruptible(name: str) -> bool:
    from codeloop.tools.registry import INTERRUPTIBLE

    return name in INTERRUPTIBLE


@contextmanager
def query_overrides(conv: Conversation, allowed_tools: tuple[str, ...], model: str | None) -> Iterator[None]:
    """A custom command's `allowed-tools` and `model` hold for its own query only."""
    policy = conv.config.policy
    added = policy.allow_rules(list(allowed_tools))
    old_model = conv.config.model
    if model:
        conv.set_model(model)
    try:
        yield
    finally:
        if added:
            policy.withdraw_rules(added)
        if model:
            conv.set_model(old_model)


class Dispatcher:
    def __init__(self, front: FrontEnd, registry: CommandRegistry, *, guard: QueryGuard | None = None,
                 idle_return: IdleReturnMode = IdleReturnMode.HINT, clock: Callable[[], float] = time.monotonic,
                 idle_after_s: float = IDLE_RETURN_AFTER_S, idle_min_tokens: int = IDLE_RETURN_MIN_TOKENS) -> None:
        self.front, self.registry = front, registry
        self.guard = guard or QueryGuard()
        self.tracker = BusyTracker(self._interruptible)
        self.abort: AbortController | None = None
        self.idle_return, self.clock = idle_return, clock
        self.idle_after_s, self.idle_min_tokens = idle_after_s, idle_min_tokens
        self.last_query_completion: float | None = None
        self._idle_prompted = False

    @property
    def conv(self) -> Conversation:
        return self.front.conv

    def _interruptible(self, tool_name: str) -> bool:
        from codeloop.tools.registry import is_interruptible

        return is_interruptible(self.conv.tool_pool(), tool_name)

    # -- §2 onSubmit ---------------------------------------------------------------------------------
    async def on_submit(self, text: str, *, mode: QueueMode = QueueMode.PROMPT,
                        pasted: dict[Any, dict[str, Any]] | None = None, from_keybinding: bool = False) -> SubmitPath:
        if mode is QueueMode.PROMPT and text.lstrip().startswith("#"):   # `# note`: Claude Code's memory shortcut
            from codeloop.input.memory import add_memory_note
            if (said := await add_memory_note(self.front, text)) is not None:   # None: send it as a prompt
                self.front.show(said, style="info")
                return SubmitPath.IMMEDIATE
        if mode is QueueMode.PROMPT and text.strip().startswith("/"):
            slash = parse_slash(expand_pasted_text(text, pasted))
            command = self.registry.find(slash[0]) if slash else None
            if (command is not None and command.type is CommandType.LOCAL and self.guard.is_active
                    and (command.immediate or from_keybinding)):
                await self._run_immediate(command, slash[1] if slash else "")
                return SubmitPath.IMMEDIATE
        if not text.strip():
            return SubmitPath.IGNORED
        if self.conv.ended_by_model and not (mode is QueueMode.PROMPT and parse_slash(text) is not None) \
                and text.strip() not in EXIT_ALIASES:
            self.front.show(ENDED_REFUSAL, style="error")
            return SubmitPath.REFUSED
        if not self.guard.is_active and not await self._idle_return_check():
            return SubmitPath.IGNORED
        path = await self.handle_prompt_submit(text, mode=mode, pasted=pasted)
        await self.drain_queue()
        return path

    async def _idle_return_check(self) -> bool:
        """False when the user chose, in the dialog, not to send the input after all."""
        last = self.last_query_completion
        if (self.idle_return is IdleReturnMode.OFF or last is None or self._idle_prompted
                or self.clock() - last < self.idle_after_s or context_tokens(self.conv) < self.idle_min_tokens):
            return True
        self._idle_prompted = True
        minutes = int((self.clock() - last) // 60)
        tokens = context_tokens(self.conv)
        note = (f"You've been away {minutes} min and this conversation carries ~{tokens:,} tokens. "
                "Starting fresh with /clear (or summarising with /compact) makes the next reply faster and cheaper.")
        if self.idle_return is IdleReturnMode.HINT:
            self.front.show(note, style="hint")
            return True
        choice = await self.front.choose(note, [("continue", "Continue this conversation"),
                                                ("clear", "Start a new session (/clear) with this message"),
                                                ("compact", "Compact first (/compact), then send"),
                                                ("cancel", "Don't send")])
        if choice in ("clear", "compact"):
            command = self.registry.find(choice)
            if command is not None and command.type is CommandType.LOCAL:
                await self._run_immediate(command, "")
        return choice != "cancel"

    # -- §3 handlePromptSubmit -----------------------------------------------------------------------
    async def handle_prompt_submit(self, text: str = "", *, mode: QueueMode = QueueMode.PROMPT,
                                   pasted: dict[Any, dict[str, Any]] | None = None,
                                   queued_commands: list[QueuedCommand] | None = None) -> SubmitPath:
        if queued_commands:                                                             # ①
            await self.execute_user_input(queued_commands)
            return SubmitPath.QUEUED_EXECUTED
        if mode is QueueMode.PROMPT and text.strip() in EXIT_ALIASES:                    # ②
            if self.registry.find("exit") is None:
                self.front.request_exit()
            else:
                await self.handle_prompt_submit("/exit", mode=mode)
            return SubmitPath.EXIT_ALIAS
        final = expand_pasted_text(text, pasted)
        slash = parse_slash(final) if mode is QueueMode.PROMPT else None
        command = self.registry.find(slash[0]) if slash else None
        if (command is not None and command.immediate and command.type is CommandType.LOCAL  # ③
                and self.guard.is_active):
            await self._run_immediate(command, slash[1] if slash else "")
            return SubmitPath.IMMEDIATE
        images = {k: v for k, v in (pasted or {}).items() if v.get("type") == "image"} or None
        if self.guard.is_active:                                                         # ④
            if mode not in (QueueMode.PROMPT, QueueMode.BASH):
                return SubmitPath.DROPPED
            if self.tracker.interruptible and self.abort is not None:
                self.abort.abort(AbortReason.INTERRUPT)
            # The loop folds NEXT prompts into the running query between turns; bash and slash
            # commands must really run, so they wait (LATER) for the query to end.
            later = mode is QueueMode.BASH or slash is not None
            self.conv.queue.enqueue(QueuedCommand(final.strip(), mode=mode, pasted_contents=images,
                                                  priority=Priority.LATER if later else Priority.NEXT,
                                                  pre_expansion_value=text.strip()))
            return SubmitPath.ENQUEUED
        await self.execute_user_input([QueuedCommand(final, mode=mode, pasted_contents=images,  # ⑤
                                                     pre_expansion_value=text)])
        return SubmitPath.EXECUTED

    async def _run_immediate(self, command: Any, args: str) -> None:
        """A LOCAL command, now (callers check the type: a PROMPT one must be queued instead)."""
        try:
            outcome = await command.run(self.front, args)
        except Exception as exc:
            self.front.show(f"/{command.name} failed: {exc}", style="error")
            return
        if outcome.text:
            self.front.show(outcome.text)

    # -- §4 executeUserInput -------------------------------------------------------------------------
    async def execute_user_input(self, commands: list[QueuedCommand]) -> None:
        abort = AbortController()
        self.abort = abort  # Esc during a `!command` or an @file read reaches it too
        try:
            self.guard.reserve()
            new_messages: list[Message] = []
            should_query, model = False, None
            allowed: tuple[str, ...] = ()
            for i, cmd in enumerate(commands):
                result = await process_user_input(self.front, self.registry, cmd, skip_attachments=i > 0,
                                                  abort=abort)
                for notice in result.notices:
                    self.front.show(notice, style="warning")
                if result.output:
                    self.front.show(result.output)
                new_messages += result.messages
                if i == 0:
                    should_query, allowed, model = result.should_query, result.allowed_tools, result.model
            if new_messages:
                await self.on_query(new_messages, abort, should_query, allowed, model)
        finally:
            self.guard.cancel_reservation()
            if self.abort is abort and not self.guard.is_active:
                self.abort = None

    # -- §5 onQuery ------------------------------------------------------------------------------------
    async def on_query(self, new_messages: list[Message], abort: AbortController, should_query: bool,
                       allowed_tools: tuple[str, ...] = (), model: str | None = None) -> None:
        generation = self.guard.try_start()
        if generation is None:  # a query is already running: queue the prompts, lose nothing
            for m in new_messages:
                if m.role == "user" and not m.is_meta and m.text:
                    self.conv.queue.enqueue(QueuedCommand(m.text, mode=QueueMode.PROMPT))
            return
        started = self.clock()
        self.abort = abort
        self.tracker.reset()
        try:
            conv = self.conv
            if not should_query:
                add_to_context(conv, new_messages)
                for m in new_messages:
                    self.front.render_event(UserEvent(m))
                return
            *context, prompt = new_messages
            add_to_context(conv, context)
            self.front.query_started()
            with query_overrides(conv, allowed_tools, model):
                async for ev in conv.submit(prompt, abort=abort):
                    self.tracker.observe(ev)
                    self.front.render_event(ev)
        except Exception as exc:  # a bug below must not take the session (or its transcript) down
            self.front.show(f"Query failed: {type(exc).__name__}: {exc}", style="error")
        finally:
            if self.guard.end(generation):
                self.tracker.reset()
                self.abort = None
                self.last_query_completion = self.clock()
                self._idle_prompted = False
                if should_query:
                    self.front.query_finished(self.clock() - started, abort.aborted)

    # -- the queue processor -----------------------------------------------------------------------------
    def next_batch(self) -> list[QueuedCommand]:
        """Slash and bash commands run alone; consecutive prompts of one mode run together."""
        items = [c for c in self.conv.queue.peek_all() if c.agent_id is None]
        if not items:
            return []
        first = items[0]
        if first.is_slash_command or first.mode is QueueMode.BASH:
            return [first]
        return [c for c in items if c.mode is first.mode and not c.is_slash_command]

    async def drain_queue(self) -> None:
        while not self.guard.is_active:
            batch = self.next_batch()
            if not batch:
                return
            self.conv.queue.remove(batch)
            await self.handle_prompt_submit(queued_commands=batch)

    def interrupt(self, reason: AbortReason = AbortReason.USER) -> bool:
        """Esc / Ctrl+C: abort what is running. True if something was."""
        if self.abort is None or self.abort.aborted:
            return False
        self.abort.abort(reason)
        return True
