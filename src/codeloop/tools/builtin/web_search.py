"""The WebSearch tool, through the Anthropic API's server-side web search — as Claude Code does it.

A call makes one nested request on the session's side provider whose only tool is the server
tool `{"type": "web_search_20250305", "name": "web_search", ...}` and whose tool_choice forces it.
The API runs the searches and answers with `server_tool_use` / `web_search_tool_result` / text
blocks; this tool turns them into a result for the main model (the links and the nested model's
summary). A `pause_turn` stop is continued by replaying the assistant's blocks as they came (the
server blocks included), which is what the API asks for. Usage of the nested call — tokens and
`server_tool_use.web_search_requests` — is counted by the metered side provider.

Offered only where the server tool exists (the Anthropic provider); elsewhere the gate in the
registry hides it and /status says why. Permissions: read-only, asks unless a `WebSearch` rule
allows it (Claude Code's "passthrough").
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

SERVER_TOOL_TYPE = "web_search_20250305"
MAX_USES = 8
MAX_TOKENS = 4096
MAX_CONTINUATIONS = 3
NESTED_SYSTEM = ("You run a web search for another Claude model, which is waiting on the result and can search "
                 "again. Search once, then reply with a brief summary of the results.")
SOURCES_REMINDER = ("REMINDER: You MUST include the sources above in your response to the user using markdown "
                    "hyperlinks.")

DESCRIPTION = """\

- Allows Claude to search the web and use the results to inform responses
- Provides up-to-date information for current events and recent data
- Returns search result information formatted as search result blocks, including links as markdown hyperlinks
- Use this tool for accessing information beyond Claude's knowledge cutoff
- Searches are performed automatically within a single API call

CRITICAL REQUIREMENT - You MUST follow this:
  - After answering the user's question, you MUST include a "Sources:" section at the end of your response
  - In the Sources section, list all relevant URLs from the search results as markdown hyperlinks: [Title](URL)
  - This is MANDATORY - never skip including sources in your response

Usage notes:
  - Domain filtering is supported to include or block specific websites
  - Use the correct year in search queries: take it from today's date in your environment, not from your \
training data."""


class WebSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=2, description="The search query to use")
    allowed_domains: list[str] | SkipJsonSchema[None] = Field(
        None, description="Only include search results from these domains")
    blocked_domains: list[str] | SkipJsonSchema[None] = Field(
        None, description="Never include search results from these domains")


def server_tool(inp: WebSearchInput) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": SERVER_TOOL_TYPE, "name": "web_search", "max_uses": MAX_USES}
    if inp.allowed_domains:
        tool["allowed_domains"] = list(inp.allowed_domains)
    if inp.blocked_domains:
        tool["blocked_domains"] = list(inp.blocked_domains)
    return tool


async def nested_search(provider: Any, model: str, inp: WebSearchInput) -> tuple[list[dict[str, Any]], int]:
    """Every content block of the nested response (continued across pause_turn), and the number
    of searches the API reported."""
    from codeloop.providers.assembly import assemble
    from codeloop.providers.base import ModelRequest

    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": f"Perform a web search for the query: {inp.query}"}]}]
    blocks: list[dict[str, Any]] = []
    searches = 0
    for _ in range(MAX_CONTINUATIONS + 1):
        # The server tool is forced on the first call only: a continuation must be free to answer.
        force = {"type": "tool", "name": "web_search"} if len(messages) == 1 else None
        request = ModelRequest(model=model, max_tokens=MAX_TOKENS, messages=messages, tool_choice=force,
                               system=[{"type": "text", "text": NESTED_SYSTEM}], tools=[server_tool(inp)])
        asm = await assemble(provider, request)
        blocks += asm.blocks
        searches += int(((asm.usage.get("server_tool_use") or {}).get("web_search_requests")) or 0)
        if asm.stop_reason != "pause_turn":
            break
        # The API continues a paused turn when its blocks come back verbatim as the last assistant turn.
        if messages[-1]["role"] == "assistant":
            messages[-1]["content"].extend(asm.blocks)
        else:
            messages.append({"role": "assistant", "content": list(asm.blocks)})
    return blocks, searches


def format_results(query: str, blocks: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """(text for the model, structured results for front ends) from the nested response's blocks."""
    parts: list[str] = [f'Web search results for query: "{query}"']
    results: list[Any] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text" and (b.get("text") or "").strip():
            parts.append(b["text"].strip())
            results.append(b["text"].strip())
        elif kind == "web_search_tool_result":
            content = b.get("content")
            if isinstance(content, dict):  # {"type": "web_search_tool_result_error", "error_code": …}
                parts.append(f"Web search error: {content.get('error_code', 'unknown')}")
                continue
            links = [{"title": r.get("title") or r.get("url", ""), "url": r.get("url", "")}
                     for r in content or [] if isinstance(r, dict) and r.get("url")]
            parts.append("Links: " + json.dumps(links, ensure_ascii=False))
            results.append({"tool_use_id": b.get("tool_use_id", ""), "content": links})
    if len(parts) == 1:
        parts.append("No results found.")
    return "\n\n".join(parts) + "\n\n" + SOURCES_REMINDER, results


class WebSearchTool(Tool):
    name: ClassVar[str] = "WebSearch"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = WebSearchInput

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_enabled(self, ctx: ToolContext) -> bool:
        from codeloop.tools.registry import web_search_unavailable

        return web_search_unavailable(ctx) is None

    async def check_permissions(self, inp: WebSearchInput, ctx: ToolContext) -> PermissionDecision:
        return PermissionDecision(PermissionBehavior.ASK, "WebSearch requires permission.")

    async def call(self, inp: WebSearchInput, ctx: ToolContext) -> ToolResult:
        if inp.allowed_domains and inp.blocked_domains:
            raise ToolError("Error: Cannot specify both allowed_domains and blocked_domains in the same request")
        from codeloop.tools.registry import web_search_unavailable

        reason = web_search_unavailable(ctx)
        if reason is not None:
            raise ToolError(reason)
        started = time.monotonic()
        from codeloop.providers.errors import ProviderError

        try:
            blocks, searches = await nested_search(ctx.side_provider, ctx.model, inp)
        except ProviderError as exc:
            raise ToolError(f"Web search failed: {exc}") from None
        text, results = format_results(inp.query, blocks)
        return ToolResult(text, data={"query": inp.query, "results": results, "searchCount": searches,
                                      "durationSeconds": round(time.monotonic() - started, 3)})
