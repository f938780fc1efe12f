"""MCP resources and prompts: the model's two resource tools, and how resources and prompts read.

`ListMcpResourcesTool` (`{server?}`) and `ReadMcpResourceTool` (`{server, uri}`) carry Claude
Code's names and input schemas; the manager offers them while a connected server advertises the
resources capability. Both are read-only and need no permission (a deny rule still stops them).
A resource read answers with its contents as JSON (`{"contents": [{uri, mimeType, text}]}`), a
binary blob named but not inlined (images travel as image blocks); text is capped at
MAX_MCP_OUTPUT_TOKENS as a tool's output is.

`resource_text` renders a read for an `@server:uri` attachment; `prompt_text` flattens a server
prompt's messages into the prompt a `/mcp__server__prompt` command sends. Both take wire-shaped
dicts, so nothing here imports the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

LIST_NAME, READ_NAME = "ListMcpResourcesTool", "ReadMcpResourceTool"


class ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str | None = Field(None, description="Optional server name to filter resources by")


class ReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str = Field(description="The MCP server name")
    uri: str = Field(description="The resource URI to read")


class _ResourceTool(Tool):
    def __init__(self, manager: Any) -> None:
        self.manager = manager    # mcp.client.McpManager (Any: client imports this module)

    def is_read_only(self, inp: Any) -> bool:
        return True

    async def check_permissions(self, inp: Any, ctx: ToolContext) -> PermissionDecision:
        return PermissionDecision(PermissionBehavior.ALLOW)


class ListMcpResourcesTool(_ResourceTool):
    name = LIST_NAME
    description = ("List available resources from configured MCP servers. Each resource has a server field "
                   "naming the server it belongs to. Pass `server` to list one server's resources only.")
    input_model = ListInput

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        server = inp.server
        if server is not None and server not in self.manager.connected_servers():
            raise ToolError(unknown_server(server, self.manager.connected_servers()))
        found = self.manager.resources(server)
        if not found:
            return ToolResult("No resources found. MCP servers may still provide tools even if they have no "
                              "resources.", data=[])
        return ToolResult(json.dumps(found, indent=2), data=found)


class ReadMcpResourceTool(_ResourceTool):
    name = READ_NAME
    description = "Reads a specific resource from an MCP server, identified by server name and resource URI."
    input_model = ReadInput

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        result = await self.manager.read_resource(inp.server, inp.uri)
        contents, images = [], []
        for item in result.get("contents") or []:
            entry = {k: item[k] for k in ("uri", "mimeType", "text") if k in item}
            mime = str(item.get("mimeType") or "")
            if "blob" in item and mime.startswith("image/"):
                images.append({"type": "image", "source": {"type": "base64", "media_type": mime,
                                                           "data": item["blob"]}})
                entry["text"] = "[image attached below]"
            elif "blob" in item:
                entry["text"] = f"[binary content ({mime or 'unknown type'}, {len(item['blob']) * 3 // 4} bytes) " \
                                "not shown]"
            contents.append(entry)
        text = _capped(json.dumps({"contents": contents}, indent=2))
        return ToolResult([{"type": "text", "text": text}, *images] if images else text, data={"contents": contents})


def _capped(text: str) -> str:
    """At most MAX_MCP_OUTPUT_TOKENS of text (as a tool's output is), with the note saying so."""
    from codeloop.mcp.tools import CHARS_PER_TOKEN, max_output_tokens, truncation_note

    limit = max_output_tokens()
    return text if len(text) <= limit * CHARS_PER_TOKEN else text[:limit * CHARS_PER_TOKEN] + truncation_note(limit)


def unknown_server(server: str, known: list[str]) -> str:
    return f'Server "{server}" not found. Available servers: {", ".join(known) or "(none connected)"}'


def resource_text(server: str, uri: str, result: dict[str, Any]) -> str:
    """A resource read as the text of an `@server:uri` attachment."""
    parts = []
    for item in result.get("contents") or []:
        if "text" in item:
            parts.append(str(item["text"]))
        else:
            parts.append(f"[binary content ({item.get('mimeType') or 'unknown type'}) not shown]")
    body = _capped("\n".join(parts)) if parts else "(the resource is empty)"
    return f"Full contents of MCP resource {uri} from server {server}:\n<mcp-resource server=\"{server}\" " \
           f"uri=\"{uri}\">\n{body}\n</mcp-resource>"


def prompt_text(result: dict[str, Any]) -> str:
    """A `prompts/get` result → the prompt text to send (every message's text, in order)."""
    from codeloop.mcp.tools import content_blocks

    texts = []
    for msg in result.get("messages") or []:
        blocks = content_blocks({"content": [msg.get("content") or {}]})
        texts += [b["text"] for b in blocks if b.get("type") == "text"]
    return "\n\n".join(texts)


def prompt_usage(command: str, prompt: dict[str, Any]) -> str:
    args = [f"<{a['name']}>" if a.get("required") else f"[{a['name']}]" for a in prompt.get("arguments") or []]
    return " ".join([f"/{command}", *args])


def prompt_arguments(command: str, prompt: dict[str, Any], text: str) -> dict[str, str]:
    """Space-separated words → the prompt's arguments in order (the last takes the rest of the line);
    ValueError naming what is missing."""
    spec = list(prompt.get("arguments") or [])
    words = text.split()
    values: dict[str, str] = {}
    for i, arg in enumerate(spec):
        if i < len(words):
            values[arg["name"]] = " ".join(words[i:]) if i == len(spec) - 1 else words[i]
    missing = [a["name"] for a in spec if a.get("required") and a["name"] not in values]
    if missing:
        raise ValueError(f"missing argument{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                         f"(usage: {prompt_usage(command, prompt)})")
    return values


async def paginate(method: Any, field: str) -> list[dict[str, Any]]:
    """Every item of a paginated MCP list call (`session.list_tools`, …) as wire-shaped dicts."""
    items: list[dict[str, Any]] = []
    result = await method()
    for _ in range(100):  # bounded against a server that never stops
        items += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in getattr(result, field)]
        cursor = getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None)
        if not cursor:
            break
        from mcp import types

        result = await method(params=types.PaginatedRequestParams(cursor=cursor))
    return items
