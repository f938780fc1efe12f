"""McpManager: connects to the configured MCP servers and exposes their tools, resources and prompts.

Owns the connections' lifecycle. `start()` launches every server at once, each in its own task
(the SDK's anyio task groups must be entered and left by one task), each bounded by the
connect timeout (`MCP_TIMEOUT`, milliseconds as in Claude Code, default 30 s). A server that
cannot start — bad command, crash, timeout — is `failed` with its error; the others go on.
`start(wait=…)` may return before slow servers are done: they keep connecting in the background,
and `tools()` grows (and `version` goes up) when they do, for the loop's between-turn
`refresh_tools`. A server that dies later is marked failed; calls to its tools raise a clear
`ToolError` while the session goes on. `aclose()` stops everything (stdio processes included).
SDK servers (`"type": "sdk"`) wait in `deferred_sdk` until the front end that speaks to the SDK
hands over its channel (`start_sdk(send)`); without one they are never started.

At connect a server's resources and prompts are listed too (resources.py): `resources()`,
`read_resource()`, `prompts()` and `get_prompt()` serve the resource tools, `@server:uri`
mentions and `/mcp__server__prompt` commands. An http or sse server that asks for OAuth signs in
through oauth.py (a browser step lifts the start timeout to `MCP_OAUTH_TIMEOUT`); `auth_status()`,
`logout()` and `reconnect()` are what a `/mcp` command needs.

The `mcp` SDK is imported only here and only once servers are started (it costs over a second).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from codeloop.mcp.config import ServerConfig, Transport
from codeloop.mcp.connection import ServerStatus, Connection, env_timeout_s, needs_auth_text
from codeloop.mcp.resources import ListMcpResourcesTool, ReadMcpResourceTool, unknown_server
from codeloop.mcp.tools import McpTool
from codeloop.tools.base import Tool, ToolError

__all__ = ["DEFAULT_AUTH_TIMEOUT_S", "DEFAULT_TIMEOUT_S", "McpManager", "ServerStatus", "env_timeout_s",
           "needs_auth_text"]

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_AUTH_TIMEOUT_S = 300.0
_CLOSE_GRACE_S = 10.0


class McpManager:
    """The MCP connections of one session. See the module docstring for the lifecycle."""

    def __init__(self, *, tool_timeout: float | None = None) -> None:
        self._conns: dict[str, Connection] = {}
        self._version = 0
        self._seen_version = -1
        # MCP_TOOL_TIMEOUT (ms) bounds a single tool call; unset means no limit, as in Claude Code.
        self.tool_timeout = tool_timeout if tool_timeout is not None else env_timeout_s("MCP_TOOL_TIMEOUT", None)
        self.sdk_send: Any = None                     # mcp.sdk_transport.SdkSend, once an SDK drives us
        self.deferred_sdk: list[ServerConfig] = []   # SDK servers waiting for that channel
        self._resource_tools: list[Tool] = [ListMcpResourcesTool(self), ReadMcpResourceTool(self)]
        # OAuth's browser step: where the authorization URL is said (None: stderr), how long it may take
        self.on_auth_url: Any = None
        # False (sessions, health checks): a server that needs the browser step is "needs-auth" at
        # once, so no start-up waits on a person; `login()` signs in when they ask
        self.sign_in = True
        self.auth_timeout = env_timeout_s("MCP_OAUTH_TIMEOUT", None) or DEFAULT_AUTH_TIMEOUT_S

    async def start_sdk(self, send: Any, *, timeout: float | None = None) -> None:
        """Connect the deferred SDK servers through `send` (the control protocol's mcp_message)."""
        self.sdk_send = send
        configs, self.deferred_sdk = self.deferred_sdk, []
        await self.start(configs, timeout=timeout)

    def _bump(self) -> None:
        self._version += 1

    @property
    def version(self) -> int:
        """Goes up whenever the tool list changes (a server connected, or one was lost)."""
        return self._version

    async def start(self, configs: Mapping[str, ServerConfig] | Iterable[ServerConfig], *,
                    timeout: float | None = None, wait: float | None = None, sign_in: bool | None = None,
                    on_url: Any = None) -> None:
        """Start every server in parallel. Each has `timeout` seconds (default MCP_TIMEOUT ms, 30 s)
        to connect. Returns when all have settled, or after `wait` seconds if given (0: at once);
        servers still pending then keep connecting in the background."""
        if timeout is None:
            timeout = env_timeout_s("MCP_TIMEOUT", DEFAULT_TIMEOUT_S) or DEFAULT_TIMEOUT_S
        items = list(configs.values()) if isinstance(configs, Mapping) else list(configs)
        new = []
        for cfg in items:
            if cfg.transport is Transport.SDK and self.sdk_send is None:
                self.deferred_sdk.append(cfg)
                continue
            if cfg.name in self._conns:
                continue
            conn = self._conns[cfg.name] = Connection(cfg, self, sign_in=sign_in, on_url=on_url)
            conn.task = asyncio.create_task(conn.run(timeout), name=f"mcp:{cfg.name}")
            new.append(conn)
        await self.wait_settled(wait, conns=new)

    async def wait_settled(self, timeout: float | None = None, *, conns: list[Connection] | None = None) -> None:
        """Wait until the pending servers are connected or failed (at most `timeout` seconds)."""
        waits = [asyncio.ensure_future(c.settled.wait()) for c in (conns or self._conns.values())]
        if not waits:
            return
        try:
            if timeout is None or timeout > 0:
                await asyncio.wait(waits, timeout=timeout)
        finally:
            for w in waits:
                w.cancel()

    def statuses(self) -> list[dict[str, str]]:
        """`[{"name", "status"}]` for system/init `mcp_servers`; status is pending|connected|failed|needs-auth
        (Claude Code's McpServerStatus)."""
        return [*({"name": c.name, "status": c.status.value} for c in self._conns.values()),
                *({"name": c.name, "status": ServerStatus.PENDING.value} for c in self.deferred_sdk)]

    def auth_status(self) -> dict[str, str]:
        """Server → OAuth status (mcp.oauth.AuthStatus: not-required, needs-auth, authenticated, failed)."""
        return {c.name: c.auth.status.value if c.auth is not None else "not-required" for c in self._conns.values()}

    def logout(self, name: str) -> bool:
        """Forget a server's OAuth tokens and registration; False when it has none."""
        conn = self._conns.get(name)
        if conn is None or conn.auth is None:
            return False
        conn.auth.logout()
        return True

    def errors(self) -> dict[str, str]:
        return {c.name: c.error for c in self._conns.values() if c.error}

    def problems(self) -> list[str]:
        """One line per server that is not working: `server X failed: why`, or `server X needs
        authentication: how to sign in` (the start-up warnings of every front end)."""
        return [f"server {c.name} " + (c.error if c.status is ServerStatus.NEEDS_AUTH else f"failed: {c.error}")
                for c in self._conns.values() if c.error]

    def servers(self) -> list[tuple[ServerConfig, ServerStatus, str | None, list[McpTool]]]:
        """(config, status, error, tools) of every server, in configuration order (/mcp)."""
        return [*((c.config, c.status, c.error, list(c.tools)) for c in self._conns.values()),
                *((cfg, ServerStatus.PENDING, None, []) for cfg in self.deferred_sdk)]

    async def reconnect(self, name: str, *, timeout: float | None = None, sign_in: bool | None = None,
                        on_url: Any = None) -> ServerStatus:
        """Stop server `name` (whatever its state) and start it again; its new status. KeyError if
        unknown. `sign_in=True` (what `login()` does) lets an OAuth server take the browser step,
        its authorization URL said through `on_url(server, url)`."""
        conn = self._conns[name]
        await self._stop([conn])
        del self._conns[name]
        self._bump()   # its tools are gone until it is back
        await self.start([conn.config], timeout=timeout, sign_in=sign_in, on_url=on_url)
        return self._conns[name].status

    async def login(self, name: str, *, on_url: Any = None) -> ServerStatus:
        """Sign in to server `name` now (discovery, registration, the browser step, bounded by
        MCP_OAUTH_TIMEOUT) and connect; its new status. KeyError if unknown."""
        return await self.reconnect(name, sign_in=True, on_url=on_url)

    def tools(self) -> list[Tool]:
        """The tools of every connected server, in configuration order; and the two resource tools
        while a connected server offers resources."""
        live = [c for c in self._conns.values() if c.status is ServerStatus.CONNECTED]
        return [*(t for c in live for t in c.tools), *(self._resource_tools if any(c.has_resources for c in live)
                                                       else [])]

    def connected_servers(self) -> list[str]:
        return [c.name for c in self._conns.values() if c.status is ServerStatus.CONNECTED]

    def _connected(self, server: str) -> Connection:
        conn = self._conns.get(server)
        if conn is None or conn.status is not ServerStatus.CONNECTED:
            if conn is not None and conn.error:
                raise ToolError(f"MCP server {server} is not connected ({conn.status.value}: {conn.error})")
            raise ToolError(unknown_server(server, self.connected_servers()))
        return conn

    def resources(self, server: str | None = None) -> list[dict[str, Any]]:
        """The resources of the connected servers (or of one), each with its `server`."""
        return [{**r, "server": c.name} for c in self._conns.values()
                if c.status is ServerStatus.CONNECTED and server in (None, c.name) for r in c.resources]

    async def read_resource(self, server: str, uri: str) -> dict[str, Any]:
        """`resources/read` on one server (a wire-shaped ReadResourceResult); ToolError naming the server."""
        conn = self._connected(server)
        return await conn.request(f"resource {uri}", lambda: conn.session.read_resource(uri))

    def prompts(self) -> list[tuple[str, dict[str, Any]]]:
        """(server, prompt) for every prompt of the connected servers."""
        return [(c.name, p) for c in self._conns.values() if c.status is ServerStatus.CONNECTED for p in c.prompts]

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> dict[str, Any]:
        """`prompts/get` on one server (a wire-shaped GetPromptResult); ToolError naming the server."""
        conn = self._connected(server)
        return await conn.request(f"prompt {name}", lambda: conn.session.get_prompt(name, arguments or None))

    def refresh(self) -> list[Tool] | None:
        """The new tool list if it changed since the last `refresh()`, else None."""
        if self._version == self._seen_version:
            return None
        self._seen_version = self._version
        return self.tools()

    async def aclose(self) -> None:
        await self._stop(list(self._conns.values()))
        self._conns.clear()

    async def _stop(self, conns: list[Connection]) -> None:
        for c in conns:
            c.stopping = True
            if c.scope is not None:
                c.scope.cancel()
            elif c.task is not None:
                c.task.cancel()
        tasks = [c.task for c in conns if c.task is not None]
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=_CLOSE_GRACE_S)
            for t in stuck:  # the SDK bounds its own shutdown; this is a last resort
                t.cancel()
            if stuck:
                await asyncio.wait(stuck, timeout=_CLOSE_GRACE_S)
        for c in conns:
            if c.errlog is not None:
                c.errlog.close()
