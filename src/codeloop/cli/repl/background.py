"""The REPL's side of background work: what wakes the idle session, what the screen says when a
background task ends, and Ctrl+B (move the running foreground commands to the background).

A finished background shell or agent enters the conversation's command queue as a task
notification (`session.background`). While a query runs, the loop folds it in between turns; when
the session is idle at the prompt — the user typing nothing — the queue's change wakes it here and
the dispatcher runs it as a new turn at once (the same path as a scheduled prompt that comes due),
so the model hears of it without waiting for the user's next message. Either way the notification
reaches the screen as one line (`● Background command "…" completed (exit code 0)`) where the model
was told, then the model's answer. A mixin of `repl.Repl`.
"""

from __future__ import annotations

import re
from typing import Any

_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
NOTIFICATION_OPEN = "<task-notification>"


def wakes_idle_session(cmd: Any) -> bool:
    """Whether a queued command runs as soon as the session is idle: a scheduled prompt that came
    due, or the main thread's notice of a background task that ended."""
    from codeloop.loop.queue import Priority, QueueMode

    if cmd.agent_id is not None:
        return False
    return cmd.mode is QueueMode.TASK_NOTIFICATION or (cmd.priority is Priority.LATER and cmd.mode is QueueMode.PROMPT)


def notification_summary(text: str) -> str | None:
    """The one line a task notification shows on screen, or None when `text` is not one."""
    if not text.startswith(NOTIFICATION_OPEN):
        return None
    found = _SUMMARY.search(text)
    return found.group(1).strip() if found else "A background task ended"


class BackgroundMixin:
    conv: Any
    dispatcher: Any
    exiting: bool
    _scheduled_drain: bool

    def show(self, text: str, *, style: str = "") -> None: ...
    def flash(self, text: str) -> None: ...
    def _spawn(self, coro: Any) -> None: ...
    def _invalidate(self) -> None: ...

    def _queue_changed(self) -> None:
        """Something entered (or left) the queue: when the session is idle and it is a due scheduled
        prompt (CronCreate, ScheduleWakeup) or a background task's notification, run it now; a
        running query takes it up itself (between turns, or the dispatcher drains the queue when it
        ends)."""
        if self._scheduled_drain or self.exiting or self.dispatcher.guard.is_active:
            return
        if any(wakes_idle_session(c) for c in self.conv.queue.peek_all()):
            self._scheduled_drain = True

            async def drain() -> None:
                try:
                    await self.dispatcher.drain_queue()
                finally:
                    self._scheduled_drain = False
            self._spawn(drain())

    def _show_notification(self, ev: Any) -> None:
        """A task notification the model is being told of: its one line, in the transcript."""
        from codeloop.events import UserEvent

        if not isinstance(ev, UserEvent) or not ev.message.is_meta or ev.message.role != "user":
            return
        line = notification_summary(ev.message.text)
        if line is not None:
            self.show(f"● {line}", style="info")

    # -- Ctrl+B ------------------------------------------------------------------------------------
    def _foreground(self) -> Any:
        tasks = self.conv.tool_context.background if self.conv is not None else None
        return tasks

    def foreground_count(self) -> int:
        """How many foreground commands Ctrl+B would move to the background now."""
        tasks = self._foreground()
        return len(tasks.foreground) if tasks is not None else 0

    def to_background(self) -> None:
        """Ctrl+B: every running foreground Bash command goes on in the background; its tool call
        returns at once with the task id (the model is told when it ends)."""
        tasks = self._foreground()
        moved = tasks.background_foreground() if tasks is not None else 0
        if moved:
            self.flash(f"Moved {moved} command{'s' if moved != 1 else ''} to the background")
        self._invalidate()
