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
import contextlib
import logging
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from codeloop.mcp.config import ServerConfig, Transport
from codeloop.mcp.resources import ListMcpResourcesTool, ReadMcpResourceTool, paginate, unknown_server
from codeloop.mcp.tools import McpTool
from codeloop.mcp.transports import open_transport
from codeloop.tools.base import Tool, ToolError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_AUTH_TIMEOUT_S = 300.0
_CLOSE_GRACE_S = 10.0


class ServerStatus(str, Enum):
    PENDING = "pending"
    CONNECTED = "connected"
    FAILED = "failed"


def env_timeout_s(name: str, default: float | None) -> float | None:
    """An env var in milliseconds (Claude Code's MCP_TIMEOUT / MCP_TOOL_TIMEOUT unit) → seconds."""
    value = os.environ.get(name, "").strip()
    try:
        return float(value) / 1000 if value and float(value) > 0 else default
    except ValueError:
        return default


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Connection:
    def __init__(self, config: ServerConfig, manager: McpManager) -> None:
        self.config, self.manager = config, manager
        self.status = ServerStatus.PENDING
        self.error: str | None = None
        self.session: Any = None
        self.tools: list[McpTool] = []
        self.has_resources = False
        self.resources: list[dict[str, Any]] = []    # resources/list, wire-shaped
        self.prompts: list[dict[str, Any]] = []      # prompts/list, wire-shaped
        self.task: asyncio.Task | None = None
        self.scope: Any = None                   # the anyio CancelScope around the connection
        self.stopping = False
        self.errlog: Any = None                  # the stdio server's stderr, quoted in errors
        self.auth: Any = None                    # mcp.oauth.ServerAuth of an http/sse server
        self.settled = asyncio.Event()           # connected or failed
        self.ended = asyncio.Event()             # the connection task has finished

    @property
    def name(self) -> str:
        return self.config.name

    def _auth_provider(self) -> Any:
        """OAuth for an http or sse server that brings no Authorization header of its own."""
        cfg = self.config
        if cfg.transport not in (Transport.HTTP, Transport.SSE) or not cfg.url \
                or any(k.lower() == "authorization" for k in cfg.headers):
            return None
        if self.auth is None:
            from codeloop.mcp.oauth import ServerAuth, print_url

            self.auth = ServerAuth(self.name, cfg.url, on_url=self.manager.on_auth_url or print_url,
                                   on_browser_step=self._browser_step, sign_in=self.manager.sign_in,
                                   client_id=cfg.oauth.get("clientId"), callback_port=cfg.oauth.get("callbackPort"))
        return self.auth.provider()

    def _browser_step(self) -> None:
        """A person has to sign in: the start timeout gives way to the (longer) authorization one."""
        import anyio

        if self.scope is not None:
            self.scope.deadline = anyio.current_time() + self.manager.auth_timeout

    def fail(self, error: str) -> None:
        if self.auth is not None:
            self.auth.failed()
        was_connected = self.status is ServerStatus.CONNECTED
        if self.status is ServerStatus.FAILED:
            return
        self.status, self.error = ServerStatus.FAILED, error
        self.settled.set()
        log.info("MCP server %s failed: %s", self.name, error)
        if was_connected:
            self.manager._bump()

    async def run(self, timeout: float) -> None:
        import anyio

        errlog = self.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        try:
            with anyio.CancelScope() as scope:
                self.scope = scope
                if self.stopping:
                    scope.cancel()
                scope.deadline = anyio.current_time() + timeout
                async with contextlib.AsyncExitStack() as stack:
                    read, write = await open_transport(stack, self.config, errlog, self.manager.sdk_send,
                                                       self._auth_provider())
                    from mcp import ClientSession

                    session = await stack.enter_async_context(ClientSession(read, write))
                    init = await session.initialize()
                    specs = await paginate(session.list_tools, "tools")
                    await self._list_extras(session, getattr(init, "capabilities", None))
                    scope.deadline = math.inf  # connected: the timeout bounded the start only
                    self.session = session
                    self.tools = [McpTool(self.name, spec, self.call) for spec in specs]
                    self.status = ServerStatus.CONNECTED
                    self.settled.set()
                    self.manager._bump()
                    await anyio.sleep_forever()
            if self.status is ServerStatus.PENDING and not self.stopping:
                self.fail(f"timed out after {timeout:g}s waiting for the server to start (MCP_TIMEOUT)")
        except Exception as exc:  # noqa: BLE001 — any failure of one server is that server's status
            self.fail(self._with_stderr(_describe(exc), errlog))
        finally:
            if self.status is ServerStatus.CONNECTED and not self.stopping:
                self.fail("the connection ended")
            self.settled.set()
            self.ended.set()

    @staticmethod
    def _with_stderr(message: str, errlog: Any) -> str:
        try:
            errlog.seek(0)
            tail = errlog.read()[-400:].strip()
        except (OSError, ValueError, AttributeError):
            tail = ""
        return f"{message} (stderr: {tail})" if tail else message

    async def _list_extras(self, session: Any, caps: Any) -> None:
        """Resources and prompts, where the server offers them; a failure here costs only them."""
        for kind in ("resources", "prompts"):
            if getattr(caps, kind, None) is None:
                continue
            try:
                setattr(self, kind, await paginate(getattr(session, f"list_{kind}"), kind))
            except Exception as exc:  # noqa: BLE001 — the server's tools still work
                log.info("MCP server %s: listing %s failed: %s", self.name, kind, _describe(exc))
        # SDK servers advertise the capability with nothing behind it: resources make the difference
        self.has_resources = bool(self.resources)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return await self.request(f"tool {tool}", lambda: self.session.call_tool(tool, args))

    async def request(self, what: str, send: Any) -> dict[str, Any]:
        """One request to the server (`send()` makes its coroutine), raced against the connection's
        end and bounded by MCP_TOOL_TIMEOUT; the result as a wire-shaped dict, or a one-line ToolError."""
        if self.status is not ServerStatus.CONNECTED or self.session is None:
            raise ToolError(f"MCP server {self.name} is not connected ({self.status.value}"
                            f"{': ' + self.error if self.error else ''})")
        call = asyncio.ensure_future(send())
        ended = asyncio.ensure_future(self.ended.wait())
        done: set[asyncio.Future] = set()
        timeout = self.manager.tool_timeout  # enforced here: the SDK's own parameter changed type in 2.x
        try:
            # Race the call against the connection's end: a dead server must not hang the turn.
            done, _ = await asyncio.wait({call, ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not call.done():
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
        if not done:
            raise ToolError(f"MCP server {self.name}: {what} timed out after {timeout:g}s (MCP_TOOL_TIMEOUT)")
        if call not in done or call.cancelled():
            self.fail(self._with_stderr("the connection ended", self.errlog))
            raise ToolError(f"MCP server {self.name} disconnected: {self.error}")
        exc = call.exception()
        if exc is None:
            return dict(call.result().model_dump(by_alias=True, exclude_none=True, mode="json"))
        if self._connection_lost(exc):
            self.fail(self._with_stderr(_describe(exc), self.errlog))
            raise ToolError(f"MCP server {self.name} disconnected: {self.error}") from exc
        raise ToolError(f"MCP server {self.name}: {what} failed: {_describe(exc)}") from exc

    def _connection_lost(self, exc: BaseException) -> bool:
        import anyio

        if self.ended.is_set() or isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError,
                                                   anyio.EndOfStream, ConnectionError, EOFError)):
            return True
        return "connection closed" in str(exc).lower()


class McpManager:
    """The MCP connections of one session. See the module docstring for the lifecycle."""

    def __init__(self, *, tool_timeout: float | None = None) -> None:
        self._conns: dict[str, _Connection] = {}
        self._version = 0
        self._seen_version = -1
        # MCP_TOOL_TIMEOUT (ms) bounds a single tool call; unset means no limit, as in Claude Code.
        self.tool_timeout = tool_timeout if tool_timeout is not None else env_timeout_s("MCP_TOOL_TIMEOUT", None)
        self.sdk_send: Any = None                     # mcp.sdk_transport.SdkSend, once an SDK drives us
        self.deferred_sdk: list[ServerConfig] = []   # SDK servers waiting for that channel
        self._resource_tools: list[Tool] = [ListMcpResourcesTool(self), ReadMcpResourceTool(self)]
        # OAuth's browser step: where the authorization URL is said (None: stderr), how long it may take
        self.on_auth_url: Any = None
        self.sign_in = True      # False (health checks): a server that needs the browser step is "needs-auth"
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
                    timeout: float | None = None, wait: float | None = None) -> None:
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
            conn = self._conns[cfg.name] = _Connection(cfg, self)
            conn.task = asyncio.create_task(conn.run(timeout), name=f"mcp:{cfg.name}")
            new.append(conn)
        await self.wait_settled(wait, conns=new)

    async def wait_settled(self, timeout: float | None = None, *, conns: list[_Connection] | None = None) -> None:
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
        """`[{"name", "status"}]` for system/init `mcp_servers`; status is pending|connected|failed."""
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

    def servers(self) -> list[tuple[ServerConfig, ServerStatus, str | None, list[McpTool]]]:
        """(config, status, error, tools) of every server, in configuration order (/mcp)."""
        return [*((c.config, c.status, c.error, list(c.tools)) for c in self._conns.values()),
                *((cfg, ServerStatus.PENDING, None, []) for cfg in self.deferred_sdk)]

    async def reconnect(self, name: str, *, timeout: float | None = None) -> ServerStatus:
        """Stop server `name` (whatever its state) and start it again — after a logout, it signs in
        afresh; its new status. KeyError if unknown."""
        conn = self._conns[name]
        await self._stop([conn])
        del self._conns[name]
        self._bump()   # its tools are gone until it is back
        await self.start([conn.config], timeout=timeout)
        return self._conns[name].status

    def tools(self) -> list[Tool]:
        """The tools of every connected server, in configuration order; and the two resource tools
        while a connected server offers resources."""
        live = [c for c in self._conns.values() if c.status is ServerStatus.CONNECTED]
        return [*(t for c in live for t in c.tools), *(self._resource_tools if any(c.has_resources for c in live)
                                                       else [])]

    def connected_servers(self) -> list[str]:
        return [c.name for c in self._conns.values() if c.status is ServerStatus.CONNECTED]

    def _connected(self, server: str) -> _Connection:
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

    async def _stop(self, conns: list[_Connection]) -> None:
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
