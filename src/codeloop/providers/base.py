"""The Provider protocol and the request it takes.

A provider turns a `ModelRequest` into an async iterator of Anthropic-shaped stream events
(dicts with a `type`: message_start, content_block_start/delta/stop, message_delta,
message_stop). Non-Anthropic providers translate to that shape at their edge.

`encode_body` is the request body as JSON bytes, assembled from per-message fragments: a long
session's history is serialised once, not again on every request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from codeloop.messages import extends, wire_json


@dataclass
class ModelRequest:
    """One request to a model: messages, system prompt, tools and sampling options."""
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
    @property
    def name(self) -> str: ...   # read-only: a wrapper (MeteredProvider) passes its inner one's on

    def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        ...

    async def aclose(self) -> None:
        ...


# id(first API message) → (the messages before the last, each one's JSON and a comma) of the previous
# request, for a few conversations at once: a request whose messages extend those (the same dicts)
# encodes only its new ones. The body is then one join: a long history's JSON is copied once per
# request, never built up through large temporaries.
_prefixes: dict[int, tuple[list[Any], list[bytes]]] = {}


def _message_parts(messages: list[Any]) -> list[bytes]:
    head = messages[:-1]
    hit = _prefixes.pop(id(messages[0]), None)
    if hit is not None and extends(hit[0], head):
        parts = hit[1]   # this cache's own list: extended in place
        parts.extend([wire_json(m) + b"," for m in head[len(hit[0]):]])
    else:
        hit = None   # the old fragments go before the new ones are made
        parts = [wire_json(m) + b"," for m in head]
    while len(_prefixes) >= 8:
        del _prefixes[next(iter(_prefixes))]
    _prefixes[id(messages[0])] = (head, parts)
    return parts


def encode_body(body: dict[str, Any]) -> bytes:
    """`wire_json(body)`, byte for byte, with the messages before the last encoded once and reused:
    a request's messages are read-only once built (loop.request shares all but the newest between
    turns; the newest carries the cache breakpoint and is encoded fresh)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or len(messages) < 2:
        return wire_json(body)
    chunks = [b"{"]
    for key, value in body.items():
        if len(chunks) > 1:
            chunks.append(b",")
        chunks += (wire_json(key), b":")
        if key == "messages":
            chunks += (b"[", *_message_parts(messages), wire_json(messages[-1]), b"]")
        else:
            chunks.append(wire_json(value))
    chunks.append(b"}")
    return b"".join(chunks)
