"""MCP tools as codeloop Tools: names, schemas, input validation, permissions and result mapping (no SDK)."""

import pytest

from codeloop.mcp.tools import McpTool, map_result, tool_name
from codeloop.tools.base import PermissionBehavior, ToolContext
from codeloop.tools.registry import parse_tool_input


def test_names_are_sanitised_and_capped():
    assert tool_name("my server", "get.thing/v2") == "mcp__my_server__get_thing_v2"
    long_a, long_b = tool_name("s" * 40, "tool_" + "a" * 40), tool_name("s" * 40, "tool_" + "a" * 39 + "b")
    assert len(long_a) == 64 and len(long_b) == 64 and long_a != long_b
    assert all(c.isalnum() or c in "_-" for c in long_a)


async def test_tool_exposes_the_server_schema_and_accepts_any_object(tmp_path):
    calls = []

    async def caller(name, args):
        calls.append((name, args))
        return {"content": [{"type": "text", "text": "ok"}]}

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tool = McpTool("srv.x", {"name": "search", "description": "Find things", "inputSchema": schema,
                             "annotations": {"readOnlyHint": True}}, caller)
    assert tool.name == "mcp__srv_x__search"
    assert tool.api_schema() == {"name": "mcp__srv_x__search", "description": "Find things", "input_schema": schema}
    inp = parse_tool_input(tool, {"q": "needle", "limit": 3, "nested": {"a": [1]}})
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    result = await tool.call(inp, ctx)
    assert calls == [("search", {"q": "needle", "limit": 3, "nested": {"a": [1]}})] and result.content == "ok"
    assert tool.is_read_only(inp) and tool.is_concurrency_safe(inp)
    # readOnlyHint is the server's claim, not a grant: permission rules decide
    assert (await tool.check_permissions(inp, ctx)).behavior is PermissionBehavior.ASK
    plain = McpTool("s", {"name": "t", "inputSchema": {}}, caller)
    assert not plain.is_read_only(inp) and plain.input_schema() == {"type": "object", "properties": {}}


def test_results_map_text_images_resources_and_errors():
    result = map_result({"content": [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": "AAA=", "mimeType": "image/jpeg"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}},
        {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AA==", "mimeType": "application/zip"}}]})
    assert result.content == [
        {"type": "text", "text": "hello"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAA="}},
        {"type": "text", "text": "[Resource file:///a.txt]\nbody"},
        {"type": "text", "text": "[Binary resource file:///b.bin (application/zip) omitted]"}]
    err = map_result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert err.is_error and err.content == "boom"
    structured = map_result({"content": [], "structuredContent": {"n": 1}})
    assert structured.content == '{"n": 1}' and structured.data == {"n": 1}


def test_output_is_capped_with_a_note(monkeypatch):
    big = {"content": [{"type": "text", "text": "a" * 500}, {"type": "text", "text": "tail"}]}
    capped = map_result(big, max_tokens=100)
    assert capped.content.startswith("a" * 400) and "a" * 401 not in capped.content
    assert "OUTPUT TRUNCATED" in capped.content and "100-token" in capped.content and "tail" not in capped.content
    assert "TRUNCATED" not in map_result(big).content  # 25k tokens by default

    from codeloop.mcp.tools import max_output_tokens
    monkeypatch.setenv("MAX_MCP_OUTPUT_TOKENS", "50")
    assert max_output_tokens() == 50
    monkeypatch.setenv("MAX_MCP_OUTPUT_TOKENS", "junk")
    assert max_output_tokens() == 25_000


@pytest.mark.parametrize("env,expected", [("", 30.0), ("5000", 5.0), ("junk", 30.0), ("-1", 30.0)])
def test_mcp_timeout_is_milliseconds(monkeypatch, env, expected):
    from codeloop.mcp.client import DEFAULT_TIMEOUT_S, env_timeout_s

    monkeypatch.setenv("MCP_TIMEOUT", env)
    assert env_timeout_s("MCP_TIMEOUT", DEFAULT_TIMEOUT_S) == expected


def test_importing_the_package_does_not_import_the_sdk():
    import subprocess
    import sys

    code = ("import sys, codeloop.mcp, codeloop.mcp.config, codeloop.mcp.tools, codeloop.mcp.client; "
            "print('mcp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
