"""The interactive REPL: `codeloop` without -p.

Owns the terminal session: the trust question, the prompt_toolkit input (history, multi-line,
paste), the always-available prompt while a query runs (input typed meanwhile is dispatched —
queued or run at once — by `input.dispatch`), inline choices (permission prompts, the /resume
picker), the status toolbar and an orderly exit. Rendering is `repl.render`, keys `repl.keys`,
the permission dialog `repl_permission`, the live status `repl.progress`, background work (idle
wake-ups, Ctrl+B) `repl.background`. The prompt line is
erased on Enter and echoed here: at once when idle, and — for input typed while the model works —
when it is actually taken up, so the screen shows things in the order they happened.

prompt_toolkit and rich are imported only here and below, so `codeloop -p` never loads them.
Esc, Ctrl+C and SIGINT only ever abort the running query (Esc also puts what was queued for it
back in the input): the loop's abort paths answer every tool_use, and the transcript is synced
and closed on the way out.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.abort import AbortReason
from codeloop.cli.repl.background import BackgroundMixin
from codeloop.cli.repl.dialogs.choice import ChoiceMixin, PendingChoice  # noqa: F401 (PendingChoice re-exported)
from codeloop.cli.repl.footer import FooterMixin
from codeloop.cli.repl.input_flow import FlowMixin
from codeloop.loop.queue import QueueMode

if TYPE_CHECKING:
    from codeloop.events import Event
    from codeloop.session.conversation import Conversation
    from codeloop.session.options import RunOptions
    from codeloop.tools.base import PermissionDecision, Tool

CTRL_C_EXIT_WINDOW_S = 2.0
FLASH_S = 2.5


class Repl(ChoiceMixin, FlowMixin, FooterMixin, BackgroundMixin):
    def __init__(self, options: RunOptions, registry: Any, *, idle_mode: Any) -> None:
        from codeloop.cli.repl.render import Renderer
        from codeloop.input.dispatch import Dispatcher

        self.options = options
        self.conv: Conversation = None  # type: ignore[assignment]  # set by open(), before anything runs
        self.registry = registry
        self.renderer = Renderer(self._write, color=not os.environ.get("NO_COLOR"))
        self.dispatcher = Dispatcher(self, registry, idle_return=idle_mode)
        self.started_bypass = options.permissions.mode.value == "bypassPermissions"
        self.pending: PendingChoice | None = None
        self.picker: Any = None                 # a repl.picker.Picker while one is open
        self._choice_lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.exiting = False
        self.pastes: dict[int, dict[str, Any]] = {}
        self._paste_ids = 0
        self._last_ctrl_c = self._last_ctrl_d = 0.0
        self._flash, self._flash_until = "", 0.0
        self.session: Any = None
        self.queued_echo: list[str] = []   # input typed while busy, drawn when taken up
        self.started_at = time.monotonic()
        self._scheduled_drain = False
        self.renderer.progress.live_output = lambda: self.conv.tool_context.live_output

    async def open(self) -> list[str]:
        """The session, from the one assembly: this REPL answers its permission prompts and hears
        its side events (subagents, background tasks). Warnings for the banner."""
        from codeloop.cli.startup.local_offer import progress_bar, startup_notice
        from codeloop.session.assembly import SessionHost, open_session

        update, finish = progress_bar()
        try:
            self.conv, warnings = await open_session(self.options, SessionHost(
                ask_user=self.ask_user, listeners=[self._side_event], progress=update, notice=startup_notice))
        finally:
            finish()
        self.conv.queue.subscribe(self._queue_changed)   # successors keep this queue
        return warnings

    @property
    def cwd(self) -> Path:
        return self.conv.config.cwd

    # -- output ---------------------------------------------------------------------------------------
    @staticmethod
    def _write(s: str) -> None:
        sys.stdout.write(s)
        sys.stdout.flush()

    def show(self, text: str, *, style: str = "") -> None:
        self.renderer.show(text, style)

    def flash(self, text: str, seconds: float = FLASH_S) -> None:
        self._flash, self._flash_until = text, time.monotonic() + seconds
        self._invalidate()

    def _invalidate(self) -> None:
        if self.session is not None and self.session.app.is_running:
            self.session.app.invalidate()

    # -- FrontEnd (input.dispatch) ----------------------------------------------------------------------
    def render_event(self, ev: Event) -> None:
        from codeloop.events import AttachmentEvent

        if isinstance(ev, AttachmentEvent) and ev.attachment.get("type") == "queued_command":
            self._echo_queued(str(ev.attachment.get("prompt") or ""))
        self._show_notification(ev)   # a background task's end, where the model is told of it
        self.renderer.event(ev)

    def query_started(self) -> None:
        self.renderer.hold_text = self.conv.hooks.lifecycle.displays()
        self.renderer.query_started()

    def query_finished(self, duration_s: float, aborted: bool) -> None:
        self.renderer.query_finished(duration_s, aborted)
        for text in self.queued_echo:  # whatever is still queued runs next: draw it now
            self._echo(text)
        self.queued_echo.clear()
        self._invalidate()

    async def render_events(self, events: AsyncIterator[Event]) -> None:
        self.renderer.query_started()
        try:
            async for ev in events:
                self.renderer.event(ev)
        finally:
            self.renderer.busy = False

    async def switch_conversation(self, conv: Conversation, *, reason: str) -> None:
        from codeloop.cli.repl.progress import restore_cost

        old, self.conv = self.conv, conv   # a successor (session.assembly): same host, same listeners
        await old.aclose(reason)
        if reason == "resume" and conv.messages:
            restore_cost(conv)
            self.renderer.history(conv.messages)
        if conv.ended_by_model:
            self.show("This session was ended by the model. Start a new session (or /clear).", style="warning")

    async def run_in_terminal(self, fn: Any) -> Any:
        """Give `fn` the terminal (the editor /memory opens); the prompt steps aside meanwhile."""
        from prompt_toolkit.application import run_in_terminal

        return await run_in_terminal(fn)

    def request_exit(self) -> None:
        self.exiting = True
        if self.session is not None and self.session.app.is_running:
            self.session.app.exit(exception=EOFError())

    # -- permission prompts -------------------------------------------------------------------------------
    async def ask_user(self, tool: Tool, inp: Any, block: dict[str, Any]) -> PermissionDecision:
        from codeloop.cli.repl.dialogs.permission import ask_user

        return await ask_user(self, tool, inp, block)

    # -- key actions ---------------------------------------------------------------------------------------
    def interrupt(self) -> None:
        if self.dispatcher.interrupt(AbortReason.USER):
            self.flash("Interrupted")

    def ctrl_c(self, buffer: Any) -> None:
        now = time.monotonic()
        if now - self._last_ctrl_c < CTRL_C_EXIT_WINDOW_S:
            self.request_exit()
            return
        self._last_ctrl_c = now
        if self.pending is not None:
            self.answer_choice(None)
        elif buffer.text:
            buffer.reset()
        else:
            self.dispatcher.interrupt(AbortReason.USER)
        self.flash("Press Ctrl-C again to exit", CTRL_C_EXIT_WINDOW_S)  # gone when it no longer holds

    def cycle_permission_mode(self) -> None:
        from codeloop.permissions.policy import PermissionMode

        cycle = [PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN, PermissionMode.AUTO]
        if self.started_bypass:
            cycle.append(PermissionMode.BYPASS)
        policy = self.conv.config.policy
        nxt = cycle[(cycle.index(policy.mode) + 1) % len(cycle)] if policy.mode in cycle else cycle[0]
        policy.set_mode(nxt)
        self._invalidate()

    def add_paste(self, text: str) -> str:
        from codeloop.input.process import paste_placeholder

        return paste_placeholder(self.keep_paste({"type": "text", "content": text}), text)

    def keep_paste(self, entry: dict[str, Any]) -> int:
        self._paste_ids += 1
        self.pastes[self._paste_ids] = entry
        return self._paste_ids

    def app_buffer_text(self) -> str:
        return self.session.default_buffer.text if self.session is not None else ""

    # -- the toolbar -----------------------------------------------------------------------------------------
    def toolbar(self) -> Any:
        from codeloop.permissions.policy import PermissionMode

        parts: list[tuple[str, str]] = []
        status = self.renderer.status_lines(self.conv.cost_usd, self.conv.config.model)
        if self.picker is not None:
            parts += self.picker.fragments(self.app_buffer_text())
        elif self.pending is not None:
            parts += self.choice_fragments()
        elif status:
            parts.append(("class:status", "\n".join(status) + "\n"))
        parts += self.footer_parts()     # the custom status line, the vim mode (repl.footer)
        mode = self.conv.config.policy.mode
        label = {PermissionMode.ACCEPT_EDITS: "⏵⏵ accept edits on", PermissionMode.PLAN: "⏸ plan mode on",
                 PermissionMode.BYPASS: "⏵⏵ bypass permissions on", PermissionMode.AUTO: "⏵⏵ auto mode on",
                 PermissionMode.DONT_ASK: "dontAsk mode"}.get(mode, "? for shortcuts")
        parts.append(("class:mode", f"  {label} (shift+tab to cycle)"))
        if self.foreground_count():
            parts.append(("class:mode", " · ctrl+b to run in background"))
        queued = len(self.conv.queue)
        if queued:
            parts.append(("class:queued", f" · {queued} queued"))
        if self._flash and time.monotonic() < self._flash_until:
            parts.append(("class:flash", f" · {self._flash}"))
        return parts

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            self.poke_footer()
            if self.renderer.busy or (self._flash and time.monotonic() < self._flash_until + 0.2):
                self._invalidate()

    # -- the loop ------------------------------------------------------------------------------------------------
    def _submit(self, text: str) -> None:
        pasted = {k: v for k, v in self.pastes.items() if f"[Pasted text #{k}" in text or f"[Image #{k}" in text} \
            or None
        self.pastes = {}
        self._echo_or_queue(text)
        mode = QueueMode.PROMPT
        if text.startswith("!") and len(text.strip()) > 1:
            mode, text = QueueMode.BASH, text[1:].strip()
        self._spawn(self.dispatcher.on_submit(text, mode=mode, pasted=pasted))

    def send_command(self, text: str) -> None:
        """A slash command sent by a user key binding (spec 004 §2.1 fromKeybinding)."""
        self._spawn(self.dispatcher.on_submit(text, from_keybinding=True))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            self.show(f"Internal error: {type(exc).__name__}: {exc}", style="error")

    def _make_session(self) -> Any:
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.styles import Style

        from codeloop.cli.repl.complete import FileIndex, MenuRoomSession, ReplCompleter
        from codeloop.cli.repl.keys import build_bindings
        from codeloop.session.store import config_dir

        cfg = config_dir()
        cfg.mkdir(parents=True, exist_ok=True)
        style = Style.from_dict({"bottom-toolbar": "noreverse", "status": "ansiyellow", "mode": "ansibrightblack",
                                 "queued": "ansicyan", "flash": "ansiyellow", "choice": "bold ansicyan", "vim": "bold",
                                 "prompt": "bold"})
        keys = self.options.settings.merged.get("keybindings") or {}
        bindings, problems = build_bindings(self, keys if isinstance(keys, dict) else {})
        if not isinstance(keys, dict):
            problems.append("keybindings: expected an object of key → /command; ignored")
        for problem in problems:
            self.show(problem, style="warning")
        session: Any = MenuRoomSession(history=FileHistory(str(cfg / "history")), multiline=True,
                                       key_bindings=bindings, bottom_toolbar=self.toolbar, style=style,
                                       editing_mode=self.editing_mode(),   # vim or not (repl.footer)
                                       enable_history_search=False, erase_when_done=True,
                                       completer=ReplCompleter(self.registry, FileIndex(self.conv.config.cwd),
                                                               lambda: self.conv),
                                       complete_while_typing=True, complete_in_thread=True,
                                       prompt_continuation=lambda width, line, soft: " " * width)
        session.app.ttimeoutlen = 0.05   # a bare Esc is recognised quickly
        session.app.timeoutlen = 0.3     # …while Esc+Enter still reads as Alt+Enter
        return session

    async def run(self, warnings: list[str], first_prompt: str | None = None) -> int:
        from prompt_toolkit.patch_stdout import patch_stdout

        self.session = self._make_session()
        loop = asyncio.get_running_loop()
        try:  # `kill -INT` (no tty key): interrupt the query, never the process
            loop.add_signal_handler(signal.SIGINT, lambda: self.dispatcher.interrupt(AbortReason.USER))
        except (NotImplementedError, RuntimeError):
            pass
        ticker = asyncio.create_task(self._ticker())
        self.start_footer()
        with patch_stdout(raw=True):
            self._banner(warnings)
            if first_prompt and first_prompt.strip():  # `codeloop "question"` submits it at once
                self._submit(first_prompt)
            while not self.exiting:
                try:
                    text = await self.session.prompt_async([("class:prompt", "> ")], handle_sigint=False)
                except EOFError:
                    break
                except KeyboardInterrupt:
                    continue
                self._submit(text)
            await self._shutdown()
        ticker.cancel()
        self.stop_footer()
        from codeloop.cli.repl.progress import exit_summary
        self._write(exit_summary(self.conv, time.monotonic() - self.started_at))
        # spec 000: a session the model ended is no successful run — unless /clear began a new one
        return 1 if self.conv.ended_by_model else 0

    def _banner(self, warnings: list[str]) -> None:
        from codeloop.version import __version__

        c = self.conv
        self.show(f"✻ codeloop {__version__} · {c.config.model} · {c.config.cwd}", style="bold")
        self.show("  /help for commands · Esc interrupts · Ctrl+C twice exits", style="info")
        for w in warnings:
            self.show(f"⚠ {w}", style="warning")
        if c.messages:
            from codeloop.cli.repl.progress import restore_cost
            restore_cost(c)
            self.show(f"Resumed session {c.session_id} ({len(c.messages)} messages)", style="info")
            self.renderer.history(c.messages)
        if c.ended_by_model:
            self.show("This session was ended by the model. Start a new session (or /clear).", style="warning")

    async def _shutdown(self) -> None:
        self.dispatcher.interrupt(AbortReason.USER)
        if self.tasks:  # let the abort paths answer every tool_use and sync the transcript
            await asyncio.wait(list(self.tasks), timeout=15)
        try:
            await self.conv.aclose("prompt_input_exit")
        finally:
            await self.conv.provider.aclose()


ENDED_ON_CONTINUE = ("Session {session_id} was ended by the model (EndConversation) and cannot be continued. "
                     "Start a new session.")


def run_repl(options: RunOptions) -> int:
    from codeloop.input.commands import CommandRegistry
    from codeloop.input.dispatch import IdleReturnMode
    from codeloop.session.options import SetupError
    from codeloop.session.store import config_dir

    registry = CommandRegistry.load(options.cwd, config_dir(), plugins=options.plugins)
    idle_mode = IdleReturnMode.resolve(options.settings.merged.get("idleReturn"))

    async def main() -> int:
        from codeloop.cli.lifecycle import install_daemon_executor
        install_daemon_executor(asyncio.get_running_loop())   # a stuck tool thread never blocks /exit
        repl = Repl(options, registry, idle_mode=idle_mode)
        try:
            warnings = await repl.open()
        except SetupError as exc:
            sys.stderr.write(f"Error: {exc}\n")
            return 1
        if repl.conv.ended_by_model:   # spec 000 flow 8: continuing an ended session prints the notice, exits 1
            sys.stderr.write(f"Error: {ENDED_ON_CONTINUE.format(session_id=repl.conv.session_id)}\n")
            await repl._shutdown()
            return 1
        return await repl.run([*warnings, *registry.warnings], first_prompt=options.prompt)

    return asyncio.run(main())
