"""The information built-ins: /mcp, /agents, /hooks and /doctor.

/mcp lists the session's MCP servers with their status (connected, failed with its error,
needs-auth, pending) and tools; `/mcp reconnect <name>` stops that server and starts it again through
the session's `McpManager`, so the tools every consumer sees follow; `/mcp login <name>` signs in to
an OAuth server (the URL shown here, a browser opened where one can) and `/mcp logout <name>`
forgets its tokens. /agents lists the agent
definitions the Agent tool offers (built-in, user, project, command line) with their tools and
model. /hooks shows the hooks in force by event and matcher, each with the settings file it
came from. /doctor checks the installation, one line per check, `ok` or `problem`: Python,
bubblewrap (installed, and whether it starts a sandbox), ripgrep, the API key or provider, the
settings files (read afresh: a file broken since start-up is named with its error), the MCP
configuration and the servers that failed to start.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from codeloop.input.commands import CommandOutcome

if TYPE_CHECKING:
    from codeloop.input.commands import CommandHost
    from codeloop.session.conversation import Conversation

OK, PROBLEM = "ok", "problem"


# -- /mcp -------------------------------------------------------------------------------------------

def mcp_listing(mcp: Any) -> str:
    if mcp is None or not mcp.servers():
        return ("No MCP servers configured. Add one with `codeloop mcp add`, a .mcp.json file or "
                "`mcpServers` in settings.")
    lines = ["MCP servers:"]
    auth = mcp.auth_status() if hasattr(mcp, "auth_status") else {}
    for cfg, status, error, tools in mcp.servers():
        where = cfg.command and " ".join([cfg.command, *cfg.args]) or cfg.url or cfg.transport.value
        mark = {"connected": "✔", "failed": "✘", "needs-auth": "⚠"}.get(status.value, "…")
        signed = {"needs-auth": f"  ⚠ needs authentication: /mcp login {cfg.name}", "authenticated": "  (signed in)",
                  "failed": "  ⚠ sign-in failed"}.get(auth.get(cfg.name, ""), "")
        lines.append(f"  {mark} {cfg.name}  {status.value}{signed}  ({cfg.transport.value}, {cfg.source.value}: "
                     f"{where})")
        if error and status.value != "needs-auth":
            lines.append(f"      error: {error}")
        if tools:
            lines.append(f"      tools ({len(tools)}): " + ", ".join(t.name for t in tools))
    lines.append("/mcp reconnect <server> restarts one; /mcp login <server> signs in, /mcp logout <server> signs out.")
    return "\n".join(lines)


async def mcp_command(host: CommandHost, args: str) -> CommandOutcome:
    verb, _, name = args.strip().partition(" ")
    mcp = host.conv.mcp
    if not verb:
        return CommandOutcome(mcp_listing(mcp))
    if verb not in ("reconnect", "login", "logout") or not name.strip():
        return CommandOutcome("Usage: /mcp  or  /mcp reconnect|login|logout <server>")
    name = name.strip()
    known = [cfg.name for cfg, *_ in (mcp.servers() if mcp is not None else [])]
    if name not in known or mcp is None:
        return CommandOutcome(f"No MCP server named {name!r}" + (f" (known: {', '.join(known)})" if known else ""))
    if verb == "logout":
        if not mcp.logout(name):
            return CommandOutcome(f"{name} holds no sign-in (only a remote http or sse server signs in).")
        await mcp.reconnect(name)
        return CommandOutcome(f"Signed out of {name}: its tokens are forgotten; /mcp login {name} signs in again.")
    host.show(f"{'Signing in to' if verb == 'login' else 'Reconnecting to'} {name}…", style="info")

    def show_url(server: str, url: str) -> None:
        host.show(f"Open this URL in a browser to sign in to {server} (waiting for the sign-in):\n{url}",
                  style="info")

    try:
        status = await (mcp.login(name, on_url=show_url) if verb == "login" else mcp.reconnect(name))
    except KeyError:   # an SDK server waits for the SDK's channel; there is nothing to restart yet
        return CommandOutcome(f"{name} is an SDK server that has not started (no SDK drives this session).")
    error = mcp.errors().get(name)
    tools: list[Any] = next((t for cfg, _, _, t in mcp.servers() if cfg.name == name), [])
    if status.value == "connected":
        signed = verb == "login" and mcp.auth_status().get(name) == "authenticated"
        done = "Signed in to" if signed else "Reconnected to"
        return CommandOutcome(f"{done} {name}: connected, {len(tools)} tool(s).")
    what = "Sign-in to" if verb == "login" else "Reconnect to"
    return CommandOutcome(f"{what} {name}: {status.value}" + (f" — {error}" if error else ""))


# -- /agents ----------------------------------------------------------------------------------------

async def agents_command(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.tools.agents import AgentDefinition

    defs = [d for d in host.conv.config.agent_definitions.values() if isinstance(d, AgentDefinition)]
    if not defs:
        return CommandOutcome("No agent definitions.")
    lines = ["Agents (.claude/agents/*.md in the project, ~/.claude/agents/*.md for the user):"]
    order = {"project": 0, "cli": 1, "user": 2, "built-in": 3}
    for source in sorted({d.source.value for d in defs}, key=lambda s: order.get(s, 9)):
        lines.append(f"  {source}:")
        for d in sorted((d for d in defs if d.source.value == source), key=lambda d: d.name):
            tools = ", ".join(d.tools) if d.tools is not None else "all tools"
            if d.disallowed_tools:
                tools += " (not " + ", ".join(d.disallowed_tools) + ")"
            lines.append(f"    {d.name} · model: {d.model or 'inherit'} · tools: {tools}")
            lines.append(f"      {d.description[:160]}" + (f"  [{d.path}]" if d.path else ""))
    return CommandOutcome("\n".join(lines))


# -- /hooks -----------------------------------------------------------------------------------------

def hooks_by_source(conv: Conversation) -> list[tuple[str, str, str, str]]:
    """(event, matcher, command, source) of every hook in the settings files in use, in order."""
    out = []
    sources = getattr(conv.settings, "sources", None) or []
    for src in sources:
        for event, groups in (src.data.get("hooks") or {}).items():
            for group in groups if isinstance(groups, list) else []:
                if not isinstance(group, dict):
                    continue
                matcher = str(group.get("matcher") or "*")
                for hook in group.get("hooks") or []:
                    if isinstance(hook, dict):
                        what = hook.get("command") or hook.get("prompt") or json.dumps(hook)
                        out.append((event, matcher, str(what), f"{src.scope.value}: {src.path}"))
    return out


async def hooks_command(host: CommandHost, args: str) -> CommandOutcome:
    conv = host.conv
    found = hooks_by_source(conv)
    runner = conv.hooks.runner
    callbacks = runner is not None and runner.callbacks is not None and type(runner.callbacks).__name__ != \
        "CallbackSource"
    if not found:
        text = "No hooks configured (settings \"hooks\": {Event: [{matcher, hooks: [{type: command, command}]}]})."
        return CommandOutcome(text + ("\nHook callbacks registered by the SDK are active." if callbacks else ""))
    lines = ["Hooks:"]
    if not conv.config.hooks:
        lines[0] = "Hooks (not running in this session: hooks are off here, e.g. --bare or disableAllHooks):"
    for event in dict.fromkeys(e for e, *_ in found):
        lines.append(f"  {event}")
        for _, matcher, command, source in (f for f in found if f[0] == event):
            lines.append(f"    [{matcher}] {command}")
            lines.append(f"        from {source}")
    if callbacks:
        lines.append("  (plus hook callbacks registered by the SDK)")
    return CommandOutcome("\n".join(lines))


# -- /doctor ----------------------------------------------------------------------------------------

def _check_python() -> tuple[str, str]:
    v = sys.version_info
    text = f"Python {v.major}.{v.minor}.{v.micro} ({sys.executable})"
    return (OK, text) if v >= (3, 11) else (PROBLEM, text + ": codeloop needs Python 3.11 or newer")


def _check_bwrap() -> tuple[str, str]:
    from codeloop.sandbox.bwrap import probe

    p = probe()
    if p.error is None and p.path is not None:
        return OK, f"bubblewrap {p.path} starts a sandbox"
    return PROBLEM, p.error or "bubblewrap is not available"


def _check_rg() -> tuple[str, str]:
    from codeloop.tools.builtin.ripgrep import find_rg

    rg = find_rg()
    return (OK, f"ripgrep {rg}") if rg else (PROBLEM, "ripgrep (rg) not found: Grep uses its slower Python "
                                                        "fallback (pip install ripgrep, or your package manager)")


def _check_key(conv: Conversation) -> tuple[str, str]:
    provider = getattr(conv.provider, "name", "anthropic")
    source = conv.api_key_source
    if source != "none":
        return OK, f"provider {provider}, API key from {source}"
    if provider == "anthropic":
        return PROBLEM, "no Anthropic API key: export ANTHROPIC_API_KEY=<key> or set apiKeyHelper in settings"
    return OK, f"provider {provider} (no API key needed or set)"


def _check_settings(conv: Conversation) -> list[tuple[str, str]]:
    from codeloop.config.settings import load_settings

    loaded = load_settings(conv.config.cwd, trusted=conv.trusted)
    problems = [(PROBLEM, f"settings: {e}") for e in loaded.errors]
    if problems:
        return problems
    names = ", ".join(s.path for s in loaded.sources if s.path.startswith("/")) or "none present"
    return [(OK, f"settings files parse ({names})")]


def _check_mcp(conv: Conversation) -> list[tuple[str, str]]:
    from codeloop.mcp.sources import load_mcp_configs

    settings = conv.settings
    servers = settings.mcp_servers() if settings is not None else {}
    configs, errors = load_mcp_configs(conv.config.cwd, settings_servers=servers, include_project=conv.trusted)
    out = [(PROBLEM, f"MCP configuration: {e}") for e in errors]
    mcp = conv.mcp
    for cfg, status, error, tools in (mcp.servers() if mcp is not None else []):
        if status.value == "failed":
            out.append((PROBLEM, f"MCP server {cfg.name} failed to start: {error}"))
        else:
            out.append((OK, f"MCP server {cfg.name} {status.value} ({len(tools)} tools)"))
    if not out:
        out.append((OK, "MCP: no servers configured" if not configs else f"MCP: {len(configs)} server(s) configured"))
    return out


def doctor_checks(conv: Conversation) -> list[tuple[str, str]]:
    return [_check_python(), _check_bwrap(), _check_rg(), _check_key(conv), *_check_settings(conv),
            *_check_mcp(conv)]


async def doctor_command(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.version import __version__

    checks = doctor_checks(host.conv)
    bad = sum(1 for status, _ in checks if status == PROBLEM)
    lines = [f"codeloop {__version__} — doctor"]
    lines += [f"  {'✔ ok     ' if status == OK else '✘ problem'}  {text}" for status, text in checks]
    lines.append("All checks passed." if not bad else f"{bad} problem(s) found.")
    return CommandOutcome("\n".join(lines))
