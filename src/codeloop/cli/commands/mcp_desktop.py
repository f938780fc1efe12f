"""`codeloop mcp add-from-claude-desktop`: import MCP servers from Claude Desktop's config file.

Claude Desktop keeps its servers in `claude_desktop_config.json` (`mcpServers`): on Linux under
`$XDG_CONFIG_HOME/Claude/` (default `~/.config/Claude/`), on macOS under
`~/Library/Application Support/Claude/`; `CLAUDE_DESKTOP_CONFIG` names another file. The chosen
servers — named on the command line, `--all`, or picked from a numbered list when stdin is a
terminal — are added at the given scope (local by default) with the same checks as `mcp add`. A
name already taken in that scope gets a numeric suffix (`name_1`), as Claude Code does; an entry
the session could not start is skipped with one line saying why.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def desktop_config_path() -> Path:
    if os.environ.get("CLAUDE_DESKTOP_CONFIG"):
        return Path(os.environ["CLAUDE_DESKTOP_CONFIG"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "Claude" / "claude_desktop_config.json"


def read_desktop_servers(path: Path) -> dict[str, Any]:
    """Claude Desktop's `mcpServers`; ValueError (one line) when the file is missing or broken."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"Claude Desktop config file not found at {path}") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(f"{path}: no \"mcpServers\" object")
    return servers


def choose(names: list[str], wanted: list[str], take_all: bool, ask: Any) -> list[str]:
    """The servers to import: `wanted` (each must exist), all, or the user's pick from a list."""
    if take_all:
        return names
    if wanted:
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise ValueError(f"not in Claude Desktop's config: {', '.join(unknown)} (it has: {', '.join(names)})")
        return list(dict.fromkeys(wanted))
    if ask is None:
        raise ValueError("name the servers to import, or pass --all (found: " + ", ".join(names) + ")")
    listing = "\n".join(f"  {i}. {n}" for i, n in enumerate(names, 1))
    answer = ask(f"Servers in Claude Desktop's config:\n{listing}\nImport which? (numbers or names, "
                 "comma-separated; 'all'; empty to cancel): ").strip()
    if answer.lower() == "all":
        return names
    picked = []
    for item in filter(None, (a.strip() for a in answer.replace(" ", ",").split(","))):
        if item.isdigit() and 1 <= int(item) <= len(names):
            picked.append(names[int(item) - 1])
        elif item in names:
            picked.append(item)
        else:
            raise ValueError(f"no server {item!r} in the list")
    return list(dict.fromkeys(picked))


def free_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 1
    while f"{name}_{n}" in taken:
        n += 1
    return f"{name}_{n}"


def import_servers(chosen: list[str], servers: dict[str, Any], existing: dict[str, Any],
                   out: Any) -> tuple[dict[str, Any], int]:
    """`existing` with the chosen servers added (valid ones only); (new mapping, how many added)."""
    from codeloop.mcp.config import Source, parse_server

    result, added = dict(existing), 0
    for name in chosen:
        entry = servers[name]
        try:
            parse_server(name, entry, Source.SETTINGS, env={})
        except ValueError as exc:
            out.write(f"Skipped {name}: {exc}\n")
            continue
        target = free_name(name, set(result))
        result[target] = entry
        added += 1
        out.write(f"Imported {name}" + (f" as {target} (the name was taken)" if target != name else "") + "\n")
    return result, added
