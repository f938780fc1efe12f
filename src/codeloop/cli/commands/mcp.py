"""`codeloop mcp add|add-json|add-from-claude-desktop|list|get|remove|serve|login|logout`: MCP servers
the way `claude mcp` manages them (`serve` lives in mcp_serve.py, the Claude Desktop import in
mcp_desktop.py, the OAuth sign-in of a remote server in mcp_login.py).

Owns the subcommand: its parser and the edits, written to the files Claude Code itself uses, so
either tool sees the other's servers:

    local   (default) ~/.claude.json  projects[<cwd>].mcpServers   — private, this project only
    project           <cwd>/.mcp.json  mcpServers                   — shared through the repository
    user              ~/.claude.json  mcpServers                    — private, every project

(`~` is `$CLAUDE_CONFIG_DIR` when set.) A new entry is checked with the same parser the session
uses before anything is written; writes are atomic and keep every other key of the file. `list`
and `get` connect to the servers to report their health, as `claude mcp list` does.
Usage errors exit 1 with one line; success prints what changed and which file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

EXIT_OK, EXIT_ERROR = 0, 1


class Scope(str, Enum):
    LOCAL = "local"
    PROJECT = "project"
    USER = "user"


_SCOPE_TEXT = {Scope.LOCAL: "Local config (private to you in this project)",
               Scope.PROJECT: "Project config (shared via .mcp.json)",
               Scope.USER: "User config (available in all your projects)"}


class McpCmdError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="codeloop mcp", allow_abbrev=False, description="Configure MCP servers (as `claude mcp`).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    scope: dict[str, Any] = {"choices": [s.value for s in Scope],
                             "help": "local (default), project (.mcp.json) or user"}
    add = sub.add_parser("add", help="add a server: add [options] NAME COMMAND_OR_URL [ARGS...]")
    add.add_argument("-s", "--scope", default=Scope.LOCAL.value, **scope)
    add.add_argument("-t", "--transport", choices=["stdio", "sse", "http"], default="stdio")
    add.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VALUE")
    add.add_argument("-H", "--header", action="append", default=[], metavar="'Name: value'")
    add.add_argument("--client-id", help="OAuth: a client registered in advance (http and sse)")
    add.add_argument("--callback-port", type=int, help="OAuth: the fixed port of the redirect URI (http and sse)")
    add.add_argument("name")
    add.add_argument("target", metavar="COMMAND_OR_URL", nargs="?")
    add.add_argument("args", nargs="*", help="the command's arguments (put them after -- when they start with -)")
    add_json = sub.add_parser("add-json", help="add a server from its JSON: add-json NAME JSON")
    add_json.add_argument("-s", "--scope", default=Scope.LOCAL.value, **scope)
    add_json.add_argument("name")
    add_json.add_argument("json")
    desktop = sub.add_parser("add-from-claude-desktop", help="import servers from Claude Desktop's config")
    desktop.add_argument("-s", "--scope", default=Scope.LOCAL.value, **scope)
    desktop.add_argument("--all", action="store_true", help="import every server without asking")
    desktop.add_argument("names", nargs="*", metavar="NAME", help="the servers to import (default: ask)")
    sub.add_parser("serve", add_help=False, help="offer codeloop's tools to MCP clients over stdio (takes "
                   "codeloop's permission flags: --permission-mode, --allowedTools, --settings, ...)")
    sub.add_parser("list", help="list the configured servers and their health")
    get = sub.add_parser("get", help="show one server")
    get.add_argument("name")
    for verb, what in (("login", "sign in to a remote (http/sse) server that asks for OAuth"),
                       ("logout", "forget a remote server's OAuth tokens")):
        sub.add_parser(verb, help=what).add_argument("name")
    remove = sub.add_parser("remove", help="remove a server")
    remove.add_argument("-s", "--scope", choices=[s.value for s in Scope])
    remove.add_argument("name")
    p.set_defaults(add_parser=add)
    return p


# -- the files ---------------------------------------------------------------------------------------
def _read_scope(scope: Scope, cwd: Path) -> dict[str, Any]:
    from codeloop.config import claude_json

    try:
        if scope is Scope.PROJECT:
            path = cwd / ".mcp.json"
            if not path.is_file():
                return {}
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
            servers = data.get("mcpServers") if isinstance(data, dict) else None
            return dict(servers) if isinstance(servers, dict) else {}
        data = claude_json.read()  # a broken file is an error here, not an empty list
        servers = data.get("mcpServers") if scope is Scope.USER else claude_json.project_entry(data, cwd).get(
            "mcpServers")
        return dict(servers) if isinstance(servers, dict) else {}
    except (OSError, ValueError, claude_json.ClaudeJsonError) as exc:
        raise McpCmdError(str(exc)) from None


def _write_scope(scope: Scope, cwd: Path, servers: dict[str, Any]) -> str:
    """Replace the scope's `mcpServers`; the 'File modified' line."""
    from codeloop.config import claude_json
    from codeloop.fsutil import atomic_write_json

    if scope is Scope.PROJECT:
        path = cwd / ".mcp.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}") if path.is_file() else {}
        except (OSError, ValueError) as exc:
            raise McpCmdError(f"{path}: {exc}; not changed") from None
        data = data if isinstance(data, dict) else {}
        data["mcpServers"] = servers
        atomic_write_json(path, data, indent=2)
        return f"File modified: {path}"
    try:
        data = claude_json.read()
    except claude_json.ClaudeJsonError as exc:
        raise McpCmdError(f"{exc}; not changed") from None
    if scope is Scope.USER:
        data["mcpServers"] = servers
        return f"File modified: {claude_json.write(data)}"
    projects = data.setdefault("projects", {})
    if not isinstance(projects, dict):
        raise McpCmdError(f"{claude_json.claude_json_path()}: \"projects\" is not an object; not changed")
    key = claude_json.project_key(cwd)
    entry = projects.setdefault(key, {})
    entry["mcpServers"] = servers
    return f"File modified: {claude_json.write(data)} [project: {key}]"


def _all_servers(cwd: Path) -> list[tuple[str, Scope, dict[str, Any]]]:
    out = []
    for scope in (Scope.LOCAL, Scope.PROJECT, Scope.USER):  # Claude Code's precedence order
        out += [(name, scope, cfg) for name, cfg in _read_scope(scope, cwd).items()]
    return out


# -- the commands ----------------------------------------------------------------------------------------
def _entry_from_flags(ns: argparse.Namespace) -> dict[str, Any]:
    args = ns.args
    if ns.transport == "stdio":
        env = {}
        for item in ns.env:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise McpCmdError(f"invalid --env {item!r}: expected KEY=VALUE")
            env[key] = value
        if ns.header or ns.client_id or ns.callback_port:
            raise McpCmdError("--header, --client-id and --callback-port apply to http and sse servers only")
        return {"type": "stdio", "command": ns.target, "args": list(args), "env": env}
    if ns.env or args:
        raise McpCmdError(f"{ns.transport} servers take a URL only (no --env or arguments)")
    if not ns.target.startswith(("http://", "https://")):
        raise McpCmdError(f"invalid URL {ns.target!r}: an {ns.transport} server needs an http(s):// URL")
    headers = {}
    for item in ns.header:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise McpCmdError(f"invalid --header {item!r}: expected 'Name: value'")
        headers[key.strip()] = value.strip()
    oauth = {k: v for k, v in (("clientId", ns.client_id), ("callbackPort", ns.callback_port)) if v is not None}
    return {"type": ns.transport, "url": ns.target, **({"headers": headers} if headers else {}),
            **({"oauth": oauth} if oauth else {})}


def _add(name: str, entry: Any, scope: Scope, cwd: Path) -> str:
    from codeloop.mcp.config import Source, parse_server

    try:
        parse_server(name, entry, Source.SETTINGS, env={})  # the session's own check; ${VAR}s stay as written
    except ValueError as exc:
        raise McpCmdError(f"invalid MCP server {name!r}: {exc}") from None
    if not name or any(c.isspace() for c in name):
        raise McpCmdError(f"invalid server name {name!r}")
    servers = _read_scope(scope, cwd)
    if name in servers:
        raise McpCmdError(f"MCP server {name} already exists in {scope.value} config")
    servers[name] = entry
    return _write_scope(scope, cwd, servers)


def _describe(cfg: dict[str, Any]) -> str:
    if cfg.get("url"):
        return f"{cfg['url']} ({cfg.get('type', 'http').upper()})"
    return " ".join([str(cfg.get("command", "")), *map(str, cfg.get("args") or [])])


def _health(entries: list[tuple[str, Scope, dict[str, Any]]], cwd: Path) -> dict[str, str]:
    """name → "✓ Connected" / "✗ Failed to connect" (servers started as a session would)."""
    from codeloop.mcp.config import Source, parse_server

    configs, status = [], {}
    for name, _scope, cfg in entries:
        try:
            configs.append(parse_server(name, cfg, Source.SETTINGS))
        except ValueError as exc:
            status[name] = f"✗ Invalid: {exc}"
    if any(c.transport.value == "sdk" for c in configs):
        status.update({c.name: "- SDK server (lives in an Agent SDK program)" for c in configs
                       if c.transport.value == "sdk"})
        configs = [c for c in configs if c.transport.value != "sdk"]
    if not configs:
        return status

    async def check() -> dict[str, str]:
        import logging

        from codeloop.mcp.client import McpManager

        logging.getLogger("mcp").setLevel(logging.CRITICAL)  # a broken server is a status line, not a traceback
        manager = McpManager()
        manager.sign_in = False   # a health check opens no browser: such a server "needs authentication"
        try:
            await manager.start(configs)
            auth = manager.auth_status()
            return {s["name"]: "✓ Connected" if s["status"] == "connected" else
                    "⚠ Needs authentication" if auth.get(s["name"]) == "needs-auth" else "✗ Failed to connect"
                    for s in manager.statuses()}
        finally:
            await manager.aclose()

    status.update(asyncio.run(check()))
    return status


def run(ns: argparse.Namespace, cwd: Path, out: Any) -> int:
    cmd = ns.command
    if cmd == "add":
        modified = _add(ns.name, _entry_from_flags(ns), Scope(ns.scope), cwd)
        how = "command" if ns.transport == "stdio" else "URL"
        target = " ".join([ns.target, *ns.args])
        out.write(f"Added {ns.transport} MCP server {ns.name} with {how}: {target} to {ns.scope} config\n{modified}\n")
    elif cmd == "add-json":
        try:
            entry = json.loads(ns.json)
        except ValueError as exc:
            raise McpCmdError(f"invalid JSON: {exc}") from None
        modified = _add(ns.name, entry, Scope(ns.scope), cwd)
        kind = entry.get("type", "stdio") if isinstance(entry, dict) else "stdio"
        out.write(f"Added {kind} MCP server {ns.name} to {ns.scope} config\n{modified}\n")
    elif cmd == "add-from-claude-desktop":
        _from_desktop(ns, cwd, out)
    elif cmd == "list":
        entries = _all_servers(cwd)
        if not entries:
            out.write("No MCP servers configured. Use `codeloop mcp add` to add a server.\n")
            return EXIT_OK
        out.write("Checking MCP server health...\n\n")
        health = _health(entries, cwd)
        for name, _scope, cfg in entries:
            out.write(f"{name}: {_describe(cfg)} - {health.get(name, '?')}\n")
    elif cmd == "get":
        found = [e for e in _all_servers(cwd) if e[0] == ns.name]
        if not found:
            raise McpCmdError(f"No MCP server found with name: {ns.name}")
        name, scope, cfg = found[0]
        lines = [f"{name}:", f"  Scope: {_SCOPE_TEXT[scope]}", f"  Status: {_health([found[0]], cwd)[name]}",
                 f"  Type: {cfg.get('type', 'stdio')}"]
        if cfg.get("url"):
            lines.append(f"  URL: {cfg['url']}")
            lines += ["  Headers:", *(f"    {k}: {v}" for k, v in (cfg.get("headers") or {}).items())]
        else:
            lines += [f"  Command: {cfg.get('command', '')}", f"  Args: {' '.join(map(str, cfg.get('args') or []))}",
                      "  Environment:", *(f"    {k}={v}" for k, v in (cfg.get("env") or {}).items())]
        lines.append(f'\nTo remove this server, run: codeloop mcp remove "{name}" -s {scope.value}')
        out.write("\n".join(lines) + "\n")
    elif cmd in ("login", "logout"):
        from codeloop.cli.commands import mcp_login

        try:
            cfg = mcp_login.remote_config(ns.name, _all_servers(cwd))
            return mcp_login.login(cfg, out) if cmd == "login" else mcp_login.logout(cfg, out)
        except ValueError as exc:
            raise McpCmdError(str(exc)) from None
    elif cmd == "remove":
        scopes = [Scope(ns.scope)] if ns.scope else [s for s in Scope if ns.name in _read_scope(s, cwd)]
        scopes = [s for s in scopes if ns.name in _read_scope(s, cwd)]
        if not scopes:
            where = f" in {ns.scope} config" if ns.scope else ""
            raise McpCmdError(f"No MCP server found with name: {ns.name}{where}")
        if len(scopes) > 1:
            raise McpCmdError(f"MCP server {ns.name} exists in several scopes ({', '.join(s.value for s in scopes)}); "
                              "say which with -s")
        servers = _read_scope(scopes[0], cwd)
        del servers[ns.name]
        modified = _write_scope(scopes[0], cwd, servers)
        out.write(f'Removed MCP server "{ns.name}" from {scopes[0].value} config\n{modified}\n')
    return EXIT_OK


def _from_desktop(ns: argparse.Namespace, cwd: Path, out: Any) -> None:
    from codeloop.cli.commands import mcp_desktop as desktop

    path = desktop.desktop_config_path()
    try:
        servers = desktop.read_desktop_servers(path)
        if not servers:
            raise McpCmdError(f"No MCP servers found in Claude Desktop's config ({path})")
        ask = input if sys.stdin.isatty() else None
        chosen = desktop.choose(list(servers), list(ns.names), ns.all, ask)
    except ValueError as exc:
        raise McpCmdError(str(exc)) from None
    if not chosen:
        out.write("Nothing imported.\n")
        return
    scope = Scope(ns.scope)
    merged, added = desktop.import_servers(chosen, servers, _read_scope(scope, cwd), out)
    if not added:
        raise McpCmdError("no server was imported")
    modified = _write_scope(scope, cwd, merged)
    out.write(f"Successfully imported {added} MCP server{'s' if added != 1 else ''} to {scope.value} config.\n"
              f"{modified}\n")


def _parse(argv: list[str]) -> argparse.Namespace:
    """Options may come anywhere before `--`; everything after it is the server's command line
    (Claude Code's `claude mcp add NAME -e K=V -- npx -y pkg`)."""
    parser = build_parser()
    if argv[:1] != ["add"]:
        return parser.parse_args(argv)
    argv = argv[1:]
    head, tail = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    ns = parser.get_default("add_parser").parse_intermixed_args(head)
    ns.command = "add"
    rest = ([ns.target] if ns.target is not None else []) + list(ns.args) + tail
    if not rest:
        parser.exit(EXIT_ERROR, "codeloop mcp add: error: missing the server's command or URL\n")
    ns.target, ns.args = rest[0], rest[1:]
    return ns


def mcp_main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:   # codeloop's own flags follow, parsed as the main command parses them
        from codeloop.cli.commands.mcp_serve import serve_main
        return serve_main(argv[1:])
    ns = _parse(argv)
    try:
        return run(ns, Path.cwd(), sys.stdout)
    except McpCmdError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return EXIT_ERROR
