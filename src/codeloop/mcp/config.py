"""MCP server configuration: where it comes from, its shape, and validation.

Sources, later overriding earlier for a server of the same name: user scope (Claude Code's
`~/.claude.json` top-level `mcpServers`), the project's `.mcp.json` (only when `include_project` —
the caller decides whether the folder is trusted), local scope (`~/.claude.json`
projects[<cwd>].mcpServers — the user's own file, so always read), settings `mcpServers`, then
each `--mcp-config` value (a file path or a JSON string) in order. With `strict`
(`--strict-mcp-config`) only the `--mcp-config` values count. `codeloop mcp add` writes the
same places Claude Code's `claude mcp add` does.

Each entry is `{"command", "args", "env"}` (stdio; `"type": "stdio"` optional),
`{"type": "http" | "sse", "url", "headers", "oauth": {"clientId", "callbackPort"}}`, or
`{"type": "sdk", "name"}` — a server hosted in the Agent SDK program that drives us, reached over
the control protocol (see sdk_transport.py).
`${VAR}` and `${VAR:-default}` are expanded from the environment in commands, args, env values,
URLs and headers, as Claude Code does.
A bad entry or file is reported in the returned error list; it never stops the others.
(Reading the sources is `mcp.sources`: a session with none configured never imports this module.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Transport(str, Enum):
    STDIO = "stdio"
    HTTP = "http"
    SSE = "sse"
    SDK = "sdk"


class Source(str, Enum):
    USER = "user"
    LOCAL = "local"
    PROJECT = "project"
    SETTINGS = "settings"
    CLI = "cli"
    PLUGIN = "plugin"    # a plugin's .mcp.json or manifest (config.plugins; parsed by the assembly)


_TYPE_ALIASES = {"stdio": Transport.STDIO, "http": Transport.HTTP, "streamable-http": Transport.HTTP,
                 "streamable_http": Transport.HTTP, "streamablehttp": Transport.HTTP, "sse": Transport.SSE,
                 "sdk": Transport.SDK}


@dataclass(frozen=True)
class ServerConfig:
    """How to reach one MCP server: its transport and its command or URL."""
    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    source: Source = Source.SETTINGS
    # http/sse: `{"clientId", "callbackPort"}` for an authorization server without dynamic registration
    oauth: Mapping[str, Any] = field(default_factory=dict)


_VAR = r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}"   # compiled on first use


def expand_env(value: str, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return re.sub(_VAR, lambda m: env.get(m.group(1), m.group(2) if m.group(2) is not None else m.group(0)), value)


def parse_server(name: str, raw: Any, source: Source, env: Mapping[str, str] | None = None) -> ServerConfig:
    """One `mcpServers` entry → `ServerConfig`; raises ValueError with a message for the user."""
    if not isinstance(raw, dict):
        raise ValueError("expected an object")
    kind = str(raw.get("type") or ("stdio" if "command" in raw else "http" if "url" in raw else "stdio")).lower()
    transport = _TYPE_ALIASES.get(kind)
    if transport is None:
        raise ValueError(f"unknown type {raw.get('type')!r} (expected stdio, http, sse or sdk)")
    if transport is Transport.SDK:
        return ServerConfig(name, transport, source=source)
    x = lambda v: expand_env(str(v), env)  # noqa: E731
    if transport is Transport.STDIO:
        command = raw.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("a stdio server needs a \"command\"")
        args = raw.get("args") or []
        if not isinstance(args, list):
            raise ValueError("\"args\" must be a list")
        env_map = raw.get("env") or {}
        if not isinstance(env_map, dict):
            raise ValueError("\"env\" must be an object")
        return ServerConfig(name, transport, command=x(command), args=tuple(x(a) for a in args),
                            env={str(k): x(v) for k, v in env_map.items()},
                            cwd=x(raw["cwd"]) if raw.get("cwd") else None, source=source)
    url = raw.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"an {transport.value} server needs a \"url\"")
    headers = raw.get("headers") or {}
    if not isinstance(headers, dict):
        raise ValueError("\"headers\" must be an object")
    return ServerConfig(name, transport, url=x(url), headers={str(k): x(v) for k, v in headers.items()},
                        source=source, oauth=_oauth(raw.get("oauth")))


def _oauth(raw: Any) -> dict[str, Any]:
    """An http/sse entry's `oauth` object: a pre-registered `clientId`, a fixed `callbackPort`."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise ValueError("\"oauth\" must be an object")
    client_id, port = raw.get("clientId"), raw.get("callbackPort")
    if client_id is not None and (not isinstance(client_id, str) or not client_id.strip()):
        raise ValueError("\"oauth.clientId\" must be a non-empty string")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
        raise ValueError("\"oauth.callbackPort\" must be a port number")
    return {k: v for k, v in (("clientId", client_id), ("callbackPort", port)) if v is not None}


def servers_from(data: Any, origin: str, source: Source, out: dict[str, ServerConfig], errors: list[str],
                  env: Mapping[str, str] | None) -> None:
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        errors.append(f"{origin}: expected an object with \"mcpServers\"")
        return
    for name, raw in servers.items():
        try:
            out[str(name)] = parse_server(str(name), raw, source, env)
        except ValueError as exc:
            errors.append(f"{origin}: MCP server {name!r}: {exc}")
