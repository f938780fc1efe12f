"""QueryGuard (spec 004 §5.1): the one-query-at-a-time state machine of an interactive session.

    idle ──reserve()──▶ dispatching ──try_start()──▶ running ──end(generation)──▶ idle
                 ◀──cancel_reservation()──┘

`try_start()` hands out a monotonically increasing generation number. `end()` only returns the
guard to idle for the generation that is running, so a cleanup that runs late or twice (an
interrupted query's `finally` after the next query started) cannot tear down the newer query.
Pure and synchronous: everything runs on one event loop, so no locks are needed.
"""

from __future__ import annotations

from enum import Enum


class GuardStatus(str, Enum):
    IDLE = "idle"
    DISPATCHING = "dispatching"
    RUNNING = "running"


class QueryGuard:
    def __init__(self) -> None:
        self._status = GuardStatus.IDLE
        self._generation = 0

    @property
    def status(self) -> GuardStatus:
        return self._status

    @property
    def generation(self) -> int:
        """The generation of the latest query started (0 before the first)."""
        return self._generation

    @property
    def is_active(self) -> bool:
        """True while input is being processed or a query is running: new input must queue."""
        return self._status is not GuardStatus.IDLE

    def reserve(self) -> bool:
        """idle → dispatching. False (and no change) when the guard is not idle."""
        if self._status is not GuardStatus.IDLE:
            return False
        self._status = GuardStatus.DISPATCHING
        return True

    def cancel_reservation(self) -> None:
        """dispatching → idle; a no-op otherwise (the safety net in executeUserInput's finally)."""
        if self._status is GuardStatus.DISPATCHING:
            self._status = GuardStatus.IDLE

    def try_start(self) -> int | None:
        """→ running, returning the new generation; None when a query is already running.

        Starting from idle is allowed (a caller that skipped the reservation), as in Claude Code.
        """
        if self._status is GuardStatus.RUNNING:
            return None
        self._status = GuardStatus.RUNNING
        self._generation += 1
        return self._generation

    def end(self, generation: int) -> bool:
        """running → idle for the current generation only. True when this call did the cleanup."""
        if self._status is not GuardStatus.RUNNING or generation != self._generation:
            return False
        self._status = GuardStatus.IDLE
        return True
