"""When and how long to retry a failed model call, and when to fall back to another model.

Retryable: 408/409/429, 5xx and 529 (overloaded), connection failures and streams cut mid-way.
Delays grow exponentially with jitter and honour the server's retry-after. After
`fallback_after` consecutive overload errors the loop switches to the next fallback model.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

from codeloop.providers.errors import APIConnectionError, APIStatusError, ProviderError


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 10
    base_delay_s: float = 0.5
    max_delay_s: float = 32.0
    max_retry_after_s: float = 60.0
    fallback_after: int = 3
    # A server that refuses connections is usually down or mis-addressed: fail fast-ish.
    max_connect_retries: int = 2

    @classmethod
    def from_env(cls) -> "RetryPolicy":
        value = os.environ.get("CODELOOP_MAX_RETRIES", "")
        return cls(max_retries=int(value)) if value.isdigit() else cls()

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
