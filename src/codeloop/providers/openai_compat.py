"""OpenAI-compatible Chat Completions provider: OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio.

Owns the HTTP side: `POST {base}/chat/completions` with `stream: true` and
`stream_options.include_usage`, SSE parsing up to `data: [DONE]`, and error classification
(status errors → `APIStatusError`, context-length errors worded so the loop's reactive
compaction recognises them as "prompt is too long", connection failures and cut streams →
`APIConnectionError`, as are missed deadlines — `transport.Deadlines`). Translation of requests
and chunks lives in `openai_translate.py`.

`count_tokens` is deliberately not offered: there is no standard endpoint for it.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from codeloop.messages import wire_json
from codeloop.providers.base import ModelRequest
from codeloop.providers.errors import transport_errors, APIConnectionError, APIStatusError, AuthenticationError
from codeloop.providers.transport import (Deadlines, HttpClients, add_hint, open_stream, read_body, reason_phrase,
                                          sse_events)
from codeloop.providers.openai_translate import StreamTranslator, chat_body

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_OPENAI_HOST = "api.openai.com"
# Status → our error vocabulary (errors.py decides retryability from it); OpenAI's own `type`
# strings ("invalid_request_error", "server_error", …) do not line up with Anthropic's.
_STATUS_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 413: "request_too_large", 422: "invalid_request_error",
                 429: "rate_limit_error"}
# How servers word "your prompt does not fit": OpenAI/vLLM/OpenRouter, llama.cpp, others.
_CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "exceeds the available context size",
                    "exceed_context_size", "context window", "prompt is too long", "too many tokens",
                    "input is too long")


def _retry_after(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return float(value) * scale
            except ValueError:
                continue
    return None


def _is_context_error(*texts: Any) -> bool:
    low = " ".join(str(t) for t in texts if t).lower()
    return any(marker in low for marker in _CONTEXT_MARKERS)


def error_from_payload(status: int | None, payload: Any, fallback: str,
                       headers: Any = None) -> APIStatusError:
    """An `APIStatusError` from `{"error": {"message", "type", "code"}}` (or the looser shapes
    some servers use: `{"error": "..."}`, `{"detail": ...}`, `{"message": ...}`)."""
    message, code, etype = fallback, None, None
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("detail") or message)
            code, etype = err.get("code"), err.get("type")
        elif isinstance(err, str):
            message = err
    if status is None and isinstance(code, int) and 400 <= code < 600:
        status = code
    if _is_context_error(message, code, etype):
        # reactive compaction keys on a 400/413 whose message says "prompt is too long"
        return APIStatusError(status if status in (400, 413) else 400, f"prompt is too long: {message}",
                              "invalid_request_error")
    kind = _STATUS_TYPES.get(status or 0) or ("api_error" if status is None or status >= 500
                                              else "invalid_request_error")
    return APIStatusError(status, message, kind, _retry_after(headers) if headers is not None else None,
                          headers.get("x-request-id") if headers is not None else None)


def _status_error(status: int, body: bytes, headers: Any) -> APIStatusError:
    text = body.decode("utf-8", "replace").strip()[:500]
    try:
        payload: Any = json.loads(body)
    except ValueError:
        payload = None
    return error_from_payload(status, payload, text or reason_phrase(status), headers)


def is_openai_host(base_url: str) -> bool:
    return urlparse(base_url).hostname == _OPENAI_HOST


class OpenAICompatProvider:
    name = "openai"

    def __init__(self, api_key: str | None = None, base_url: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, *, deadlines: Deadlines | None = None,
                 extra_headers: dict[str, str] | None = None, require_key: bool | None = None,
                 name: str | None = None, max_tokens_field: str | None = None,
                 capability_overrides: dict[str, dict[str, Any]] | None = None,
                 base_env: str | None = "OPENAI_BASE_URL", key_env: str | None = "OPENAI_API_KEY") -> None:
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.deadlines = deadlines or Deadlines.from_env()
        self._base_env, self._key_env = base_env, key_env
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if name:
            self.name = name
        # OpenAI's own API always needs a key; local servers (Ollama, llama.cpp …) usually don't.
        if (require_key if require_key is not None else is_openai_host(self.base_url)) and not self.api_key:
            raise AuthenticationError(
                f"No API key for {self.base_url}. Set OPENAI_API_KEY (or the provider's key variable) "
                "and try again.")
        # OpenAI deprecated `max_tokens` (its o-series and gpt-5 reject it); every other server we
        # target understands `max_tokens`, and not all of them know `max_completion_tokens`.
        self.max_tokens_field = max_tokens_field or (
            "max_completion_tokens" if is_openai_host(self.base_url) else "max_tokens")
        self.capability_overrides = capability_overrides
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        headers.update(extra_headers or {})
        # Built on first use (providers.lite_http when it can carry the requests, else httpx).
        self._clients = HttpClients(self.base_url, headers, self.deadlines, transport)

    @property
    def _client(self) -> httpx.AsyncClient:
        return self._clients.httpx()

    def preconnect(self) -> bool:
        """Open the first request's connection now (`base.Preconnects`); whether it started."""
        return self._clients.preconnect()

    async def aclose(self) -> None:
        await self._clients.aclose()

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        from codeloop.providers.models import capabilities

        send_tools = capabilities(request.model, self.capability_overrides).supports_tools
        return chat_body(request, max_tokens_field=self.max_tokens_field, send_tools=send_tools)

    def translator(self, request: ModelRequest) -> StreamTranslator:
        # Offered tool names let a tool call written out as text become a real call.
        return StreamTranslator(request.model, tool_names=[t["name"] for t in request.tools if "name" in t])

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        events = self._stream(request)
        try:
            async for event in events:
                yield event
        except APIConnectionError as err:   # a connection that never opened: name the setting
            add_hint(err, base_url=self.base_url, base_env=self._base_env, key_env=self._key_env, model=request.model)
            raise
        finally:
            await events.aclose()

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[dict[str, Any], None]:
        translator = self.translator(request)
        done = False
        with transport_errors(self.base_url):
            async with open_stream(self._clients.stream(), "/chat/completions", wire_json(self.request_body(request)),
                                   self.deadlines, self.base_url) as resp:
                if resp.status_code != 200:
                    err = _status_error(resp.status_code, await read_body(resp, self.deadlines, self.base_url),
                                        resp.headers)
                    raise add_hint(err, base_url=self.base_url, base_env=self._base_env, key_env=self._key_env,
                                   model=request.model)
                async for sse in sse_events(resp, self.deadlines, self.base_url):
                    data = sse.data.strip()
                    if not data:
                        continue
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError as exc:
                        raise APIConnectionError(f"malformed SSE data from {self.base_url}: {exc}",
                                                 mid_stream=True) from exc
                    if not isinstance(chunk, dict):
                        continue
                    if chunk.get("error") is not None or sse.event == "error":
                        raise error_from_payload(None, chunk, "stream error")
                    for event in translator.feed(chunk):
                        yield event
        # A finish_reason is the real end of the answer; [DONE] alone (no finish) is accepted as
        # end_turn. Neither means the connection was cut.
        if not done and translator.finish_reason is None:
            raise APIConnectionError("the response stream ended before the model finished", mid_stream=True)
        for event in translator.finish():
            yield event
