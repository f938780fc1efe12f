"""Errors a model provider raises, classified the way the loop and the retry layer need them."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


class ProviderError(Exception):
    """Base class: anything that went wrong talking to the model."""

    status: int | None = None
    error_type: str = "api_error"
    retryable: bool = False
    # What to check (a setting, the key, the model name) or why it was not retried; shown after
    # the server's own words.
    hint: str | None = None


class APIStatusError(ProviderError):
    """The API answered with an error status (or an SSE `error` event)."""

    def __init__(self, status: int | None, message: str, error_type: str = "api_error",
                 retry_after: float | None = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.retry_after = retry_after
        self.request_id = request_id

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        # The status decides when there is one: a 404 whose body is not JSON defaults to
        # "api_error" but will fail the same way however often it is asked again.
        if self.status is not None:
            return self.status in (408, 409, 429) or self.status >= 500
        return self.error_type in ("overloaded_error", "rate_limit_error", "api_error")

    @property
    def is_overloaded(self) -> bool:
        return self.status == 529 or self.error_type == "overloaded_error"

    @property
    def is_prompt_too_long(self) -> bool:
        return self.status in (400, 413) and "prompt is too long" in self.message.lower()

    @property
    def is_media_size(self) -> bool:
        low = self.message.lower()
        return self.status in (400, 413) and ("image exceeds" in low or "image too large" in low
                                               or "maximum allowed size" in low and "image" in low)

    def __str__(self) -> str:
        prefix = f"API Error ({self.status})" if self.status else "API Error"
        return f"{prefix}: {self.message}" + (f" — {self.hint}" if self.hint else "")


class APIConnectionError(ProviderError):
    """The server could not be reached, or the connection dropped before the response ended."""

    retryable = True

    def __init__(self, message: str, *, mid_stream: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.mid_stream = mid_stream
        self.error_type = "connection_error"

    def __str__(self) -> str:
        return self.message + (f" — {self.hint}" if self.hint else "")


class ContextOverflowError(ProviderError):
    """The request is larger than the model's context window: refused before it is sent."""


class AuthenticationError(ProviderError):
    """No usable credentials: raised before any request is sent."""


@contextlib.contextmanager
def transport_errors(base_url: str) -> Iterator[None]:
    """Turn transport failures (httpx's, or `providers.lite_http`'s, named alike) into
    `APIConnectionError`s that say where and how."""
    try:
        yield
    except Exception as exc:
        kind = _transport_kind(exc)
        if kind is None:
            raise
        if kind == "timeout":
            raise APIConnectionError(f"request to {base_url} timed out ({type(exc).__name__})",
                                     mid_stream=True) from exc
        if kind == "connect":
            raise APIConnectionError(f"could not connect to {base_url}: {exc or type(exc).__name__}") from exc
        raise APIConnectionError(f"connection to {base_url} dropped: {exc or type(exc).__name__}",
                                 mid_stream=True) from exc


def _transport_kind(exc: Exception) -> str | None:
    """"timeout", "connect" or "dropped" for a transport failure; None for anything else. httpx is
    consulted only if something already imported it (else none of its errors can exist)."""
    lite = sys.modules.get("codeloop.providers.lite_http")
    if lite is not None and isinstance(exc, lite.TransportError):
        if isinstance(exc, lite.ConnectTimeout):
            return "timeout"
        return "connect" if isinstance(exc, lite.ConnectError) else "dropped"
    httpx = sys.modules.get("httpx")
    if httpx is None:
        return None
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        return "connect"
    if isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError)):
        return "dropped"
    return None
