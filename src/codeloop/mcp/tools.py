"""MCP server tools as codeloop `Tool`s: names, schemas, permissions, and result mapping.

A server tool becomes `mcp__<server>__<tool>` (characters outside `[A-Za-z0-9_-]` become `_`,
at most 64 characters) with the server's own JSON schema. Input is accepted as any object (the
server validates its own arguments). Results map to tool_result content: text, images (base64),
embedded resources as text; `isError` → an error result. Text is capped at
`MAX_MCP_OUTPUT_TOKENS` (25 000 by default, ~4 characters a token) with a note saying so.

Results arrive here as plain dicts in wire (camelCase) shape, so this module never imports the
SDK and works with its 1.x and 2.x types alike.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolResult

MAX_NAME = 64
DEFAULT_MAX_OUTPUT_TOKENS = 25_000
CHARS_PER_TOKEN = 4
# A runaway description costs context on every request; Claude Code trims them too.
MAX_DESCRIPTION = 2048
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

Caller = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def sanitize(name: str) -> str:
    return _UNSAFE.sub("_", name)


def tool_name(server: str, tool: str) -> str:
    full = f"mcp__{sanitize(server)}__{sanitize(tool)}"
    if len(full) <= MAX_NAME:
        return full
    # Truncated names could collide: keep them distinct with a short hash of the full name.
    digest = hashlib.sha1(full.encode()).hexdigest()[:8]
    return f"{full[:MAX_NAME - 9]}_{digest}"


def max_output_tokens() -> int:
    value = os.environ.get("MAX_MCP_OUTPUT_TOKENS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MAX_OUTPUT_TOKENS


class McpInput(BaseModel):
    """Any object: the server's JSON schema is what the model sees, the server validates."""
    model_config = ConfigDict(extra="allow")


class McpTool(Tool):
    input_model = McpInput

    def __init__(self, server: str, spec: dict[str, Any], caller: Caller) -> None:
        self.server = server
        self.mcp_name = str(spec.get("name", ""))
        self.name = tool_name(server, self.mcp_name)  # type: ignore[misc]
        desc = str(spec.get("description") or "")
        self.description = desc if len(desc) <= MAX_DESCRIPTION else desc[:MAX_DESCRIPTION] + "…"  # type: ignore[misc]
        schema = dict(spec.get("inputSchema") or {})
        schema.setdefault("type", "object")
        if schema["type"] == "object":
            schema.setdefault("properties", {})
        self._schema = schema
        self._read_only = bool((spec.get("annotations") or {}).get("readOnlyHint", False))
        self._caller = caller

    def input_schema(self) -> dict[str, Any]:
        return self._schema

    def api_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self._schema}

    def is_read_only(self, inp: Any) -> bool:
        return self._read_only

    async def check_permissions(self, inp: Any, ctx: ToolContext) -> PermissionDecision:
        # readOnlyHint is the server's own claim, not a grant: rules (`mcp__server`, …) decide.
        return PermissionDecision(PermissionBehavior.ASK)

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        args = inp.model_dump() if isinstance(inp, BaseModel) else dict(inp or {})
        result = await self._caller(self.mcp_name, args)
        return map_result(result, max_tokens=max_output_tokens())

    def __repr__(self) -> str:
        return f"<McpTool {self.name}>"


def _resource_block(res: dict[str, Any]) -> dict[str, Any]:
    uri, mime = res.get("uri", ""), res.get("mimeType") or ""
    if "text" in res:
        return {"type": "text", "text": f"[Resource {uri}]\n{res['text']}" if uri else str(res["text"])}
    if mime.startswith("image/") and res.get("blob"):
        return _image(res["blob"], mime)
    return {"type": "text", "text": f"[Binary resource {uri} ({mime or 'unknown type'}) omitted]"}


def _image(data: str, mime: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": mime or "image/png", "data": data}}


def content_blocks(result: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for item in result.get("content") or []:
        kind = item.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(item.get("text", ""))})
        elif kind == "image":
            blocks.append(_image(item.get("data", ""), item.get("mimeType", "")))
        elif kind == "resource":
            blocks.append(_resource_block(item.get("resource") or {}))
        elif kind == "resource_link":
            blocks.append({"type": "text", "text": f"[Resource link: {item.get('name', '')} {item.get('uri', '')}]"})
        elif kind == "audio":
            blocks.append({"type": "text", "text": f"[Audio ({item.get('mimeType', 'unknown type')}) omitted]"})
    if not blocks and result.get("structuredContent") is not None:
        blocks.append({"type": "text", "text": json.dumps(result["structuredContent"])})
    return blocks


def truncation_note(max_tokens: int) -> str:
    return (f"\n\n[OUTPUT TRUNCATED: the MCP tool's output exceeded the {max_tokens}-token limit "
            "(MAX_MCP_OUTPUT_TOKENS). If the server offers pagination or filtering, use it to fetch "
            "the part you need.]")


def cap_blocks(blocks: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    budget = max_tokens * CHARS_PER_TOKEN
    out: list[dict[str, Any]] = []
    for b in blocks:
        if b["type"] != "text":
            out.append(b)
            continue
        text = b["text"]
        if len(text) > budget:
            out.append({"type": "text", "text": text[:max(budget, 0)] + truncation_note(max_tokens)})
            return out  # everything after the cut is dropped with it
        budget -= len(text)
        out.append(b)
    return out


def map_result(result: dict[str, Any], *, max_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS) -> ToolResult:
    """A `CallToolResult` (as a wire-shaped dict) → our ToolResult."""
    blocks = cap_blocks(content_blocks(result), max_tokens)
    is_error = bool(result.get("isError"))
    if all(b["type"] == "text" for b in blocks):
        text = "\n".join(b["text"] for b in blocks)
        content: str | list[dict[str, Any]] = text or ("(the tool reported an error)" if is_error
                                                       else "(no output)")
    else:
        content = blocks
    return ToolResult(content, is_error=is_error, data=result.get("structuredContent"))
