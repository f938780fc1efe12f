"""Claude Code's own state file, `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set).

codeloop reads two things from it, so a user moving over keeps what they set up in Claude Code:
the folders they trusted (`projects[<abs path>].hasTrustDialogAccepted`) and their MCP servers —
user scope (top-level `mcpServers`) and local scope (`projects[<abs path>].mcpServers`). `codeloop
mcp add|remove` writes those same keys. The file holds much more of Claude Code's state, so a
write reads it fresh, changes only its key and replaces the file atomically; a file that cannot
be parsed is never overwritten.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class ClaudeJsonError(Exception):
    """The file exists but cannot be read or parsed (it is left alone)."""


def claude_json_path() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(env).expanduser() / ".claude.json") if env else Path.home() / ".claude.json"


def project_key(cwd: Path | str) -> str:
    """Claude Code keys projects by absolute path (realpath, as its trust check resolves links)."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(os.fspath(cwd))))


def read() -> dict[str, Any]:
    """The parsed file ({} when absent); ClaudeJsonError when unreadable."""
    path = claude_json_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ClaudeJsonError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ClaudeJsonError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ClaudeJsonError(f"{path}: expected a JSON object")
    return data


def write(data: dict[str, Any]) -> Path:
    from codeloop.fsutil import atomic_write_json

    path = claude_json_path()
    atomic_write_json(path, data, indent=2)
    return path


def project_entry(data: dict[str, Any], cwd: Path | str) -> dict[str, Any]:
    projects = data.get("projects")
    entry = projects.get(project_key(cwd)) if isinstance(projects, dict) else None
    return entry if isinstance(entry, dict) else {}


def trusted_in_claude_code(cwd: Path | str) -> str | None:
    """The folder (cwd or an ancestor other than ~ and /) the user accepted in Claude Code's trust
    dialog, or None. An unreadable file trusts nothing."""
    try:
        data = read()
    except ClaudeJsonError:
        return None
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return None
    target = Path(project_key(cwd))
    no_blanket = {project_key(Path.home()), "/"}
    for candidate in (target, *target.parents):
        entry = projects.get(str(candidate))
        if candidate != target and str(candidate) in no_blanket:
            continue
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return str(candidate)
    return None


def mcp_servers(cwd: Path | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(user-scope servers, local-scope servers for cwd); empty when the file is absent or bad."""
    try:
        data = read()
    except ClaudeJsonError:
        return {}, {}
    user = data.get("mcpServers")
    local = project_entry(data, cwd).get("mcpServers")
    return (user if isinstance(user, dict) else {}), (local if isinstance(local, dict) else {})
