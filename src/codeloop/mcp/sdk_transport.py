"""The transport to an in-process SDK MCP server (`"type": "sdk"`): JSON-RPC over the host's channel.

The Agent SDKs host MCP servers inside the calling program (`create_sdk_mcp_server` + `@tool`).
Claude Code reaches them through the stream-json control protocol: every JSON-RPC message the
MCP client writes goes out as an `mcp_message` control request, and the SDK's answer carries the
server's reply (`mcp_response`). This module turns that channel into the pair of streams the
`mcp` ClientSession expects, so the handshake, tools/list and tools/call are the real protocol.

`send(server, message)` is the capability the front end passes down: it returns the JSON-RPC
reply, or None for a notification. Requests travel concurrently (parallel tool calls); replies
to notifications (the SDK acks them) are dropped — the client never asked for them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

SdkSend = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | None]]

_INTERNAL_ERROR = -32603


def _parse(raw: dict[str, Any]) -> Any:
    """A JSON-RPC dict → the message object of the installed `mcp` (2.x: a TypeAdapter over a
    union; 1.x: the JSONRPCMessage RootModel)."""
    import mcp.types as types

    adapter = getattr(types, "jsonrpc_message_adapter", None)
    if adapter is not None:
        return adapter.validate_python(raw)
    # mcp 1.x: a RootModel; in 2.x (above) it is a plain union, hence the ignore for either version
    return types.JSONRPCMessage.model_validate(raw)  # type: ignore[attr-defined, unused-ignore]


@contextlib.asynccontextmanager
async def sdk_streams(server: str, send: SdkSend) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for `mcp.ClientSession`, carried by `send`."""
    import anyio
    from mcp.shared.message import SessionMessage

    to_client_send, to_client_recv = anyio.create_memory_object_stream[Any](64)
    from_client_send, from_client_recv = anyio.create_memory_object_stream[Any](64)

    async def forward(payload: dict[str, Any]) -> None:
        is_request = "method" in payload and payload.get("id") is not None
        try:
            reply = await send(server, payload)
        except Exception as exc:  # noqa: BLE001 — the channel failed: that request fails, not the session
            if not is_request:
                return
            reply = {"jsonrpc": "2.0", "id": payload["id"],
                     "error": {"code": _INTERNAL_ERROR, "message": str(exc) or type(exc).__name__}}
        if not is_request or not isinstance(reply, dict) or reply.get("id") is None:
            return
        try:
            message = _parse(reply)
        except ValueError as exc:
            message = _parse({"jsonrpc": "2.0", "id": payload["id"], "error": {
                "code": _INTERNAL_ERROR, "message": f"the SDK answered with invalid JSON-RPC: {exc}"}})
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await to_client_send.send(SessionMessage(message))

    async def pump(tg: Any) -> None:
        async with from_client_recv:
            async for item in from_client_recv:
                msg = getattr(item, "message", item)
                payload = msg.model_dump(by_alias=True, mode="json", exclude_none=True)
                tg.start_soon(forward, payload)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump, tg)
        try:
            async with to_client_send:
                yield to_client_recv, from_client_send
        finally:
            tg.cancel_scope.cancel()
