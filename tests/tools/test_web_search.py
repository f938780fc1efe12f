"""WebSearch (issue 16): a nested request carrying only the Anthropic server tool, its
server_tool_use / web_search_tool_result blocks turned into the tool result, pause_turn
continued by replaying those blocks verbatim, searches counted in usage, and the gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from codeloop.permissions.policy import PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.providers.metered import MeteredProvider
from codeloop.providers.pricing import cost_usd
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.builtin.web_search import SERVER_TOOL_TYPE, WebSearchTool
from codeloop.tools.registry import builtin_tools, parse_tool_input, web_search_unavailable
from codeloop.usage import Usage
from fakeapi import Block, ScriptedAPI, _event, sse, text, tool_use

HITS = [{"type": "web_search_result", "title": "PEP 8 – Style Guide", "url": "https://peps.python.org/pep-0008/",
         "encrypted_content": "EqcBCioI...", "page_age": "2001-07-05"},
        {"type": "web_search_result", "title": "", "url": "https://realpython.com/python-pep8/",
         "encrypted_content": "Zx9..."}]


def search_blocks(query: str, sid: str = "srvtoolu_01") -> list[Block]:
    use = Block({"type": "server_tool_use", "id": sid, "name": "web_search", "input": {}},
                [{"type": "input_json_delta", "partial_json": json.dumps({"query": query})}])
    result = Block({"type": "web_search_tool_result", "tool_use_id": sid, "content": HITS}, [])
    return [use, result]


def with_searches(resp, n: int, stop: str | None = None):
    """Add `usage.server_tool_use.web_search_requests` (and optionally a stop reason) to message_delta."""
    for i, (delay, chunk) in enumerate(resp.chunks):
        if b"message_delta" in chunk:
            data = json.loads(chunk.decode().split("data: ", 1)[1])
            data["usage"]["server_tool_use"] = {"web_search_requests": n}
            if stop:
                data["delta"]["stop_reason"] = stop
            resp.chunks[i] = (delay, _event("message_delta", data))
    return resp


def ctx_for(tmp_path, api, on_usage=None):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, model="claude-sonnet-4-5")
    provider = AnthropicProvider("k", base_url="http://fake", transport=api.transport())
    ctx.side_provider = MeteredProvider(provider, on_usage) if on_usage else provider
    return ctx


async def search(ctx, **raw):
    tool = WebSearchTool()
    return await tool.call(parse_tool_input(tool, raw), ctx)


async def test_nested_request_carries_only_the_server_tool_and_results_come_back(tmp_path):
    api = ScriptedAPI(with_searches(sse(*search_blocks("pep 8"), text("PEP 8 is Python's style guide.")), 1))
    used = []
    ctx = ctx_for(tmp_path, api, lambda model, usage, ms: used.append((model, usage)))
    res = await search(ctx, query="pep 8", allowed_domains=["peps.python.org", "realpython.com"])
    body = api.requests[0].body
    assert body["tools"] == [{"type": SERVER_TOOL_TYPE, "name": "web_search", "max_uses": 8,
                              "allowed_domains": ["peps.python.org", "realpython.com"]}]
    assert body["tool_choice"] == {"type": "tool", "name": "web_search"} and body["model"] == "claude-sonnet-4-5"
    assert body["messages"][0]["content"][0]["text"] == "Perform a web search for the query: pep 8"
    assert res.content.startswith('Web search results for query: "pep 8"')
    links = json.loads(res.content.split("Links: ", 1)[1].split("\n", 1)[0])
    assert links == [{"title": "PEP 8 – Style Guide", "url": "https://peps.python.org/pep-0008/"},
                     {"title": "https://realpython.com/python-pep8/", "url": "https://realpython.com/python-pep8/"}]
    assert "PEP 8 is Python's style guide." in res.content and res.content.rstrip().endswith("markdown hyperlinks.")
    assert res.data["searchCount"] == 1 and res.data["results"][0]["tool_use_id"] == "srvtoolu_01"
    assert used[0][1].web_search_requests == 1   # metered: counted in the session's usage


async def test_pause_turn_is_continued_with_the_server_blocks_replayed_verbatim(tmp_path):
    api = ScriptedAPI(with_searches(sse(*search_blocks("q1")), 1, stop="pause_turn"),
                      with_searches(sse(text("Summary after the pause.")), 0))
    res = await search(ctx_for(tmp_path, api), query="q1", blocked_domains=["spam.example"])
    second = api.requests[1].body
    assert "tool_choice" not in second and second["tools"][0]["blocked_domains"] == ["spam.example"]
    replay = second["messages"][1]
    assert replay["role"] == "assistant"
    assert [b["type"] for b in replay["content"]] == ["server_tool_use", "web_search_tool_result"]
    assert replay["content"][0]["input"] == {"query": "q1"} and replay["content"][1]["content"] == HITS
    assert "Summary after the pause." in res.content and res.data["searchCount"] == 1


async def test_search_error_and_validation(tmp_path):
    err = Block({"type": "web_search_tool_result", "tool_use_id": "s1",
                 "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}}, [])
    api = ScriptedAPI(sse(err))
    res = await search(ctx_for(tmp_path, api), query="anything")
    assert "Web search error: max_uses_exceeded" in res.content
    with pytest.raises(ToolError, match="Cannot specify both"):
        await search(ctx_for(tmp_path, api), query="xx", allowed_domains=["a.com"], blocked_domains=["b.com"])
    with pytest.raises(ToolError, match="query"):
        parse_tool_input(WebSearchTool(), {"query": "x"})   # minLength 2, as Claude Code


def test_usage_counts_searches_and_their_cost():
    u = Usage.from_api({"input_tokens": 10, "output_tokens": 5, "server_tool_use": {"web_search_requests": 3}})
    assert u.web_search_requests == 3 and "web_search_requests" not in u.to_dict()
    base = Usage(input_tokens=10, output_tokens=5)
    assert cost_usd(u, "claude-sonnet-4-5") == pytest.approx(cost_usd(base, "claude-sonnet-4-5") + 0.03)


class _Named:
    def __init__(self, name):
        self.name = name


def test_gate_offers_it_only_on_the_anthropic_provider(tmp_path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    tool = next(t for t in builtin_tools(lazy=True) if t.name == "WebSearch")
    assert not tool.is_enabled(ctx) and "no model provider" in web_search_unavailable(ctx)
    ctx.side_provider = _Named("openai")
    assert not tool.is_enabled(ctx)
    assert web_search_unavailable(ctx) == ("WebSearch is off: it uses the Anthropic API's server-side web search, "
                                           "which the openai provider lacks")
    ctx.side_provider = _Named("anthropic")
    assert tool.is_enabled(ctx) and web_search_unavailable(ctx) is None and WebSearchTool().is_enabled(ctx)


async def test_permission_asks_unless_a_rule_allows(tmp_path):
    tool, ctx = WebSearchTool(), ToolContext(cwd=tmp_path, project_dir=tmp_path)
    inp = parse_tool_input(tool, {"query": "news"})
    opinion = await tool.check_permissions(inp, ctx)
    assert PermissionPolicy(cwd=tmp_path).decide(tool, inp, opinion, {"query": "news"}).behavior \
        is PermissionBehavior.ASK
    assert PermissionPolicy(cwd=tmp_path, allow=["WebSearch"]).decide(tool, inp, opinion, {}).behavior \
        is PermissionBehavior.ALLOW


def codeloop(args, *, cwd, base_url):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": base_url,
                "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd)})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def test_cli_websearch_counts_requests_in_the_result(tmp_path):
    api = ScriptedAPI(sse(tool_use("WebSearch", {"query": "pep 8 line length"}, id="ws")),
                      with_searches(sse(*search_blocks("pep 8 line length"), text("79 characters.")), 2),
                      sse(text("PEP 8 says 79. Sources: [PEP 8](https://peps.python.org/pep-0008/)")))
    with api.serve() as url:
        r = codeloop(["-p", "line length?", "--output-format", "json", "--allowedTools", "WebSearch"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert "WebSearch" in api.requests[0].tool_names
    assert [t.get("type") for t in api.requests[1].body["tools"]] == [SERVER_TOOL_TYPE]
    result = next(b for b in api.requests[2].messages[-1]["content"] if b.get("type") == "tool_result")
    assert "https://peps.python.org/pep-0008/" in json.dumps(result["content"])
    assert res["usage"]["server_tool_use"]["web_search_requests"] == 2
    assert res["result"].startswith("PEP 8 says 79.")


def _conversation(tmp_path, provider):
    from codeloop.session.conversation import Conversation, ConversationConfig

    cfg = ConversationConfig(cwd=tmp_path, model="qwen3:8b", tools=builtin_tools(lazy=True), system_prompt=["t"],
                             user_context={}, persist=False)
    return Conversation(cfg, provider, session_id="11111111-2222-4333-8444-555555555555")


async def test_status_says_in_one_line_why_web_search_is_off(tmp_path):
    from codeloop.input.commands import _status
    from codeloop.providers.select import make_provider
    from codeloop.tools.deferred import enabled_tools

    host = type("Host", (), {})()
    host.conv = _conversation(tmp_path, make_provider("ollama", env={}))
    assert "WebSearch" not in [t.name for t in enabled_tools(host.conv.tool_pool(), host.conv.tool_context)]
    out = (await _status(host, "")).text
    lines = [" ".join(line.split()) for line in out.splitlines() if line.startswith("Web search:")]  # aligned columns
    assert lines == ["Web search: WebSearch is off: it uses the Anthropic API's server-side web search, "
                     "which the ollama provider lacks"]
    host.conv = _conversation(tmp_path, AnthropicProvider("k", base_url="http://fake"))
    assert "WebSearch" in [t.name for t in enabled_tools(host.conv.tool_pool(), host.conv.tool_context)]
    assert "Web search:" not in (await _status(host, "")).text
