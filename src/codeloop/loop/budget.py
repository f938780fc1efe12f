"""The token budget (spec 004 §11.6, Claude Code's TOKEN_BUDGET feature).

A user can ask for a turn to spend a number of output tokens ("+500k", "use 2m tokens").
This module owns parsing that request and the per-query decision, each time the model would
otherwise stop, whether to nudge it to keep working. Reading the turn's token count and
injecting the nudge message are the loop's job.
"""

from __future__ import annotations

import functools
import math
import re
import time
from dataclasses import dataclass, field
from enum import Enum

# Stop nudging once 90% of the budget is spent: the last stretch is the model's to wrap up.
COMPLETION_THRESHOLD = 0.9
# A continuation that produced fewer tokens than this is the model spinning, not working.
DIMINISHING_THRESHOLD = 500

_MULTIPLIERS = {"k": 1_000, "m": 1_000_000, "b": 1_000_000_000}
_PATTERNS = (r"^\s*\+(\d+(?:\.\d+)?)\s*(k|m|b)\b",
             # Needs whitespace before "+" so "c++ 5k" or "a+1k" in prose is not read as a budget.
             r"\s\+(\d+(?:\.\d+)?)\s*(k|m|b)\s*[.!?]?\s*$",
             r"\b(?:use|spend)\s+(\d+(?:\.\d+)?)\s*(k|m|b)\s*tokens?\b")


@functools.cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    # Compiled on the first prompt that could ask for a budget: most never do, and start-up pays nothing.
    return tuple(re.compile(p, re.IGNORECASE) for p in _PATTERNS)


def parse_token_budget(text: str) -> int | None:
    """The token budget a prompt asks for, or None when it asks for none."""
    lowered = text.lower()
    if "+" not in text and "use" not in lowered and "spend" not in lowered:   # what every pattern needs
        return None
    for pattern in _patterns():
        match = pattern.search(text)
        if match:
            return _round_half_up(float(match.group(1)) * _MULTIPLIERS[match.group(2).lower()])
    return None


def _round_half_up(x: float) -> int:
    # Like JavaScript's Math.round, so percentages match Claude Code (Python's round() is banker's).
    return math.floor(x + 0.5)


class BudgetAction(str, Enum):
    CONTINUE = "continue"
    STOP = "stop"


@dataclass
class BudgetTracker:
    """Per-query memory of the continuations already granted; one per `query()` call."""
    continuation_count: int = 0
    last_delta_tokens: int = 0
    last_global_turn_tokens: int = 0
    started_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class BudgetDecision:
    """Whether to continue or stop under the token budget, with the nudge to send."""
    action: BudgetAction
    nudge_message: str | None = None
    continuation_count: int = 0
    pct: int = 0
    turn_tokens: int = 0
    budget: int = 0
    diminishing_returns: bool = False
    # Set on a stop that ends a budgeted run (at least one continuation, or diminishing
    # returns): the loop then reports how the budget went (a `token_budget` SystemEvent);
    # None for a plain stop.
    duration_ms: float | None = None

    @property
    def completed_budget_run(self) -> bool:
        return self.duration_ms is not None


def budget_continuation_message(pct: int, turn_tokens: int, budget: int) -> str:
    return (f"Stopped at {pct}% of token target ({turn_tokens:,} / {budget:,}). "
            "Keep working \u2014 do not summarize.")


def check_token_budget(tracker: BudgetTracker, *, agent_id: str | None, budget: int | None,
                       turn_output_tokens: int) -> BudgetDecision:
    """Continue (with a nudge) while under 90% of the budget and still making progress."""
    # Subagents never continue: their budget belongs to the parent's turn.
    if agent_id or budget is None or budget <= 0:
        return BudgetDecision(BudgetAction.STOP)
    pct = _round_half_up(turn_output_tokens / budget * 100)
    delta = turn_output_tokens - tracker.last_global_turn_tokens
    # Two small deltas in a row after a few nudges: more nudging will not produce work.
    diminishing = (tracker.continuation_count >= 3 and delta < DIMINISHING_THRESHOLD
                   and tracker.last_delta_tokens < DIMINISHING_THRESHOLD)
    if not diminishing and turn_output_tokens < budget * COMPLETION_THRESHOLD:
        tracker.continuation_count += 1
        tracker.last_delta_tokens = delta
        tracker.last_global_turn_tokens = turn_output_tokens
        return BudgetDecision(BudgetAction.CONTINUE,
                              budget_continuation_message(pct, turn_output_tokens, budget),
                              tracker.continuation_count, pct, turn_output_tokens, budget)
    if diminishing or tracker.continuation_count > 0:
        return BudgetDecision(BudgetAction.STOP, None, tracker.continuation_count, pct,
                              turn_output_tokens, budget, diminishing,
                              (time.time() - tracker.started_at) * 1000)
    return BudgetDecision(BudgetAction.STOP, None, 0, pct, turn_output_tokens, budget)
