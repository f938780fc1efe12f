"""Live progress of a batch: done/failed/running, cost so far, ETA.

On a terminal a rich status line stays at the bottom and each finished task prints one line
above it; elsewhere (CI logs, pipes) every event is one plain line on stderr, nothing redrawn.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from codeloop.cli.commands.batch.results import Outcome


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    def __init__(self, total: int, *, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.total, self.done, self.failed, self.running, self.cost = total, 0, 0, 0, 0.0
        self.started = time.monotonic()
        self._live = None
        self._console = None
        if self.tty:
            from rich.console import Console
            from rich.live import Live
            self._console = Console(file=self.stream, highlight=False)
            self._live = Live(self._status(), console=self._console, refresh_per_second=4, transient=True)
            self._live.start()

    def _eta(self) -> str:
        if not self.done:
            return "ETA –"
        rate = self.done / max(time.monotonic() - self.started, 1e-6)
        return f"ETA {_duration((self.total - self.done) / rate)}"

    def _status(self) -> str:
        return (f"{self.done}/{self.total} done · {self.failed} failed · {self.running} running · "
                f"${self.cost:.4f} · {self._eta()}")

    def _line(self, text: str) -> None:
        if self._console is not None:
            self._console.print(text, markup=False)
            if self._live is not None:  # None once closed: a late note still prints
                self._live.update(self._status())
        else:
            self.stream.write(f"codeloop batch: {text}\n")
            self.stream.flush()

    def started_task(self, task_id: str) -> None:
        self.running += 1
        if self._live is not None:
            self._live.update(self._status())

    def unstarted(self, task_id: str) -> None:
        """A task handed back without running (the batch stopped before it began)."""
        self.running = max(0, self.running - 1)
        if self._live is not None:
            self._live.update(self._status())

    def finished(self, record: dict[str, Any]) -> None:
        self.running = max(0, self.running - 1)
        self.done += 1
        outcome = record.get("outcome")
        if outcome != Outcome.SUCCESS.value:
            self.failed += 1
        cost = record.get("total_cost_usd") or 0.0
        self.cost += cost
        turns = record.get("num_turns")
        wall = (record.get("wall_ms") or 0) / 1000
        detail = f"{record['id']} {outcome}" + (f", {turns} turns" if turns is not None else "")
        detail += f", ${cost:.4f}, {wall:.1f}s"
        if outcome != Outcome.SUCCESS.value and record.get("error"):
            detail += f" — {record['error'].splitlines()[0][:160]}"
        self._line(f"[{self._status()}] {detail}")

    def note(self, text: str) -> None:
        self._line(text)

    def tick(self) -> None:
        if self._live is not None:
            self._live.update(self._status())

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
