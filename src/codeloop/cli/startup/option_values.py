"""The door's value checks: flags whose values need more than argparse's types — extended
thinking (--max-thinking-tokens / MAX_THINKING_TOKENS / --thinking / --effort), the numeric limits,
--task-budget and --json-schema. Each bad value is a `SetupError` with one line for the user.
options.py resolves everything else.
"""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

from codeloop.session.options import SetupError

DEFAULT_THINKING_BUDGET = 10_000
# --effort without a budget: codeloop's thinking budget per level ("max" is Claude Code's ultrathink).
EFFORT_BUDGETS = {"low": 4_096, "medium": DEFAULT_THINKING_BUDGET, "high": 16_000, "xhigh": 24_000, "max": 31_999}


def thinking(args: argparse.Namespace) -> dict[str, Any] | None:
    """Extended thinking for the API: on with --max-thinking-tokens / MAX_THINKING_TOKENS,
    --thinking enabled|adaptive, or --effort (which also rides along as `effort`)."""
    if args.thinking == "disabled":
        return None
    budget, source = args.max_thinking_tokens, "--max-thinking-tokens"
    env = os.environ.get("MAX_THINKING_TOKENS", "").strip()
    if budget is None and env:
        if not env.isdigit():
            raise SetupError(f"MAX_THINKING_TOKENS must be a whole number of tokens, not {env!r}")
        budget, source = int(env), "MAX_THINKING_TOKENS"
        if budget == 0:   # Claude Code: 0 turns thinking off
            return None
    effort = args.effort
    config: dict[str, Any] | None = None
    if budget is not None:
        if budget < 1024:
            raise SetupError(f"{source} must be at least 1024 (the API's minimum thinking budget)")
        config = {"type": "enabled", "budget_tokens": budget}
    elif effort:
        config = {"type": "enabled", "budget_tokens": EFFORT_BUDGETS[effort]}
    elif args.thinking in ("enabled", "adaptive"):
        config = {"type": "enabled", "budget_tokens": DEFAULT_THINKING_BUDGET}
    if config is not None and effort:
        config["effort"] = effort
    return config


def check_numbers(args: argparse.Namespace) -> None:
    if args.max_turns is not None and args.max_turns < 1:
        raise SetupError("--max-turns must be a positive integer")
    if args.max_budget_usd is not None and not (math.isfinite(args.max_budget_usd) and args.max_budget_usd > 0):
        raise SetupError("--max-budget-usd must be a positive amount of dollars")
    if args.token_budget is not None and args.token_budget < 1:
        raise SetupError("--token-budget must be a positive number of tokens")


def task_budget(value: str | None) -> int | None:
    """--task-budget TOKENS, a positive integer as Claude Code takes it."""
    if value is None:
        return None
    text = str(value).strip()
    if not text.isdigit() or int(text) <= 0:
        raise SetupError("--task-budget must be a positive integer")
    return int(text)


def json_schema(value: str | None) -> dict[str, Any] | None:
    if not value:
        return None
    from codeloop.session.structured import parse_schema

    try:
        return parse_schema(value)
    except Exception as exc:  # noqa: BLE001 — any unusable schema is the user's input error
        raise SetupError(f"--json-schema: {exc}") from None
