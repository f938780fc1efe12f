"""Plugins in Claude Code's format: a folder whose parts join the session as if the user wrote them.

    <plugin>/.claude-plugin/plugin.json   optional: {"name", "version", "description",
                                          "commands"?, "agents"?, "skills"?, "hooks"?, "mcpServers"?}
    <plugin>/commands/*.md                slash commands, named /<plugin>:<command>
    <plugin>/agents/*.md                  subagents, named <plugin>:<agent>
    <plugin>/skills/<skill>/SKILL.md      skills, named <plugin>:<skill>
    <plugin>/hooks/hooks.json             {"hooks": {Event: [{matcher, hooks: [...]}]}}
    <plugin>/.mcp.json                    {"mcpServers": {...}}, servers named plugin:<plugin>:<server>

Manifest paths (`"./more-commands"`, a list of them, or for hooks and MCP servers an inline
object) add to the standard folders and must stay inside the plugin. `${CLAUDE_PLUGIN_ROOT}` in a
hook command or an MCP server's command, args, env, cwd, URL or headers becomes the plugin's
folder, and hook commands and stdio servers also find it in their environment. This module only
reads: each part is loaded by its own loader (commands by input.custom_commands, agents by
tools.agents, skills by tools.skills, MCP servers by mcp.config), fed the folders and objects
found here.

Which plugins a session gets (`config.plugin_store.session_plugins`): every `--plugin-dir`, and
each plugin that `enabledPlugins` (`{"name@marketplace": true}`) turns on and `codeloop plugin
install` put in the config folder. A project's settings reach `enabledPlugins` only when the
folder is trusted (config.settings filters untrusted project files), so a cloned repository cannot
switch a plugin on. A broken manifest, a missing file or folder is one warning naming the file;
the plugin's other parts, and the other plugins, still load.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST = Path(".claude-plugin") / "plugin.json"
ROOT_VAR = "CLAUDE_PLUGIN_ROOT"
INLINE = "inline"   # the "marketplace" of a --plugin-dir plugin, as Claude Code names it
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_ROOT_REF = r"\$\{CLAUDE_PLUGIN_ROOT\}|\$CLAUDE_PLUGIN_ROOT\b"


@dataclass(frozen=True, eq=False)
class Plugin:
    """One loaded plugin: where its parts are, its hooks and MCP servers with the root expanded."""
    name: str
    root: Path
    marketplace: str = INLINE
    version: str | None = None
    description: str = ""
    command_paths: tuple[Path, ...] = ()      # folders (or single .md files) of slash commands
    agent_paths: tuple[Path, ...] = ()        # folders (or single .md files) of agent definitions
    skill_dirs: tuple[Path, ...] = ()         # folders holding <skill>/SKILL.md
    hooks: dict[str, list[Any]] = field(default_factory=dict)       # event → groups, as in settings
    mcp_servers: dict[str, Any] = field(default_factory=dict)       # server name → raw entry

    @property
    def id(self) -> str:
        return f"{self.name}@{self.marketplace}"


def expand_root(value: Any, root: Path) -> Any:
    """`${CLAUDE_PLUGIN_ROOT}` → the plugin's folder, in every string of a JSON value."""
    if isinstance(value, str):
        return re.sub(_ROOT_REF, lambda _: str(root), value)
    if isinstance(value, list):
        return [expand_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: expand_root(v, root) for k, v in value.items()}
    return value


def read_json(path: Path) -> Any:
    """A JSON file's value; ValueError with one line naming the file and what is wrong."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def _paths(value: Any, root: Path, key: str, manifest: Path, warnings: list[str]) -> list[Path]:
    """A manifest's path or list of paths, each inside the plugin and existing."""
    items = value if isinstance(value, list) else [value]
    out: list[Path] = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            warnings.append(f"{manifest}: '{key}' must be a path or a list of paths; ignored")
            continue
        path = root / item
        if not _inside(path, root):
            warnings.append(f"{manifest}: '{key}' path {item!r} leads out of the plugin; ignored")
        elif not path.exists():
            warnings.append(f"{manifest}: '{key}' path {item!r} does not exist ({path})")
        else:
            out.append(path)
    return out


def _hooks_from(data: Any, origin: str, root: Path, warnings: list[str]) -> dict[str, list[Any]]:
    """A hooks file's (or inline object's) events, checked as settings hooks are."""
    from codeloop.config.settings_validate import _hook_event_problem

    events = data.get("hooks") if isinstance(data, dict) and isinstance(data.get("hooks"), dict) else data
    if not isinstance(events, dict):
        warnings.append(f"{origin}: expected an object with \"hooks\"; ignored")
        return {}
    out: dict[str, list[Any]] = {}
    for event, groups in events.items():
        if event == "description":   # hooks.json may describe itself
            continue
        problem = _hook_event_problem(groups)
        if problem:
            warnings.append(f"{origin}: 'hooks.{event}' {problem}; ignored")
            continue
        out[event] = [_with_root(g, root) for g in expand_root(groups, root)]
    return out


def _with_root(group: dict[str, Any], root: Path) -> dict[str, Any]:
    """A hook group whose commands also see CLAUDE_PLUGIN_ROOT in their environment (a plugin's
    script may read it rather than take it as an argument)."""
    import shlex

    prefix = f"export {ROOT_VAR}={shlex.quote(str(root))}; "
    return {**group, "hooks": [{**h, "command": prefix + h["command"]} for h in group["hooks"]]}


def _server_with_root(raw: Any, root: Path) -> Any:
    """A stdio server entry whose process also gets CLAUDE_PLUGIN_ROOT in its environment."""
    if not isinstance(raw, dict) or "command" not in raw or not isinstance(raw.get("env", {}), dict):
        return raw
    return {**raw, "env": {ROOT_VAR: str(root), **raw.get("env", {})}}


def _servers_from(data: Any, origin: str, warnings: list[str]) -> dict[str, Any]:
    servers = data.get("mcpServers") if isinstance(data, dict) and "mcpServers" in data else data
    if not isinstance(servers, dict):
        warnings.append(f"{origin}: expected an object of MCP servers; ignored")
        return {}
    return dict(servers)


def _component(value: Any, default: Path, root: Path, key: str, manifest: Path,
               warnings: list[str]) -> list[tuple[Any, str]]:
    """(JSON value, origin) of a hooks or MCP part: the default file, then the manifest's paths or
    inline objects."""
    found: list[tuple[Any, str]] = []
    if default.is_file():
        try:
            found.append((read_json(default), str(default)))
        except ValueError as exc:
            warnings.append(str(exc))
    for item in (value if isinstance(value, list) else [] if value is None else [value]):
        if isinstance(item, dict):
            found.append((item, f"{manifest} '{key}'"))
            continue
        for path in _paths(item, root, key, manifest, warnings):
            if path.resolve() == default.resolve():
                continue
            try:
                found.append((read_json(path), str(path)))
            except ValueError as exc:
                warnings.append(str(exc))
    return found


def load_plugin(root: Path, *, name: str | None = None, marketplace: str = INLINE) -> tuple[Plugin | None, list[str]]:
    """The plugin in `root` and warnings. None (with the reason) when it cannot be loaded at all:
    no such folder, an unreadable or invalid manifest, or an invalid name."""
    root = root.expanduser()
    if not root.is_dir():
        return None, [f"plugin folder {root} does not exist or is not a folder"]
    root = root.resolve()
    manifest_path = root / MANIFEST
    manifest: dict[str, Any] = {}
    if manifest_path.exists():
        try:
            data = read_json(manifest_path)
        except ValueError as exc:
            return None, [f"plugin skipped: {exc}"]
        if not isinstance(data, dict):
            return None, [f"plugin skipped: {manifest_path}: expected a JSON object"]
        manifest = data
    plugin_name = manifest.get("name", name or root.name)
    if not isinstance(plugin_name, str) or not re.fullmatch(_NAME, plugin_name):
        return None, [f"plugin skipped: {manifest_path}: 'name' must be letters, digits, '-', '_' or '.'"]
    warnings: list[str] = []
    parts: dict[str, list[Path]] = {}
    for key in ("commands", "agents", "skills"):
        default = root / key
        parts[key] = [default] if default.is_dir() else []
        if manifest.get(key) is not None:
            extra = _paths(manifest[key], root, key, manifest_path, warnings)
            parts[key] += [p for p in extra if p.resolve() != default.resolve()]
    hooks: dict[str, list[Any]] = {}
    for data, origin in _component(manifest.get("hooks"), root / "hooks" / "hooks.json", root, "hooks",
                                   manifest_path, warnings):
        for event, groups in _hooks_from(data, origin, root, warnings).items():
            hooks.setdefault(event, []).extend(groups)
    servers: dict[str, Any] = {}
    for data, origin in _component(manifest.get("mcpServers"), root / ".mcp.json", root, "mcpServers",
                                   manifest_path, warnings):
        servers.update(_servers_from(data, origin, warnings))
    version, description = manifest.get("version"), manifest.get("description")
    return Plugin(name=plugin_name, root=root, marketplace=marketplace,
                  version=version if isinstance(version, str) else None,
                  description=description if isinstance(description, str) else "",
                  command_paths=tuple(parts["commands"]), agent_paths=tuple(parts["agents"]),
                  skill_dirs=tuple(parts["skills"]), hooks=hooks,
                  mcp_servers={k: _server_with_root(expand_root(v, root), root) for k, v in servers.items()}), warnings


def merged_hooks(base: dict[str, Any], plugins: tuple[Plugin, ...]) -> dict[str, Any]:
    """Settings hooks with every plugin's hooks added after them, event by event."""
    out = {event: list(groups) for event, groups in base.items()}
    for p in plugins:
        for event, groups in p.hooks.items():
            out.setdefault(event, []).extend(groups)
    return out
