"""One cancellation object per query, carrying the reason it was aborted."""

from __future__ import annotations

import asyncio
from enum import Enum


class AbortReason(str, Enum):
    USER = "user"                      # Esc / SIGINT: the user stopped the turn
    INTERRUPT = "interrupt"            # new input was submitted while busy
    END_CONVERSATION = "end_conversation"
    SIGNAL = "signal"                  # SIGTERM and friends
    TIMEOUT = "timeout"
    BUDGET = "budget"                  # --max-budget-usd reached


class AbortController:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: AbortReason | None = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self, reason: AbortReason = AbortReason.USER) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    async def wait(self) -> AbortReason | None:
        await self._event.wait()
        return self.reason
