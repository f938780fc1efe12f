"""McpManager against real MCP servers written with the SDK's own server API (tests/mcp/servers):
stdio, streamable HTTP and SSE; failing, silent and crashing servers; late connections; shutdown;
and one query() turn calling an MCP tool under permission rules."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

from codeloop.mcp.client import McpManager  # noqa: E402
from codeloop.mcp.config import ServerConfig, Transport  # noqa: E402
from codeloop.mcp.sources import load_mcp_configs  # noqa: E402
from codeloop.tools.base import ToolContext, ToolError  # noqa: E402
from codeloop.tools.registry import parse_tool_input  # noqa: E402
from mcpkit import ServerProcesses, endpoint  # noqa: E402

SERVERS = Path(__file__).parent / "servers"
HANG_GUARD = 60  # seconds: a hung connection fails the test instead of the run


def stdio(name: str, script: str = "tools_server.py", *args: str) -> ServerConfig:
    return ServerConfig(name, Transport.STDIO, command=sys.executable, args=(str(SERVERS / script), *args))


def tools_by_name(manager: McpManager) -> dict:
    return {t.name: t for t in manager.tools()}


async def call(tool, args: dict, tmp_path: Path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    return await asyncio.wait_for(tool.call(parse_tool_input(tool, args), ctx), HANG_GUARD)


@pytest.fixture
async def manager():
    m = McpManager()
    yield m
    await asyncio.wait_for(m.aclose(), HANG_GUARD)


@pytest.fixture
def http_server():
    """Start tools_server.py over HTTP (or SSE) in a subprocess; yields a function(mode) → url."""
    servers = ServerProcesses()
    yield lambda mode: endpoint(servers.start("tools_server.py", mode), mode)
    servers.stop_all()


async def test_stdio_server_tools_schemas_and_results(manager, tmp_path):
    await manager.start([stdio("tools")], timeout=HANG_GUARD)
    assert manager.statuses() == [{"name": "tools", "status": "connected"}]
    tools = tools_by_name(manager)
    assert {"mcp__tools__echo", "mcp__tools__add", "mcp__tools__image", "mcp__tools__peek"} <= set(tools)
    add_schema = tools["mcp__tools__add"].api_schema()["input_schema"]
    assert add_schema["properties"].keys() == {"a", "b"} and set(add_schema["required"]) == {"a", "b"}
    assert tools["mcp__tools__peek"].is_read_only(None) and not tools["mcp__tools__echo"].is_read_only(None)

    assert (await call(tools["mcp__tools__echo"], {"text": "hi"}, tmp_path)).content == "echo: hi"
    assert (await call(tools["mcp__tools__add"], {"a": 2, "b": 40}, tmp_path)).content == "42"
    image = await call(tools["mcp__tools__image"], {}, tmp_path)
    assert image.content[0]["type"] == "image" and image.content[0]["source"]["media_type"] == "image/png"
    assert image.content[0]["source"]["data"].startswith("iVBOR")
    failed = await call(tools["mcp__tools__fail"], {"reason": "nope"}, tmp_path)
    assert failed.is_error and not image.is_error
    # server-side argument validation comes back as an error result, not an exception
    assert (await call(tools["mcp__tools__add"], {"a": "x"}, tmp_path)).is_error


async def test_output_cap_applies_to_real_results(manager, tmp_path, monkeypatch):
    monkeypatch.setenv("MAX_MCP_OUTPUT_TOKENS", "100")
    await manager.start([stdio("tools")], timeout=HANG_GUARD)
    result = await call(tools_by_name(manager)["mcp__tools__big"], {"n": 10_000}, tmp_path)
    assert result.content.startswith("x" * 400) and "x" * 401 not in result.content
    assert "OUTPUT TRUNCATED" in result.content


async def test_failing_servers_are_reported_without_stopping_the_others(manager):
    await manager.start([stdio("good"), ServerConfig("ghost", Transport.STDIO, command="no-such-mcp-server-xyz"),
                         stdio("dies", "crash_on_start.py")], timeout=HANG_GUARD)
    assert manager.statuses() == [{"name": "good", "status": "connected"}, {"name": "ghost", "status": "failed"},
                                  {"name": "dies", "status": "failed"}]
    errors = manager.errors()
    assert "no-such-mcp-server-xyz" in errors["ghost"]
    assert "missing configuration" in errors["dies"]  # the server's stderr is quoted
    assert {t.server for t in manager.tools()} == {"good"}

    # a server that never answers initialize fails when its connect timeout runs out
    await manager.start([stdio("silent", "silent_server.py")], timeout=1.0)
    assert {"name": "silent", "status": "failed"} in manager.statuses()
    assert "timed out" in manager.errors()["silent"]


async def test_crash_mid_call_is_a_clear_error_and_other_servers_keep_working(manager, tmp_path):
    await manager.start([stdio("fragile"), stdio("steady")], timeout=HANG_GUARD)
    tools = tools_by_name(manager)
    version = manager.version
    with pytest.raises(ToolError, match="MCP server fragile disconnected") as exc:
        await call(tools["mcp__fragile__crash"], {}, tmp_path)
    assert "about to crash" in str(exc.value)
    assert {"name": "fragile", "status": "failed"} in manager.statuses()
    assert manager.version > version and {t.server for t in manager.tools()} == {"steady"}
    # a later call to the dead server's tools errors clearly; the other server still answers
    with pytest.raises(ToolError, match="MCP server fragile is not connected"):
        await call(tools["mcp__fragile__echo"], {"text": "x"}, tmp_path)
    assert (await call(tools["mcp__steady__echo"], {"text": "still here"}, tmp_path)).content == "echo: still here"


async def test_tool_timeout_errors_but_keeps_the_server(tmp_path):
    manager = McpManager(tool_timeout=0.2)
    try:
        await manager.start([stdio("slow")], timeout=HANG_GUARD)
        tools = tools_by_name(manager)
        with pytest.raises(ToolError, match="timed out"):
            await call(tools["mcp__slow__sleep"], {"seconds": 30}, tmp_path)
        assert manager.statuses() == [{"name": "slow", "status": "connected"}]
        assert (await call(tools["mcp__slow__echo"], {"text": "ok"}, tmp_path)).content == "echo: ok"
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)


async def test_servers_connecting_late_grow_the_tool_list(manager):
    await manager.start([stdio("late")], timeout=HANG_GUARD, wait=0)
    assert manager.statuses() == [{"name": "late", "status": "pending"}] and manager.tools() == []
    assert manager.refresh() == []
    assert manager.refresh() is None  # unchanged since the last refresh
    await asyncio.wait_for(manager.wait_settled(), HANG_GUARD)
    assert manager.statuses() == [{"name": "late", "status": "connected"}]
    fresh = manager.refresh()
    assert fresh is not None and "mcp__late__echo" in {t.name for t in fresh}


async def test_http_and_sse_servers(manager, http_server, tmp_path):
    http_url, sse_url = http_server("http"), http_server("sse")
    cli = json.dumps({"mcpServers": {"web": {"type": "http", "url": http_url, "headers": {"X-Test": "1"}},
                                     "stream": {"type": "sse", "url": sse_url}}})
    configs, errors = load_mcp_configs(tmp_path, settings_servers={}, cli_configs=[cli], strict=True,
                                       include_project=False)
    assert errors == []
    await manager.start(configs, timeout=HANG_GUARD)
    assert manager.statuses() == [{"name": "web", "status": "connected"}, {"name": "stream", "status": "connected"}]
    tools = tools_by_name(manager)
    assert (await call(tools["mcp__web__add"], {"a": 1, "b": 2}, tmp_path)).content == "3"
    assert (await call(tools["mcp__stream__echo"], {"text": "sse"}, tmp_path)).content == "echo: sse"


async def test_aclose_leaves_no_server_process(tmp_path):
    manager = McpManager()
    await manager.start([stdio("a"), stdio("b")], timeout=HANG_GUARD)
    tools = tools_by_name(manager)
    pids = [int((await call(tools[f"mcp__{n}__pid"], {}, tmp_path)).content) for n in ("a", "b")]
    await asyncio.wait_for(manager.aclose(), HANG_GUARD)
    assert manager.statuses() == [] and manager.tools() == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_project_mcp_json_server_used_through_query_under_permission_rules(manager, tmp_path):
    from fakeapi import ScriptedAPI, sse, text, tool_use
    from loophelpers import make_params, run, terminal

    from codeloop.permissions.policy import PermissionMode, PermissionPolicy

    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"tools": {
        "command": sys.executable, "args": [str(SERVERS / "tools_server.py")]}}}))
    configs, errors = load_mcp_configs(tmp_path, settings_servers={}, cli_configs=[], strict=False,
                                       include_project=True)
    assert errors == [] and list(configs) == ["tools"]
    await manager.start(configs, timeout=HANG_GUARD)
    api = ScriptedAPI(sse(tool_use("mcp__tools__add", {"a": 20, "b": 22}, id="toolu_add"),
                          tool_use("mcp__tools__echo", {"text": "x"}, id="toolu_echo")),
                      sse(text("The sum is 42.")))
    policy = PermissionPolicy(mode=PermissionMode.DEFAULT, allow=["mcp__tools__add"], deny=[])
    params = make_params(api, tmp_path, tools=manager.tools(), policy=policy, refresh_tools=manager.tools)
    events = await asyncio.wait_for(run(params), HANG_GUARD)
    assert terminal(events).reason.value == "completed"
    results = {b["tool_use_id"]: b for m in api.requests[1].messages if m["role"] == "user"
               for b in m["content"] if b.get("type") == "tool_result"}
    assert results["toolu_add"]["content"] == "42" and not results["toolu_add"].get("is_error")
    assert results["toolu_echo"]["is_error"]  # not allowed by the rules: denied, never called
    assert "mcp__tools__add" in api.requests[0].tool_names
