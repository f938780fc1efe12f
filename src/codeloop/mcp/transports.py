"""How a connection to one MCP server is opened: stdio, streamable HTTP, SSE or an SDK channel.

The HTTP transports take an optional httpx2 `Auth` (mcp.oauth's provider for OAuth). Imports the
`mcp` SDK inside the function only, as mcp.client does.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from codeloop.mcp.config import ServerConfig, Transport


async def open_transport(stack: contextlib.AsyncExitStack, cfg: ServerConfig, errlog: Any,
                         sdk_send: Any = None, auth: Any = None) -> tuple[Any, Any]:
    """The connection's (read, write) streams, entered on `stack`; `auth`: an httpx2 Auth (OAuth)."""
    if cfg.transport is Transport.SDK:
        from codeloop.mcp.sdk_transport import sdk_streams

        return await stack.enter_async_context(sdk_streams(cfg.name, sdk_send))
    if cfg.transport is Transport.STDIO:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        # The full environment, as Claude Code passes it (the SDK's default keeps only a few vars).
        params = StdioServerParameters(command=cfg.command or "", args=list(cfg.args),
                                       env={**os.environ, **cfg.env}, cwd=cfg.cwd)
        streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    elif cfg.transport is Transport.HTTP:
        headers = dict(cfg.headers) or None
        try:  # mcp 2.x (and late 1.x): headers go on an http client we hand over
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client
        except ImportError:  # the 1.x name, gone in 2.x: an ignore for whichever version is installed
            from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined, unused-ignore]

            streams = await stack.enter_async_context(streamablehttp_client(cfg.url or "", headers=headers,
                                                                            auth=auth))
        else:
            client = await stack.enter_async_context(create_mcp_http_client(headers=headers, auth=auth))
            streams = await stack.enter_async_context(streamable_http_client(cfg.url or "", http_client=client))
    else:
        from mcp.client.sse import sse_client

        streams = await stack.enter_async_context(sse_client(cfg.url or "", headers=dict(cfg.headers) or None,
                                                                     auth=auth))
    return streams[0], streams[1]  # 1.x streamable HTTP yields a third item (session id getter)
