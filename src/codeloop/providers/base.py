"""The Provider protocol and the request it takes.

A provider turns a `ModelRequest` into an async iterator of Anthropic-shaped stream events
(dicts with a `type`: message_start, content_block_start/delta/stop, message_delta,
message_stop). Non-Anthropic providers translate to that shape at their edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Protocol


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
