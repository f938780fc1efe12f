"""Stage 5 of the pre-query pipeline: summary compaction near the model's limit.

Fires once the next request would reach (context window − output reserve) × ratio (default
92 %, `CODELOOP_AUTOCOMPACT_PCT`), and stops trying after three failures in a row so a broken
summariser cannot make every turn slower; the reactive path remains as the last resort. The
breaker says so when it trips, and re-arms (saying so too) after any compaction that succeeds —
automatic, reactive or /compact — since a summariser that works again deserves another chance.
The notices wait in `CompactTracking.notices` until the pipeline hands them to the loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from codeloop.events import SystemEvent
from codeloop.loop.recovery import CompactOutcome
from codeloop.messages import Message
from codeloop.providers.models import context_window, output_reserve

DEFAULT_AUTOCOMPACT_RATIO = 0.92
MAX_CONSECUTIVE_COMPACT_FAILURES = 3


def autocompact_ratio() -> float:
    raw = os.environ.get("CODELOOP_AUTOCOMPACT_PCT", "").strip().rstrip("%")
    try:
        pct = float(raw)
    except ValueError:
        return DEFAULT_AUTOCOMPACT_RATIO
    return pct / 100 if 0 < pct <= 100 else DEFAULT_AUTOCOMPACT_RATIO


def autocompact_threshold(model: str, *, threshold_ratio: float | None = None,
                          output_reserve_tokens: int | None = None) -> int:
    ratio = autocompact_ratio() if threshold_ratio is None else threshold_ratio
    reserve = output_reserve(model) if output_reserve_tokens is None else output_reserve_tokens
    return int((context_window(model) - reserve) * ratio)


def should_autocompact(token_estimate: int, model: str, *, threshold_ratio: float | None = None,
                       output_reserve: int | None = None) -> bool:
    """True once the next request reaches (window − output reserve) × ratio (default 92%)."""
    return token_estimate >= autocompact_threshold(model, threshold_ratio=threshold_ratio,
                                                   output_reserve_tokens=output_reserve)


@dataclass
class CompactTracking:
    """Autocompact bookkeeping across turns (mutable; the pipeline owns one per conversation)."""
    consecutive_failures: int = 0
    compactions: int = 0
    last_error: str | None = None
    notices: list[SystemEvent] = field(default_factory=list)   # for the user, not yet shown

    @property
    def tripped(self) -> bool:
        return self.consecutive_failures >= MAX_CONSECUTIVE_COMPACT_FAILURES

    def failed(self, error: str) -> None:
        self.consecutive_failures += 1
        self.last_error = error
        if self.consecutive_failures == MAX_CONSECUTIVE_COMPACT_FAILURES:
            self.notices.append(SystemEvent(
                "autocompact_disabled",
                f"Autocompact is off after {self.consecutive_failures} failed attempts in a row (last error: "
                f"{error}). Run /compact to summarise by hand; a compaction that succeeds turns it back on.",
                "warning", {"failures": self.consecutive_failures, "last_error": error}))

    def succeeded(self) -> None:
        """Any successful compaction (automatic, reactive, /compact) re-arms the breaker."""
        if self.tripped:
            self.notices.append(SystemEvent(
                "autocompact_enabled", "Autocompact is back on: a compaction succeeded.", "info",
                {"failures": self.consecutive_failures, "last_error": self.last_error}))
        self.consecutive_failures = 0
        self.last_error = None

    def drain_notices(self) -> list[SystemEvent]:
        out, self.notices = self.notices, []
        return out


async def autocompact(messages: list[Message], compactor: Any, tracking: CompactTracking, *,
                      token_estimate: int, model: str, threshold_ratio: float | None = None,
                      output_reserve: int | None = None, **compact_kwargs: Any) -> CompactOutcome | None:
    """Compact when over the threshold; after 3 failures in a row stop trying (the breaker).

    A failed autocompact is not fatal: the request still goes out, and the reactive path
    (prompt-too-long recovery) remains as the last resort.
    """
    if compactor is None or tracking.tripped:
        return None
    if not should_autocompact(token_estimate, model, threshold_ratio=threshold_ratio,
                              output_reserve=output_reserve):
        return None
    try:
        outcome = await compactor.compact(messages, trigger="auto", **compact_kwargs)
    except Exception as err:  # noqa: BLE001 — any failure counts towards the breaker
        tracking.failed(str(err) or type(err).__name__)
        return None
    tracking.succeeded()
    tracking.compactions += 1
    outcome.pre_tokens = token_estimate
    return outcome
