"""Token usage as the API reports it, accumulated across calls.

Its cost in dollars needs the price table, which belongs to the providers layer:
`codeloop.providers.pricing.cost_usd(usage, model)`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass
class Usage:
    """Token counts of one model call or a sum of them."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    # `usage.server_tool_use.web_search_requests` (WebSearch's server-side searches); not a token
    # count, so `to_dict` leaves it out and front ends report it under `server_tool_use`.
    web_search_requests: int = 0

    @classmethod
    def from_api(cls, data: dict[str, Any] | None) -> Usage:
        data = data or {}
        server = data.get("server_tool_use") or {}
        return cls(**{f.name: int((server if f.name == "web_search_requests" else data).get(f.name) or 0)
                      for f in fields(cls)})

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "web_search_requests"}
