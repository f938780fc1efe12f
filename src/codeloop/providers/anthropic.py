"""Anthropic Messages API: POST /v1/messages with `stream: true`, parsed as SSE (over
`providers.lite_http`, or httpx for proxies, injected transports and side requests).

Speaks the wire format itself (the official SDK costs seconds to import). Yields each stream
event as a dict; `ping` is swallowed; an SSE `error` event or an error status raises
`APIStatusError` (with a hint naming the setting to check when retrying cannot help); a
connection that drops before `message_stop`, or misses a deadline (`transport.Deadlines`),
raises `APIConnectionError`.

Each request also carries the `anthropic-beta` values it needs (`providers.betas`) and, when the
session gave one, `metadata.user_id` (an anonymous per-install id, as Claude Code sends).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from codeloop.providers.base import ModelRequest, encode_body
from codeloop.providers.betas import request_betas, without_task_budget
from codeloop.providers.errors import transport_errors, APIConnectionError, APIStatusError, AuthenticationError
from codeloop.providers.transport import (Deadlines, HttpClients, add_hint, open_stream, read_body, reason_phrase,
                                          sse_events)

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
_ERROR_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500,
                 "invalid_request_error": 400, "authentication_error": 401,
                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413}


def _retry_after(headers: Any) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _status_error(status: int, body: bytes, headers: Any) -> APIStatusError:
    message = body.decode("utf-8", "replace").strip()[:500] or reason_phrase(status)
    etype = next((k for k, v in _ERROR_STATUS.items() if v == status), "api_error")
    try:
        data = json.loads(body)
        err = data.get("error") or {}
        message = err.get("message") or message
        etype = err.get("type") or etype
    except (ValueError, AttributeError):
        pass
    return APIStatusError(status, message, etype, _retry_after(headers), headers.get("request-id"))


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None,
                 auth_token: str | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 deadlines: Deadlines | None = None, extra_headers: dict[str, str] | None = None,
                 betas: list[str] | None = None, user_id: str | None = None) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self.auth_token = auth_token if auth_token is not None else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not self.api_key and not self.auth_token:
            raise AuthenticationError(
                "ANTHROPIC_API_KEY is not set. Export your Anthropic API key "
                "(or ANTHROPIC_AUTH_TOKEN for a bearer token) and try again.")
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.deadlines = deadlines or Deadlines.from_env()
        self._key_env = "ANTHROPIC_API_KEY" if self.api_key else "ANTHROPIC_AUTH_TOKEN"
        headers = {"anthropic-version": API_VERSION, "content-type": "application/json",
                   "accept": "text/event-stream", "user-agent": _user_agent()}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        else:
            headers["authorization"] = f"Bearer {self.auth_token}"
        extra = dict(extra_headers or {})
        # an anthropic-beta given as a header joins the per-request list instead of replacing it
        self.betas = [*(betas or []), *([extra.pop("anthropic-beta")] if "anthropic-beta" in extra else [])]
        self.user_id = user_id
        headers.update(extra)
        # Built on first use: the model requests go through providers.lite_http when it can
        # carry them, and httpx (count_tokens, proxies, injected transports) is imported only then.
        self._clients = HttpClients(self.base_url, headers, self.deadlines, transport)

    @property
    def _client(self) -> httpx.AsyncClient:
        return self._clients.httpx()

    def preconnect(self) -> bool:
        """Open the first request's connection now (`base.Preconnects`); whether it started."""
        return self._clients.preconnect()

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """Exact input tokens for `request` from /v1/messages/count_tokens; None when unavailable."""
        from codeloop.providers.count_tokens import count_tokens_api

        from codeloop.messages import dumps_marked

        # the counter posts with httpx's json=: hand it a body that is sure to encode
        body = json.loads(dumps_marked(request.body()))
        value = await count_tokens_api(self._client, body, fallback=-1)
        return value if value >= 0 else None

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        events = self._stream(request)
        try:
            async for event in events:
                yield event
        except APIConnectionError as err:   # a connection that never opened: name the setting
            add_hint(err, base_url=self.base_url, base_env="ANTHROPIC_BASE_URL", key_env=self._key_env,
                     model=request.model)
            raise
        finally:
            await events.aclose()

    def _wire(self, request: ModelRequest) -> tuple[bytes, dict[str, str]]:
        """The request body (with metadata.user_id) and its per-request headers (anthropic-beta)."""
        body = request.body()
        if self.user_id and not request.metadata:
            body["metadata"] = {"user_id": self.user_id}
        betas = request_betas(request, self.betas)
        body = without_task_budget(body, betas)
        # the history's JSON is made once, not per request (encode_body)
        return encode_body(body), ({"anthropic-beta": ",".join(betas)} if betas else {})

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[dict[str, Any], None]:
        saw_stop = False
        payload, headers = self._wire(request)
        with transport_errors(self.base_url):
            async with open_stream(self._clients.stream(), "/v1/messages", payload, self.deadlines,
                                   self.base_url, headers=headers) as resp:
                if resp.status_code != 200:
                    err = _status_error(resp.status_code, await read_body(resp, self.deadlines, self.base_url),
                                        resp.headers)
                    raise add_hint(err, base_url=self.base_url, base_env="ANTHROPIC_BASE_URL",
                                   key_env=self._key_env, model=request.model)
                async for sse in sse_events(resp, self.deadlines, self.base_url):
                    if not sse.data:
                        continue
                    try:
                        event = json.loads(sse.data)
                    except ValueError as exc:
                        raise APIConnectionError(f"malformed SSE data from the API: {exc}", mid_stream=True) from exc
                    etype = event.get("type") or sse.event
                    if etype == "ping":
                        continue
                    if etype == "error":
                        error = event.get("error") or {}
                        kind = error.get("type", "api_error")
                        raise APIStatusError(_ERROR_STATUS.get(kind), error.get("message", "stream error"), kind)
                    yield event
                    if etype == "message_stop":
                        saw_stop = True
        if not saw_stop:
            raise APIConnectionError("the response stream ended before message_stop", mid_stream=True)


def _user_agent() -> str:
    from codeloop.version import __version__
    return f"codeloop/{__version__}"
