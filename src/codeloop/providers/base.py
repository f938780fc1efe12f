"""The Provider protocol and the request it takes.

A provider turns a `ModelRequest` into an async iterator of Anthropic-shaped stream events
(dicts with a `type`: message_start, content_block_start/delta/stop, message_delta,
message_stop). Non-Anthropic providers translate to that shape at their edge.

`encode_body` is the request body as JSON bytes, assembled from per-message fragments: a long
session's history is serialised once, not again on every request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Protocol

from codeloop.messages import wire_json


@dataclass
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    system: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int = 8192
    thinking: dict[str, Any] | None = None
    temperature: float | None = None
    metadata: dict[str, Any] | None = None
    tool_choice: dict[str, Any] | None = None   # e.g. {"type": "tool", "name": "web_search"} (WebSearch)
    output_config: dict[str, Any] | None = None  # e.g. {"effort": "high"} (--effort, models that take it)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                "messages": self.messages, "stream": True}
        if self.system:
            body["system"] = self.system
        if self.tools:
            body["tools"] = self.tools
        if self.thinking:
            body["thinking"] = self.thinking
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.metadata:
            body["metadata"] = self.metadata
        if self.tool_choice:
            body["tool_choice"] = self.tool_choice
        if self.output_config:
            body["output_config"] = self.output_config
        return body


class Provider(Protocol):
    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        ...

    async def aclose(self) -> None:
        ...


# id(API message) → (message, its content list, that list's length, its JSON). The message is kept
# for the identity check; the content's identity and length catch a message edited after it was
# sent. Dropped wholesale when it far outgrows the request it serves (after a compaction).
_fragments: dict[int, tuple[dict[str, Any], Any, int, bytes]] = {}


def _fragment(m: Any) -> bytes:
    if not isinstance(m, dict):
        return wire_json(m)
    content = m.get("content")
    size = len(content) if isinstance(content, list) else -1
    hit = _fragments.get(id(m))
    if hit is not None and hit[0] is m and hit[1] is content and hit[2] == size:
        return hit[3]
    data = wire_json(m)
    _fragments[id(m)] = (m, content, size, data)
    return data


def encode_body(body: dict[str, Any]) -> bytes:
    """`wire_json(body)`, byte for byte, with each message of `body["messages"]` but the last
    encoded once and reused: a request's messages are read-only once built (loop.request shares
    all but the newest between turns; the newest carries the cache breakpoint and is encoded fresh)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or len(messages) < 2:
        return wire_json(body)
    if len(_fragments) > 4 * len(messages) + 1024:
        _fragments.clear()
    parts = []
    for key, value in body.items():
        if key == "messages":
            encoded = b"[" + b",".join([*map(_fragment, messages[:-1]), wire_json(messages[-1])]) + b"]"
        else:
            encoded = wire_json(value)
        parts.append(wire_json(key) + b":" + encoded)
    return b"{" + b",".join(parts) + b"}"
