"""The Provider protocol and the request it takes.

A provider turns a `ModelRequest` into an async iterator of Anthropic-shaped stream events
(dicts with a `type`: message_start, content_block_start/delta/stop, message_delta,
message_stop). Non-Anthropic providers translate to that shape at their edge.

`encode_body` is the request body as JSON bytes, assembled from per-message fragments: a long
session's history is serialised once, not again on every request, and so are the tool schemas
and system blocks while they stay the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

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


@runtime_checkable
class Preconnects(Protocol):
    """A provider that can open its first request's connection ahead of it: called once the session
    is being assembled (running event loop), so the handshakes overlap the rest of the assembly."""

    def preconnect(self) -> bool: ...   # whether a connection started opening


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
        # One encoder call for the whole history (a resumed session's first request): the same
        # bytes as one call per message joined by commas, without a Python-level call for each.
        whole = wire_json(head)
        parts = [whole[1:-1], b","]
    while len(_prefixes) >= 8:
        del _prefixes[next(iter(_prefixes))]
    _prefixes[id(messages[0])] = (head, parts)
    return parts


# The tools' schemas and the system blocks come back alike on nearly every request (a tool hands
# out the same schema dicts each time; the system text is equal): their JSON is kept per body key,
# for a few tool sets at once (subagents), and reused while the entries match, so a session
# serialises its tool schemas once rather than on every request.
_fixed: dict[str, list[tuple[list[Any], bytes]]] = {"tools": [], "system": []}
_FIXED_PER_KEY = 4


def _same_entries(old: list[Any], new: list[Any]) -> bool:
    """Whether `new` encodes as `old` did: dicts with the same keys in the same order whose values
    are the very same objects (a cached schema) or equal strings; anything else is encoded anew."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if type(a) is not dict or type(b) is not dict or len(a) != len(b):
            return False
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            if ka != kb or not (va is vb or (type(va) is str and type(vb) is str and va == vb)):
                return False
    return True


def _fixed_json(key: str, value: Any) -> bytes:
    if not isinstance(value, list):
        return wire_json(value)
    seen = _fixed[key]
    for i, (old, data) in enumerate(seen):
        if _same_entries(old, value):
            seen.append(seen.pop(i))   # most recently used last
            return data
    data = wire_json(value)
    # Shallow copies: a caller editing its dicts later cannot make a stale entry look equal.
    seen.append(([dict(e) if type(e) is dict else e for e in value], data))
    del seen[:-_FIXED_PER_KEY]
    return data


def encode_body(body: dict[str, Any]) -> bytes:
    """`wire_json(body)`, byte for byte, with the messages before the last encoded once and reused:
    a request's messages are read-only once built (loop.request shares all but the newest between
    turns; the newest carries the cache breakpoint and is encoded fresh). The tools and system
    blocks are reused the same way (`_fixed_json`)."""
    chunks = [b"{"]
    for key, value in body.items():
        if len(chunks) > 1:
            chunks.append(b",")
        chunks += (wire_json(key), b":")
        if key == "messages" and isinstance(value, list) and len(value) >= 2:
            chunks += (b"[", *_message_parts(value), wire_json(value[-1]), b"]")
        elif key in _fixed:
            chunks.append(_fixed_json(key, value))
        else:
            chunks.append(wire_json(value))
    chunks.append(b"}")
    return b"".join(chunks)
