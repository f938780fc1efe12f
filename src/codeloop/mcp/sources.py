"""Reading the places MCP servers are configured (their order and meaning: `mcp.config`), apart
from parsing what they hold: most sessions configure no server, and then `mcp.config` (its enums
and `ServerConfig`) is never imported on the way to the first request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.mcp.config import ServerConfig

PROJECT_FILE = ".mcp.json"


def load_mcp_configs(cwd: Path | str, *, settings_servers: Mapping[str, Any] | None = None,
                     cli_configs: list[str] | None = None, strict: bool = False, include_project: bool = True,
                     env: Mapping[str, str] | None = None) -> tuple[dict[str, ServerConfig], list[str]]:
    """(servers by name, human-readable errors) from every configured source."""
    cwd = Path(cwd)
    # in order: (data, origin, mcp.config.Source value) to parse, or a read error's message
    steps: list[tuple[Any, str, str] | str] = []
    if not strict:
        from codeloop.config.claude_json import mcp_servers as claude_json_servers

        user_servers, local_servers = claude_json_servers(cwd)
        if user_servers:
            steps.append(({"mcpServers": user_servers}, "~/.claude.json mcpServers", "user"))
        project = cwd / PROJECT_FILE
        if include_project and project.is_file():
            try:
                steps.append((_read_json(project), str(project), "project"))
            except (OSError, ValueError) as exc:
                steps.append(f"{project}: {exc}")
        if local_servers:
            steps.append(({"mcpServers": local_servers}, f"~/.claude.json projects[{cwd}].mcpServers", "local"))
        if settings_servers:
            steps.append(({"mcpServers": dict(settings_servers)}, "settings mcpServers", "settings"))
    for i, value in enumerate(cli_configs or []):
        text = value.strip()
        if text.startswith("{"):
            origin = f"--mcp-config #{i + 1}"
            try:
                data = json.loads(text)
            except ValueError as exc:
                steps.append(f"{origin}: invalid JSON: {exc}")
                continue
        else:
            path = Path(text).expanduser()
            path = path if path.is_absolute() else cwd / path
            origin = str(path)
            try:
                data = _read_json(path)
            except (OSError, ValueError) as exc:
                steps.append(f"--mcp-config {text}: {exc}")
                continue
        steps.append((data, origin, "cli"))
    servers: dict[str, ServerConfig] = {}
    errors: list[str] = []
    if not steps:
        return servers, errors   # nothing configured: nothing to parse
    from codeloop.mcp.config import Source, servers_from

    for step in steps:
        if isinstance(step, str):
            errors.append(step)
        else:
            data, origin, source = step
            servers_from(data, origin, Source(source), servers, errors, env)
    return servers, errors


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
