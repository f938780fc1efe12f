"""SDK MCP servers (`"type": "sdk"`): the real MCP client speaks JSON-RPC through a `send`
capability (the stream-json control channel in production). Here `send` is a scripted peer that
answers like an SDK-hosted server, so the handshake, tools/list and tools/call, notification
acks and channel failures are checked without the SDK."""

import asyncio

import pytest

pytest.importorskip("mcp")

from codeloop.mcp.client import McpManager  # noqa: E402
from codeloop.mcp.config import Source, Transport, parse_server  # noqa: E402
from codeloop.tools.base import ToolContext, ToolError  # noqa: E402

GUARD_S = 30


class Peer:
    """Answers JSON-RPC the way the SDK's bridge does (acks notifications with an id-less result)."""

    def __init__(self, fail_calls=False):
        self.seen: list[dict] = []
        self.fail_calls = fail_calls

    async def send(self, server, msg):
        self.seen.append(msg)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            return {"jsonrpc": "2.0", "result": {}}  # the SDK's ack for a notification
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": server, "version": "1.0"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "shout", "description": "Upper-cases",
                                 "inputSchema": {"type": "object", "properties": {"s": {"type": "string"}}}}]}
        elif method == "tools/call":
            if self.fail_calls:
                return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "handler exploded"}}
            result = {"content": [{"type": "text", "text": msg["params"]["arguments"]["s"].upper()}]}
        else:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}


async def connect(peer_send):
    manager = McpManager()
    cfg = parse_server("calc", {"type": "sdk", "name": "calc"}, Source.CLI)
    assert cfg.transport is Transport.SDK
    await manager.start([cfg])
    assert manager.statuses() == [{"name": "calc", "status": "pending"}]  # waits for the SDK channel
    await asyncio.wait_for(manager.start_sdk(peer_send), GUARD_S)
    return manager


async def test_handshake_list_and_call_over_the_channel(tmp_path):
    peer = Peer()
    manager = await connect(peer.send)
    try:
        assert manager.statuses() == [{"name": "calc", "status": "connected"}]
        [tool] = manager.tools()
        assert tool.name == "mcp__calc__shout"
        result = await asyncio.wait_for(tool.call(tool.input_model.model_validate({"s": "hi"}),
                                                  ToolContext(cwd=tmp_path, project_dir=tmp_path)), GUARD_S)
        assert "HI" in str(result.content)
        methods = [m.get("method") for m in peer.seen]
        assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"]
        assert "tools/call" in methods
    finally:
        await manager.aclose()


async def test_a_failing_call_is_a_tool_error_and_the_server_stays_up(tmp_path):
    manager = await connect(Peer(fail_calls=True).send)
    try:
        [tool] = manager.tools()
        with pytest.raises(ToolError, match="handler exploded"):
            await asyncio.wait_for(tool.call(tool.input_model.model_validate({"s": "x"}),
                                             ToolContext(cwd=tmp_path, project_dir=tmp_path)), GUARD_S)
        assert manager.statuses() == [{"name": "calc", "status": "connected"}]
    finally:
        await manager.aclose()


async def test_a_broken_channel_fails_the_server_with_its_reason():
    async def send(server, msg):
        raise EOFError("stdin closed before the SDK answered")

    manager = await connect(send)
    try:
        assert manager.statuses() == [{"name": "calc", "status": "failed"}]
        assert "stdin closed" in manager.errors()["calc"]
    finally:
        await manager.aclose()
