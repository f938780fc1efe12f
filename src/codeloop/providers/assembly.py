"""Assembles a streamed response into content blocks as they complete.

`feed(event)` returns a block when its `content_block_stop` arrives, so the loop can hand a
finished tool_use to the executor while the model is still generating.
"""

from __future__ import annotations

import json
from typing import Any


class ResponseAssembler:
    def __init__(self) -> None:
        self.id: str | None = None
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.blocks: list[dict[str, Any]] = []
        self.invalid_json: dict[str, str] = {}  # tool_use id → the unparseable raw input
        self._open: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self.stopped = False

    @property
    def has_open_blocks(self) -> bool:
        return bool(self._open)

    def open_text(self) -> list[dict[str, Any]]:
        """The text blocks still streaming, as far as they got (non-empty only): what an
        interrupted response had already said."""
        return [dict(b) for _, b in sorted(self._open.items()) if b.get("type") == "text" and b.get("text")]

    def feed(self, event: dict[str, Any]) -> dict[str, Any] | None:
        etype = event.get("type")
        if etype == "message_start":
            msg = event.get("message") or {}
            self.id, self.model = msg.get("id"), msg.get("model")
            self.usage = dict(msg.get("usage") or {})
        elif etype == "content_block_start":
            block = dict(event.get("content_block") or {})
            idx = event.get("index", len(self.blocks))
            if block.get("type") == "tool_use":
                self._json[idx] = []
                block["input"] = block.get("input") or {}
            elif block.get("type") == "text":
                block["text"] = block.get("text", "")
            elif block.get("type") == "thinking":
                block.setdefault("thinking", "")
                block.setdefault("signature", "")
            self._open[idx] = block
        elif etype == "content_block_delta":
            self._apply_delta(event.get("index", 0), event.get("delta") or {})
        elif etype == "content_block_stop":
            return self._close(event.get("index", 0))
        elif etype == "message_delta":
            delta = event.get("delta") or {}
            if "stop_reason" in delta:
                self.stop_reason = delta["stop_reason"]
            for key, value in (event.get("usage") or {}).items():
                if value is not None:
                    self.usage[key] = value
        elif etype == "message_stop":
            self.stopped = True
        return None

    def _apply_delta(self, idx: int, delta: dict[str, Any]) -> None:
        block = self._open.get(idx)
        if block is None:
            return
        dtype = delta.get("type")
        if dtype == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif dtype == "input_json_delta":
            self._json.setdefault(idx, []).append(delta.get("partial_json", ""))
        elif dtype == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif dtype == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif dtype == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def _close(self, idx: int) -> dict[str, Any] | None:
        block = self._open.pop(idx, None)
        if block is None:
            return None
        if block.get("type") in ("tool_use", "server_tool_use") and idx in self._json:
            raw = "".join(self._json.pop(idx))
            if raw.strip():
                try:
                    block["input"] = json.loads(raw)
                except ValueError:
                    self.invalid_json[block.get("id", "")] = raw
                    block["input"] = {}
        self.blocks.append(block)
        return block


async def assemble(provider: Any, request: Any) -> ResponseAssembler:
    """One whole side call: stream `request` from `provider` into an assembler, closing the
    stream however it ends (compaction summaries, WebFetch's prompt, WebSearch's nested search)."""
    assembler = ResponseAssembler()
    events = provider.stream(request)
    try:
        async for event in events:
            assembler.feed(event)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    return assembler


def text_of(assembler: ResponseAssembler) -> str:
    """The text blocks of an assembled response, joined."""
    return "".join(b.get("text", "") for b in assembler.blocks if b.get("type") == "text")
