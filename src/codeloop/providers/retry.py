"""When and how long to retry a failed model call, and when to fall back to another model.

Retryable: 408/409/429, 5xx and 529 (overloaded), connection failures and streams cut mid-way.
Delays grow exponentially with jitter and honour the server's retry-after. After
`fallback_after` consecutive overload errors the loop switches to the next fallback model.

Retrying is bounded twice: by attempts (`CODELOOP_MAX_RETRIES`) and by wall time
(`CODELOOP_RETRY_BUDGET_MS`, counted from the first attempt). A `retry-after` longer than
`max_retry_after_s` or than what is left of the budget is not waited for: the call fails at
once with the server's words, and says why (`refusal`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codeloop.providers.errors import APIConnectionError, APIStatusError, ProviderError

if TYPE_CHECKING:
    import random


MAX_RETRIES_ENV = "CODELOOP_MAX_RETRIES"
BUDGET_ENV = "CODELOOP_RETRY_BUDGET_MS"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a failed model request."""
    max_retries: int = 10
    base_delay_s: float = 0.5
    max_delay_s: float = 32.0
    max_retry_after_s: float = 60.0
    fallback_after: int = 3
    # A server that refuses connections is usually down or mis-addressed: fail fast-ish.
    max_connect_retries: int = 2
    budget_s: float = 120.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        kw: dict = {}
        value = os.environ.get(MAX_RETRIES_ENV, "").strip()
        if value.isdigit():
            kw["max_retries"] = int(value)
        budget = os.environ.get(BUDGET_ENV, "").strip()
        if budget.isdigit():
            kw["budget_s"] = int(budget) / 1000
        return cls(**kw)

    def refusal(self, error: ProviderError, delay_s: float, elapsed_s: float) -> str | None:
        """Why a retryable error is not retried after all (None: go ahead and wait `delay_s`)."""
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None and (retry_after > self.max_retry_after_s
                                        or elapsed_s + retry_after > self.budget_s):
            return (f"the server asked to retry after {retry_after:g}s, longer than codeloop waits "
                    f"(at most {min(self.max_retry_after_s, max(0.0, self.budget_s - elapsed_s)):.0f}s); "
                    "try again later")
        if elapsed_s + delay_s > self.budget_s:
            return f"gave up after {elapsed_s:.0f}s of retries (budget {self.budget_s:g}s; {BUDGET_ENV})"
        return None

    def limit_for(self, error: ProviderError) -> int:
        if isinstance(error, APIConnectionError) and not error.mid_stream:
            return min(self.max_retries, self.max_connect_retries)
        return self.max_retries

    def delay_s(self, attempt: int, error: ProviderError, rng: random.Random | None = None) -> float:
        """Delay before retry number `attempt` (1-based)."""
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after_s)
        base = min(self.base_delay_s * (2 ** (attempt - 1)), self.max_delay_s)
        import random   # here, not at start-up: `random` imports hashlib and sha512
        return base + (rng or random).uniform(0, 0.25 * base)


def is_retryable(error: ProviderError) -> bool:
    if isinstance(error, APIStatusError) and (error.is_prompt_too_long or error.is_media_size):
        return False
    return bool(error.retryable)


def is_overloaded(error: ProviderError) -> bool:
    return isinstance(error, APIStatusError) and error.is_overloaded


def error_category(error: ProviderError) -> str:
    """The `error` field of a system/api_retry event, in Claude Code's vocabulary."""
    if isinstance(error, APIConnectionError):
        return "connection_error"
    if isinstance(error, APIStatusError):
        if error.is_overloaded:
            return "overloaded"
        if error.status == 429:
            return "rate_limit"
        if error.status in (401, 403):
            return "authentication_failed"
        if error.status is not None and error.status >= 500:
            return "server_error"
        if error.status is not None and error.status >= 400:
            return "invalid_request"
    return "unknown"
