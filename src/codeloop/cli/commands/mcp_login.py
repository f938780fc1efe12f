"""`codeloop mcp login NAME` and `codeloop mcp logout NAME`: a remote MCP server's OAuth sign-in
from a terminal, for the sessions that never wait on a person (print mode, stream-json, batch).

login runs the whole flow once (discovery, registration, PKCE, the browser step: the URL is
printed, and opened where a browser can open; bounded by MCP_OAUTH_TIMEOUT) and leaves the tokens
in the 0600 file every later session reads. logout deletes that file. Both name a server as
`codeloop mcp list` shows it (local, project and user scopes); errors are one line.
"""

from __future__ import annotations

import asyncio
from typing import Any

EXIT_OK, EXIT_ERROR = 0, 1


def remote_config(name: str, entries: list[tuple[str, Any, dict[str, Any]]]) -> Any:
    """The parsed config of the configured http/sse server `name`; ValueError (one line) otherwise."""
    from codeloop.mcp.config import Source, Transport, parse_server

    found = [cfg for n, _scope, cfg in entries if n == name]
    if not found:
        raise ValueError(f"No MCP server found with name: {name}")
    cfg = parse_server(name, found[0], Source.SETTINGS)
    if cfg.transport not in (Transport.HTTP, Transport.SSE) or not cfg.url:
        raise ValueError(f"MCP server {name} is a {cfg.transport.value} server: only http and sse servers sign in")
    if any(k.lower() == "authorization" for k in cfg.headers):
        raise ValueError(f"MCP server {name} sends its own Authorization header: there is nothing to sign in to")
    return cfg


def login(cfg: Any, out: Any) -> int:
    async def run() -> tuple[str, str | None, str]:
        import logging

        from codeloop.mcp.client import McpManager

        logging.getLogger("mcp").setLevel(logging.CRITICAL)   # a refusal is one line, not a traceback
        manager = McpManager()
        try:
            await manager.start([cfg], sign_in=True)
            [status] = manager.statuses()
            return status["status"], manager.errors().get(cfg.name), manager.auth_status().get(cfg.name, "")
        finally:
            await manager.aclose()

    status, error, auth = asyncio.run(run())
    if status == "connected":
        out.write(f"Signed in to {cfg.name}.\n" if auth == "authenticated" else
                  f"{cfg.name} connected without asking for a sign-in.\n")
        return EXIT_OK
    raise ValueError(f"Sign-in to {cfg.name} failed: {error or status}")


def logout(cfg: Any, out: Any) -> int:
    from codeloop.mcp.oauth import token_path

    path = token_path(cfg.name, cfg.url)
    if not path.exists():
        out.write(f"{cfg.name} holds no sign-in.\n")
        return EXIT_OK
    path.unlink()
    out.write(f"Signed out of {cfg.name} (its tokens and registration are forgotten).\n")
    return EXIT_OK
