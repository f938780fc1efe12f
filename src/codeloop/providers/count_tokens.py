"""Exact input-token counts from `POST /v1/messages/count_tokens`.

A provider asks this for an exact figure; the context layer's estimator (`context.tokens`)
re-exports it and falls back to its own estimate. Lives with the providers because it speaks
the API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

_COUNT_TOKENS_FIELDS = ("model", "messages", "system", "tools", "thinking", "tool_choice")


def count_tokens_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of a Messages request that /v1/messages/count_tokens accepts."""
    return {k: body[k] for k in _COUNT_TOKENS_FIELDS if k in body and body[k] is not None}


async def count_tokens_api(client: Any, body: Mapping[str, Any], *,
                           fallback: int | Callable[[], int],
                           headers: Mapping[str, str] | None = None,
                           url: str = "/v1/messages/count_tokens",
                           timeout: float = 10.0) -> int:
    """Exact input tokens from the API through `client` (an httpx.AsyncClient with base_url and
    auth headers, e.g. the provider's), or `fallback` on any failure.

    `body` may be a full Messages request; fields count_tokens rejects are dropped.
    """
    try:
        resp = await client.post(url, json=count_tokens_body(body), headers=dict(headers or {}),
                                 timeout=timeout)
        if resp.status_code == 200:
            value = resp.json().get("input_tokens")
            if isinstance(value, int) and value >= 0:
                return value
    except Exception:  # noqa: BLE001 — any failure means "use the estimate"; never break a turn
        pass
    return fallback() if callable(fallback) else fallback
