"""One MCP server's connection: its task, status, session, tools, resources and prompts.

`Connection.run()` opens the transport (with OAuth for an http or sse server that brings no
Authorization header), initializes, lists tools, resources and prompts, then holds the connection
open until it is stopped or lost. The start is bounded by the connect timeout; a browser step lifts
it to the authorization one. A server that needs a person's sign-in while the manager does not
sign in (sessions, health checks) is `needs-auth`, not failed. `request()` races each call against
the connection's end and MCP_TOOL_TIMEOUT. McpManager (client.py) owns the set of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import tempfile
from enum import Enum
from typing import Any, Protocol

from codeloop.mcp.config import ServerConfig, Transport
from codeloop.mcp.resources import paginate
from codeloop.mcp.tools import McpTool
from codeloop.mcp.transports import open_transport
from codeloop.tools.base import ToolError

log = logging.getLogger("codeloop.mcp.client")


class ServerStatus(str, Enum):
    PENDING = "pending"
    CONNECTED = "connected"
    FAILED = "failed"
    NEEDS_AUTH = "needs-auth"   # an OAuth server that wants a person's sign-in (`login()`)


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


def needs_auth_text(name: str) -> str:
    return (f"needs authentication: sign in with /mcp login {name} in an interactive session, "
            f"or `codeloop mcp login {name}`")


class Owner(Protocol):
    """What a connection needs of its manager (client.McpManager)."""
    sign_in: bool
    on_auth_url: Any
    auth_timeout: float
    tool_timeout: float | None
    sdk_send: Any

    def _bump(self) -> None: ...


class Connection:
    def __init__(self, config: ServerConfig, manager: Owner, *, sign_in: bool | None = None,
                 on_url: Any = None) -> None:
        self.config, self.manager = config, manager
        self.sign_in = manager.sign_in if sign_in is None else sign_in
        self.on_url = on_url or manager.on_auth_url
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

            self.auth = ServerAuth(self.name, cfg.url, on_url=self.on_url or print_url,
                                   on_browser_step=self._browser_step, sign_in=self.sign_in,
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
        if self.status in (ServerStatus.FAILED, ServerStatus.NEEDS_AUTH):
            return
        if self.auth is not None and self.auth.declined:   # not broken: waiting for a person to sign in
            self.status, self.error = ServerStatus.NEEDS_AUTH, needs_auth_text(self.name)
        else:
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
