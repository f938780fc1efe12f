"""Deadlines and the SSE byte stream shared by every HTTP provider.

A model call can hang in three places, each with its own deadline (none is the old 600 s
catch-all): connecting (`connect_s`), waiting for the response headers (`headers_s`), and a
stream that goes quiet mid-response (`idle_s`: no bytes at all for that long). Each expiry is an
`APIConnectionError`, which the retry layer retries within its budget.

The idle deadline is read from `CODELOOP_STREAM_IDLE_TIMEOUT_MS`, else Claude Code's own
`CLAUDE_STREAM_IDLE_TIMEOUT_MS` (default 90 s, as Claude Code's); the others from
`CODELOOP_CONNECT_TIMEOUT_MS` and `CODELOOP_HEADERS_TIMEOUT_MS`.

SSE is parsed here from raw bytes (not line by line through httpx) so the idle clock watches
the bytes themselves: a server that trickles a partial line still counts as alive, one that
stops does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from codeloop.providers.errors import APIConnectionError, ProviderError

IDLE_ENV = ("CODELOOP_STREAM_IDLE_TIMEOUT_MS", "CLAUDE_STREAM_IDLE_TIMEOUT_MS")
CONNECT_ENV = "CODELOOP_CONNECT_TIMEOUT_MS"
HEADERS_ENV = "CODELOOP_HEADERS_TIMEOUT_MS"


def _ms(env: Mapping[str, str], names: tuple[str, ...], default_s: float) -> float:
    for name in names:
        value = (env.get(name) or "").strip()
        try:
            if value and float(value) > 0:
                return float(value) / 1000
        except ValueError:
            continue
    return default_s


_sent_hooks: list[Callable[[], None]] = []


def call_when_sent(fn: Callable[[], None]) -> None:
    """Call `fn` (once) when the next model request is out and its response headers are in: the
    loop uses it to do work while the model thinks."""
    _sent_hooks.append(fn)


def _request_sent() -> None:
    while _sent_hooks:
        try:
            _sent_hooks.pop()()
        except Exception:  # noqa: BLE001 — a hook never fails the request
            pass


@dataclass(frozen=True)
class Deadlines:
    """Timeouts for connecting, the response headers and an idle stream."""
    connect_s: float = 15.0
    headers_s: float = 120.0   # a streamed answer starts at once; a queued huge prompt may not
    idle_s: float = 90.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Deadlines:
        env = os.environ if env is None else env
        d = cls()
        return cls(connect_s=_ms(env, (CONNECT_ENV,), d.connect_s), headers_s=_ms(env, (HEADERS_ENV,), d.headers_s),
                   idle_s=_ms(env, IDLE_ENV, d.idle_s))

    def httpx_timeout(self) -> Any:
        import httpx

        # httpx's own read timeout is only a backstop: the deadlines above fire first.
        slack = 5.0
        return httpx.Timeout(connect=self.connect_s, read=max(self.headers_s, self.idle_s) + slack,
                             write=max(60.0, self.headers_s), pool=self.connect_s)


class HttpClients:
    """A provider's HTTP clients, each built once, on first use: model requests go through
    `lite_http` when it can carry them (`lite_http.use_lite`), else through httpx's AsyncClient,
    which also serves side requests (count_tokens) and is imported only when one is made."""

    def __init__(self, base_url: str, headers: dict[str, str], deadlines: Deadlines, transport: Any = None) -> None:
        self.base_url, self.headers, self.deadlines, self.transport = base_url, headers, deadlines, transport
        self._lite: Any = None
        self._httpx: Any = None

    def stream(self) -> Any:
        """The client for model requests."""
        return self._lite_client() or self.httpx()

    def _lite_client(self) -> Any:
        if self._lite is None and self._httpx is None:
            from codeloop.providers import lite_http

            if lite_http.use_lite(self.base_url, self.transport):
                self._lite = lite_http.LiteClient(self.base_url, self.headers, connect_s=self.deadlines.connect_s)
        return self._lite

    def preconnect(self) -> bool:
        """Open the model requests' first connection ahead of them when `lite_http` carries them
        (never builds httpx for it: proxies and injected transports connect on first use)."""
        lite = self._lite_client() if self.base_url.startswith("https://") else None
        return lite is not None and lite.preconnect()

    def httpx(self) -> Any:
        if self._httpx is None:
            import httpx

            # Plain-http endpoints (local proxies, test servers) never use TLS: skip loading the CA bundle.
            self._httpx = httpx.AsyncClient(base_url=self.base_url, headers=self.headers, transport=self.transport,
                                            verify=not self.base_url.startswith("http://"),
                                            timeout=self.deadlines.httpx_timeout())
        return self._httpx

    async def aclose(self) -> None:
        for client in (self._lite, self._httpx):
            if client is not None:
                await client.aclose()


def reason_phrase(status: int) -> str:
    """The standard phrase for an HTTP status ("" for an unknown one), without importing httpx."""
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


@contextlib.asynccontextmanager
async def open_stream(client: Any, path: str, body: bytes, deadlines: Deadlines,
                      base_url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """POST `body` (with per-request `headers`) and yield the response once its headers arrived
    (within `headers_s`)."""
    request = client.build_request("POST", path, content=body, headers=headers or None)
    try:
        # asyncio.timeout, not wait_for: no task made to run the send (one less per request)
        async with asyncio.timeout(deadlines.headers_s):
            response = await client.send(request, stream=True)
    except TimeoutError:
        raise APIConnectionError(f"no response headers from {base_url} within {deadlines.headers_s:g}s",
                                 mid_stream=True) from None
    if _sent_hooks:
        _request_sent()
    try:
        yield response
    finally:
        await response.aclose()
        # httpx's response and its stream refer to each other; that cycle kept each request (and its
        # body: the whole history's JSON) alive until a full garbage collection (issue 18: ~7 MB at
        # 2,000 turns). Dropping the stream once closed breaks it.
        response.stream = None   # (httpx touches a closed response's stream no more)


async def read_body(response: Any, deadlines: Deadlines, base_url: str, limit: int = 1 << 20) -> bytes:
    """An error response's body (at most `limit` bytes), under the idle deadline."""
    out = bytearray()
    async for chunk in _guarded(response.aiter_bytes(), deadlines.idle_s, base_url):
        out += chunk
        if len(out) >= limit:
            break
    return bytes(out[:limit])


async def _guarded(chunks: AsyncIterator[bytes], idle_s: float, base_url: str) -> AsyncIterator[bytes]:
    it = chunks.__aiter__()
    received = 0
    while True:
        try:
            # the timeout covers the read alone (never the yield: the consumer's code is not ours to cancel)
            async with asyncio.timeout(idle_s):
                chunk = await it.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError:
            what = "partial response received" if received else "no bytes received"
            raise APIConnectionError(f"stream idle: no bytes for {idle_s:g}s from {base_url} ({what})",
                                     mid_stream=True) from None
        received += len(chunk)
        yield chunk


@dataclass
class SSE:
    """One server-sent event: its name and data."""
    event: str
    data: str


class _SSEParser:
    """The text/event-stream format: `field: value` lines, events ended by a blank line."""

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SSE]:
        lines = (self._buf + chunk).split(b"\n")
        self._buf = lines.pop()
        out: list[SSE] = []
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line:
                if self._data or self._event:
                    out.append(SSE(self._event or "message", "\n".join(self._data)))
                self._event, self._data = "", []
                continue
            if line.startswith(":"):
                continue   # a comment (keep-alive)
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                self._event = value
            elif name == "data":
                self._data.append(value)
        return out

    def flush(self) -> list[SSE]:
        out = self.feed(b"\n\n") if self._buf else []
        if self._data:
            out.append(SSE(self._event or "message", "\n".join(self._data)))
            self._event, self._data = "", []
        return out


async def sse_events(response: Any, deadlines: Deadlines, base_url: str) -> AsyncIterator[SSE]:
    """The response's server-sent events; `APIConnectionError` after `idle_s` without a byte."""
    parser = _SSEParser()
    async for chunk in _guarded(response.aiter_bytes(), deadlines.idle_s, base_url):
        for event in parser.feed(chunk):
            yield event
    for event in parser.flush():
        yield event


def add_hint(err: ProviderError, *, base_url: str, base_env: str | None, key_env: str | None,
             model: str) -> ProviderError:
    """Name the setting to check when a status says the request can never succeed as sent."""
    from codeloop.providers.errors import APIStatusError

    where = f"{base_env} (now {base_url})" if base_env else f"the base URL ({base_url})"
    if getattr(err, "hint", None):
        return err
    if isinstance(err, APIConnectionError) and not err.mid_stream:
        err.hint = f"check {where} and your network"
    if not isinstance(err, APIStatusError):
        return err
    low = err.message.lower()
    if err.status in (401, 403) or err.error_type in ("authentication_error", "permission_error"):
        err.hint = f"check your API key ({key_env})" if key_env else "check the API key for this endpoint"
        if err.status == 403:
            err.hint += " and that it may use this model"
    elif err.status in (400, 404) and "model" in low and (err.status == 404 or any(
            w in low for w in ("not found", "not_found", "does not exist", "unknown model", "invalid model",
                               "no such model", "not available", "not supported"))):
        err.hint = f"check the model name ({model!r}; set it with --model or ANTHROPIC_MODEL)"
    elif err.status == 404:
        err.hint = f"check {where}: nothing answers the API path there"
    elif err.status in (405, 415) or (err.status is not None and 300 <= err.status < 400):
        err.hint = f"check {where}: it does not look like the API"
    return err
