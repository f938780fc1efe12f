"""`codeloop plugin …` and `/plugin …`: marketplaces and plugins, the way `claude plugin` manages them.

    codeloop plugin marketplace add PATH_OR_GIT_URL     register a marketplace (a git one is cloned)
    codeloop plugin marketplace list | remove NAME | update [NAME]
    codeloop plugin install NAME@MARKETPLACE [-s SCOPE] copy it under the config folder and enable it
    codeloop plugin enable | disable NAME[@MARKETPLACE] [-s SCOPE]
    codeloop plugin uninstall NAME[@MARKETPLACE]
    codeloop plugin list                                installed plugins, on or off here
    codeloop plugin validate PATH                       what a session would load from a plugin folder

The work is config.plugin_store's; `perform` says one line per change, and gives exit status 1
with one line (naming the file or source) when something cannot be done. `cli.commands.plugin`
parses the subcommand's flags into an Action; `/plugin` (`slash_plugin`, `parse_words`) takes the
same words in a session, where a change applies when codeloop next starts (plugins are resolved
at the door).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ERROR = 0, 1
SCOPES = ("user", "project", "local")


class Action(str, Enum):
    """What `codeloop plugin` / `/plugin` is asked to do."""
    MARKET_ADD = "marketplace add"
    MARKET_LIST = "marketplace list"
    MARKET_REMOVE = "marketplace remove"
    MARKET_UPDATE = "marketplace update"
    INSTALL = "install"
    ENABLE = "enable"
    DISABLE = "disable"
    UNINSTALL = "uninstall"
    LIST = "list"
    VALIDATE = "validate"


ALIASES = {"i": Action.INSTALL, "remove": Action.UNINSTALL, "marketplace rm": Action.MARKET_REMOVE}
USAGE = ("usage: plugin install NAME@MARKETPLACE [-s user|project|local] | enable NAME | disable NAME | "
         "uninstall NAME | list | validate PATH | marketplace add PATH_OR_URL | marketplace list | "
         "marketplace remove NAME | marketplace update [NAME]")


def parse_words(words: list[str]) -> tuple[Action, str | None, str]:
    """(action, its argument, scope) from `/plugin`'s words; ValueError (the usage line) otherwise."""
    scope = "user"
    rest = list(words)
    for flag in ("-s", "--scope"):
        if flag in rest:
            k = rest.index(flag)
            if k + 1 >= len(rest) or rest[k + 1] not in SCOPES:
                raise ValueError(USAGE)
            scope = rest[k + 1]
            del rest[k:k + 2]
    verb = " ".join(rest[:2]) if rest[:1] == ["marketplace"] else " ".join(rest[:1])
    action = ALIASES.get(verb) or next((a for a in Action if a.value == verb), None)
    args = rest[len(verb.split()):]
    allowed = {Action.LIST: (0,), Action.MARKET_LIST: (0,), Action.MARKET_UPDATE: (0, 1)}
    if action is None or len(args) not in allowed.get(action, (1,)):
        raise ValueError(USAGE)
    return action, args[0] if args else None, scope


def _settings(cwd: Path) -> dict:
    """The merged settings as a session here would see them (a folder's own only when trusted)."""
    from codeloop.config.settings import load_settings
    from codeloop.config.trust import check_trust

    return load_settings(cwd, trusted=check_trust(cwd).trusted).merged


def perform(action: Action, target: str | None, cwd: Path, scope: str = "user") -> tuple[int, str]:
    """(exit status, what to say) for one action."""
    from codeloop.config import plugin_store as ps
    from codeloop.config.paths import config_dir

    cfg, arg = config_dir(), target or ""
    try:
        if action in (Action.MARKET_ADD, Action.MARKET_LIST, Action.MARKET_REMOVE, Action.MARKET_UPDATE):
            return EXIT_OK, _marketplace(action, arg, cfg, cwd)
        if action is Action.VALIDATE:
            return _validate(Path(arg))
        if action is Action.LIST:
            return EXIT_OK, _list(cfg, cwd)
        if action is Action.INSTALL:
            record = ps.install(cfg, arg, _settings(cwd))
            path = ps.set_enabled(ps.settings_file(scope, cfg, cwd), arg, True)
            lines = [f"Installed {arg} {record.get('version') or ''}".rstrip()
                     + f" in {record['installPath']}", f"Enabled in {path}"]
            return EXIT_OK, "\n".join([*lines, *(f"warning: {w}" for w in record.get("warnings", []))])
        pid = ps.resolve_id(cfg, arg)
        if action in (Action.ENABLE, Action.DISABLE):
            on = action is Action.ENABLE
            if on and pid not in ps.installed(cfg):
                raise ps.PluginStoreError(f"plugin {pid} is not installed (codeloop plugin install {pid})")
            path = ps.set_enabled(ps.settings_file(scope, cfg, cwd), pid, on)
            return EXIT_OK, f"{'Enabled' if on else 'Disabled'} {pid} in {path}"
        ps.uninstall(cfg, pid)
        path = ps.set_enabled(ps.settings_file("user", cfg, cwd), pid, None)
        return EXIT_OK, f"Uninstalled {pid} (and removed it from {path})"
    except ps.PluginStoreError as exc:
        return EXIT_ERROR, f"codeloop plugin: error: {exc}"


def _marketplace(action: Action, arg: str, cfg: Path, cwd: Path) -> str:
    from codeloop.config import plugin_store as ps

    if action is Action.MARKET_ADD:
        name, root = ps.add_marketplace(cfg, ps.source_of(arg, cwd))
        plugins = ps.read_marketplace(root)["plugins"]
        return f"Added marketplace {name} ({len(plugins)} plugin{'s' * (len(plugins) != 1)}) from {root}"
    if action is Action.MARKET_REMOVE:
        ps.remove_marketplace(cfg, arg)
        return f"Removed marketplace {arg}"
    if action is Action.MARKET_UPDATE:   # fetched again from its source (a folder is read in place anyway)
        known = ps.known_marketplaces(cfg)
        names = [arg] if arg else sorted(known)
        if arg and arg not in known:
            raise ps.PluginStoreError(f"no marketplace named {arg!r} (codeloop plugin marketplace list)")
        return "\n".join(f"Updated marketplace {ps.add_marketplace(cfg, known[n]['source'])[0]}" for n in names) \
            or "No marketplaces"
    known = ps.known_marketplaces(cfg)
    if not known:
        return "No marketplaces (codeloop plugin marketplace add PATH_OR_GIT_URL)"
    lines = []
    for name, entry in sorted(known.items()):
        src = entry.get("source", {}) if isinstance(entry, dict) else {}
        where = src.get("path") or src.get("url") or src.get("repo") or "?"
        lines.append(f"{name}  ({src.get('source', '?')}: {where})")
        try:
            for p in ps.read_marketplace(Path(entry.get("installLocation", ""))).get("plugins", []):
                if isinstance(p, dict):
                    lines.append(f"  {p.get('name')}@{name}  {p.get('description') or ''}".rstrip())
        except ps.PluginStoreError as exc:
            lines.append(f"  (unreadable: {exc})")
    return "\n".join(lines)


def _list(cfg: Path, cwd: Path) -> str:
    from codeloop.config import plugin_store as ps

    installed = ps.installed(cfg)
    if not installed:
        return "No plugins installed (codeloop plugin install NAME@MARKETPLACE)"
    enabled = set(ps.enabled_ids(_settings(cwd)))
    return "\n".join(f"{pid}  {entry.get('version') or ''}  {'enabled' if pid in enabled else 'disabled'}  "
                     f"{entry.get('installPath')}" for pid, entry in sorted(installed.items()))


def _validate(path: Path) -> tuple[int, str]:
    from codeloop.config.plugins import load_plugin

    plugin, warnings = load_plugin(path)
    if plugin is None:
        return EXIT_ERROR, "\n".join(f"codeloop plugin: error: {w}" for w in warnings)
    parts = [f"{len(plugin.command_paths)} command folder(s)", f"{len(plugin.agent_paths)} agent folder(s)",
             f"{len(plugin.skill_dirs)} skill folder(s)", f"{sum(len(g) for g in plugin.hooks.values())} hook group(s)",
             f"{len(plugin.mcp_servers)} MCP server(s)"]
    lines = [f"{plugin.name} {plugin.version or ''}".rstrip() + f": {', '.join(parts)}"]
    return (EXIT_ERROR if warnings else EXIT_OK), "\n".join([*lines, *(f"warning: {w}" for w in warnings)])


async def slash_plugin(host: Any, args: str) -> str:
    """`/plugin [words]`: the subcommand's words in a session; bare, the plugins and marketplaces."""
    import asyncio
    import shlex

    cwd = host.conv.config.cwd
    if not args.strip():
        loaded = host.conv.parts.options.plugins if host.conv.parts.options is not None else ()
        here = [f"  {p.id}  {p.root}" for p in loaded] or ["  none"]
        return "\n".join(["Plugins in this session:", *here, "", perform(Action.LIST, None, cwd)[1], "",
                          perform(Action.MARKET_LIST, None, cwd)[1], "", USAGE])
    try:
        action, target, scope = parse_words(shlex.split(args))
    except ValueError as exc:
        return str(exc)
    code, text = await asyncio.to_thread(perform, action, target, cwd, scope)   # a marketplace may be cloned
    changed = code == EXIT_OK and action in (Action.INSTALL, Action.ENABLE, Action.DISABLE, Action.UNINSTALL)
    return text + ("\nThis applies when codeloop next starts." if changed else "")


async def plugin_command(host: Any, args: str) -> Any:
    """The `/plugin` built-in (input.commands_more): slash_plugin's text as a CommandOutcome."""
    from codeloop.input.commands import CommandOutcome

    return CommandOutcome(await slash_plugin(host, args))

