"""A provider wrapper that reports the usage of every response it streams.

Side calls — compaction summaries, tool-use labels — cost tokens too; wrapping the provider they
use makes them show up in the session's usage, cost and budget like the main loop's calls.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from codeloop.providers.base import ModelRequest
from codeloop.usage import Usage


class MeteredProvider:
    def __init__(self, inner: Any, on_usage: Callable[[str, Usage, float], None]) -> None:
        self.inner, self.on_usage = inner, on_usage

    @property
    def name(self) -> str:
        return getattr(self.inner, "name", "provider")

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        started, model = time.monotonic(), request.model
        usage: dict[str, Any] = {}
        try:
            async for event in self.inner.stream(request):
                etype = event.get("type")
                if etype == "message_start":
                    msg = event.get("message") or {}
                    model = msg.get("model") or model
                    usage.update(msg.get("usage") or {})
                elif etype == "message_delta":
                    usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
                yield event
        finally:
            if usage:  # a call that was answered costs what it used, even if it failed later
                self.on_usage(model, Usage.from_api(usage), (time.monotonic() - started) * 1000)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)
