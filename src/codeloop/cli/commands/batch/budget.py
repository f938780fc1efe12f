"""The batch-wide spend ledger behind `--max-total-usd`: live cost of every attempt, one total.

Each task attempt reports its cost so far under a key of its own (a retried or resumed task is a
new attempt, so money spent by a lost attempt still counts), from the usage of every model call
as its stream-json line arrives and finally from its result. The ledger says when the total
reaches the limit; the controls (local, Ray actor) hold one and tell running tasks to stop.
A model call in flight is counted when it ends: the overshoot is at most one call per task.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class StopCause(str, Enum):
    """Why the batch stopped a running task (the result line's `stopped_by`)."""
    INTERRUPT = "interrupt"          # second Ctrl+C or SIGTERM
    TIMEOUT = "timeout"              # --task-timeout
    BATCH_BUDGET = "batch_budget"    # --max-total-usd reached


class Ledger:
    """Cost by attempt key, and whether the total has reached the limit (None: no limit)."""

    def __init__(self, limit: float | None = None) -> None:
        self.limit = limit
        self._cost: dict[str, float] = {}
        self.reached = False

    def spend(self, key: str, usd: float) -> bool:
        """Record an attempt's cost so far (it only grows); returns whether the limit is reached."""
        if usd > self._cost.get(key, 0.0):
            self._cost[key] = usd
        if self.limit is not None and not self.reached and self.total() >= self.limit:
            self.reached = True
        return self.reached

    def total(self) -> float:
        return sum(self._cost.values())


class LiveCost:
    """A task's running cost from its stream-json assistant lines: each model call's usage, priced
    for its model. A message split over several lines repeats its id and usage: counted once."""

    def __init__(self) -> None:
        self._by_message: dict[str, float] = {}

    def add_line(self, obj: dict[str, Any]) -> bool:
        """Take one `assistant` line; returns whether the cost changed."""
        from codeloop.providers.pricing import cost_usd
        from codeloop.usage import Usage

        msg = obj.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            return False
        key = str(msg.get("id") or obj.get("uuid") or len(self._by_message))
        try:
            usd = cost_usd(Usage.from_api(msg["usage"]), str(msg.get("model") or ""))
        except (TypeError, ValueError):
            return False
        if self._by_message.get(key) == usd:
            return False
        self._by_message[key] = usd
        return True

    def total(self) -> float:
        return sum(self._by_message.values())
