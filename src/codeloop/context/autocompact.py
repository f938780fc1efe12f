"""Stage 5 of the pre-query pipeline: summary compaction near the model's limit.

Fires once the next request would reach (context window − output reserve) × ratio (default
92 %, `CODELOOP_AUTOCOMPACT_PCT`), and stops trying after three failures in a row so a broken
summariser cannot make every turn slower; the reactive path remains as the last resort.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

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

    @property
    def tripped(self) -> bool:
        return self.consecutive_failures >= MAX_CONSECUTIVE_COMPACT_FAILURES


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
        tracking.consecutive_failures += 1
        tracking.last_error = str(err) or type(err).__name__
        return None
    tracking.consecutive_failures = 0
    tracking.compactions += 1
    outcome.pre_tokens = token_estimate
    return outcome
