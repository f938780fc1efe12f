"""Watching one running loop process: its stream-json lines, its live cost, and the batch's stops.

Algorithm, every poll (0.2 s): read whatever lines arrived (the `result` line is kept; `api_retry`
lines for 429/529 bump the batch's shared backoff; each `assistant` line's usage adds to the
task's live cost, reported to the batch's ledger) → check the stops in order: the batch was
interrupted, the task's deadline passed, the batch's budget was reached → on the first one, send
SIGINT (the loop aborts cleanly and still prints its result), and SIGKILL after a grace period.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from typing import Any, Protocol

from codeloop.cli.commands.batch.budget import LiveCost, StopCause

RATE_LIMIT_ERRORS = ("rate_limit", "overloaded")
INTERRUPT_GRACE_S = 20.0
_POLL_S = 0.2


class Control(Protocol):
    """What a running task shares with the batch: stop flags, the rate-limit backoff, the ledger."""

    def interrupted(self) -> bool: ...
    def backoff(self, seconds: float) -> None: ...
    def spend(self, key: str, usd: float) -> None: ...
    def over_budget(self) -> bool: ...


class Watch:
    """Reads the loop's stream-json lines while watching the stop flags and the deadline."""

    def __init__(self, proc: subprocess.Popen, control: Control, timeout_s: float | None, key: str) -> None:
        self.proc, self.control, self.key = proc, control, key
        self.deadline = time.monotonic() + timeout_s if timeout_s else None
        self.result: dict[str, Any] | None = None
        self.rate_limited = 0
        self.cost = LiveCost()
        self.stopped: StopCause | None = None
        self._signalled_at: float | None = None
        self._buf = b""

    def _line(self, raw: bytes) -> None:
        try:
            obj = json.loads(raw)
        except ValueError:
            return
        if not isinstance(obj, dict):
            return
        kind = obj.get("type")
        if kind == "result":
            self.result = obj
        elif kind == "assistant":
            if self.cost.add_line(obj):
                self.control.spend(self.key, self.cost.total())
        elif kind == "system" and obj.get("subtype") == "api_retry" and obj.get("error") in RATE_LIMIT_ERRORS:
            self.rate_limited += 1
            self.control.backoff(max(1.0, (obj.get("retry_delay_ms") or 0) / 1000))

    def _check_stop(self) -> None:
        now = time.monotonic()
        if self._signalled_at is None:
            if self.control.interrupted():
                self.stopped = StopCause.INTERRUPT
            elif self.deadline is not None and now >= self.deadline:
                self.stopped = StopCause.TIMEOUT
            elif self.control.over_budget():
                self.stopped = StopCause.BATCH_BUDGET
            if self.stopped is not None:
                self._signalled_at = now
                self._signal(signal.SIGINT)  # the loop aborts cleanly and still prints its result
        elif now - self._signalled_at > INTERRUPT_GRACE_S:
            self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        try:
            self.proc.send_signal(signum)
        except ProcessLookupError:
            pass

    def run(self) -> None:
        assert self.proc.stdout is not None  # run_task opens it as a pipe
        fd = self.proc.stdout.fileno()
        while True:
            ready, _, _ = select.select([fd], [], [], _POLL_S)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self._buf += chunk
                *lines, self._buf = self._buf.split(b"\n")
                for raw in lines:
                    if raw.strip():
                        self._line(raw)
            self._check_stop()
        if self._buf.strip():
            self._line(self._buf)
        while True:
            try:
                self.proc.wait(timeout=_POLL_S)
                return
            except subprocess.TimeoutExpired:
                self._check_stop()
