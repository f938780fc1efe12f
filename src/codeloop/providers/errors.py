"""Errors a model provider raises, classified the way the loop and the retry layer need them."""

from __future__ import annotations

import contextlib
from typing import Iterator


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
    """Turn httpx's transport failures into `APIConnectionError`s that say where and how."""
    import httpx

    try:
        yield
    except httpx.TimeoutException as exc:
        raise APIConnectionError(f"request to {base_url} timed out ({type(exc).__name__})", mid_stream=True) from exc
    except httpx.ConnectError as exc:
        raise APIConnectionError(f"could not connect to {base_url}: {exc or type(exc).__name__}") from exc
    except (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError) as exc:
        raise APIConnectionError(f"connection to {base_url} dropped: {exc or type(exc).__name__}",
                                 mid_stream=True) from exc
