"""The API-side task budget (spec 004 §9.1's `taskBudget`, `--task-budget N`).

Every request of a query carries `output_config.task_budget = {type: "tokens", total, remaining?}`
(with the `task-budgets-2026-03-13` beta, `providers.betas`). The API counts what the context it
is sent holds; what a compaction takes out of the context is no longer visible to it, so from the
first compaction on the request says what is `remaining`: the total less, at each compaction, the
replaced context's size as its newest response reported it (input + output tokens). That is
Claude Code's rule, kept per query (a new prompt starts from the total again).
"""

from __future__ import annotations

from typing import Any


def task_budget_param(total: int | None, remaining: int | None) -> dict[str, int] | None:
    """`{total, remaining?}` for the request; None without a task budget."""
    if not total:
        return None
    return {"total": total, **({"remaining": remaining} if remaining is not None else {})}


def context_tokens(messages: list[Any]) -> int:
    """The size of a context as its newest response reported it: input + output tokens."""
    for m in reversed(messages):
        usage = getattr(m, "usage", None)
        if m.role == "assistant" and usage:
            return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
    return 0


def remaining_after_compaction(total: int | None, remaining: int | None, replaced: list[Any]) -> int | None:
    """What is left of the task budget once a compaction has replaced `replaced`; None without one."""
    if not total:
        return None
    return max(0, (remaining if remaining is not None else total) - context_tokens(replaced))
