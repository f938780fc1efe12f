"""The REPL's flow of input and exit: what makes the screen show things in the order they
happened, and what keeps work from being lost on the way out.

Owns the echo of submitted input (at once when idle; input typed while the model works is drawn
when it is taken up — folded into the running query, or run after it), its withdrawal (Esc puts
what is still queued back in the input, as Claude Code does, instead of sending it after the
interrupt), the Ctrl+D confirmation while the model works, the Ctrl+O transcript toggle and the
subagent/Bash progress feed. A mixin of `repl.Repl`. (The questions asked before the REPL starts
are `cli.startup.interactive`'s.)
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.events import Event

EXIT_CONFIRM_WINDOW_S = 2.0


class FlowMixin:
    conv: Any
    renderer: Any
    dispatcher: Any
    queued_echo: list[str]
    registry: Any
    pastes: dict[int, dict[str, Any]]
    _last_ctrl_d: float

    def show(self, text: str, *, style: str = "") -> None: ...
    def flash(self, text: str) -> None: ...
    def request_exit(self) -> None: ...
    def _invalidate(self) -> None: ...

    def _side_event(self, ev: Event) -> None:
        self.renderer.progress.side_event(ev)

    def _echo_or_queue(self, text: str) -> None:
        """Echo input now, unless it waits for the running query (then when it is taken up)."""
        if not text.strip():
            return
        if self.busy() and not self._runs_now(text):
            self.queued_echo.append(text)
        else:
            self._echo(text)

    def _runs_now(self, text: str) -> bool:
        """A local command marked immediate runs while the model works (/status): echo it now."""
        from codeloop.input.commands import CommandType, parse_slash

        slash = parse_slash(text.strip()) if text.strip().startswith("/") else None
        cmd = self.registry.find(slash[0]) if slash else None
        return cmd is not None and cmd.type is CommandType.LOCAL and bool(cmd.immediate)

    def _echo(self, text: str) -> None:
        self.show("> " + text.replace("\n", "\n  "), style="bold")

    def _echo_queued(self, value: str) -> None:
        """Queued input is drawn when it is taken up (after the line of what it interrupted)."""
        match = next((q for q in self.queued_echo if q.strip() == value.strip()), None)
        if match is not None:
            self.queued_echo.remove(match)
            self._echo(match)

    def withdraw_queued(self, buffer: Any) -> bool:
        """Take back what the user queued and is not yet taken up: into the input, oldest first and
        before the draft, with the images pasted with it. False when nothing was queued."""
        from prompt_toolkit.document import Document

        from codeloop.loop.queue import QueueMode

        mine = [c for c in self.conv.queue.peek_all() if c.agent_id is None and c.pre_expansion_value is not None
                and c.mode in (QueueMode.PROMPT, QueueMode.BASH)]   # typed here: not cron, not notices
        if not mine:
            return False
        self.conv.queue.remove(mine)
        texts = []
        for cmd in mine:
            typed = cmd.pre_expansion_value or ""
            if "[Pasted text #" in typed:   # the pasted text itself is gone from the input: its expansion
                typed = cmd.value
            texts.append(f"!{typed}" if cmd.mode is QueueMode.BASH else typed)
            self.pastes.update({k: v for k, v in (cmd.pasted_contents or {}).items() if isinstance(k, int)})
            echo = next((q for q in self.queued_echo if q.strip().removeprefix("!").strip() == typed.strip()), None)
            if echo is not None:
                self.queued_echo.remove(echo)
        joined = "\n".join(texts)
        draft = buffer.text
        buffer.document = Document(joined + ("\n" + draft if draft else ""), cursor_position=len(joined))
        self._invalidate()
        return True

    def busy(self) -> bool:
        return self.dispatcher.guard.is_active

    def ctrl_d(self) -> None:
        """On an empty prompt: exit — but while the model works (or a subagent runs), only when
        pressed again, so a slip of the finger does not end the work."""
        now = time.monotonic()
        if self.busy() and now - self._last_ctrl_d > EXIT_CONFIRM_WINDOW_S:
            self._last_ctrl_d = now
            sub = any(r.name in ("Task", "Agent") for r in self.renderer.progress.running.values())
            self.flash(f"Claude is working{' (a subagent is running)' if sub else ''} · "
                       "press Ctrl-D again to stop it and exit")
            return
        self.request_exit()

    def toggle_transcript(self) -> None:
        self.renderer.toggle_expanded()
        self._invalidate()
