"""The REPL's flow of input and exit: what makes the screen show things in the order they
happened, and what keeps work from being lost on the way out.

Owns the echo of submitted input (at once when idle; input typed while the model works is drawn
when it is taken up — folded into the running query, or run after it), the Ctrl+D confirmation
while the model works, the Ctrl+O transcript toggle and the subagent/Bash progress feed. A mixin of `repl.Repl`. (The
questions asked before the REPL starts are `cli.startup.interactive`'s.)
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
