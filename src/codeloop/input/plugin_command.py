"""`codeloop plugin …` and `/plugin …`: marketplaces and plugins, the way `claude plugin` manages them.

    codeloop plugin marketplace add PATH_OR_GIT_URL     register a marketplace (a git one is cloned)
    codeloop plugin marketplace list | remove NAME
    codeloop plugin install NAME@MARKETPLACE [-s SCOPE] copy it under the config folder and enable it
    codeloop plugin enable | disable NAME[@MARKETPLACE] [-s SCOPE]
    codeloop plugin uninstall NAME[@MARKETPLACE]
    codeloop plugin list                                installed plugins, on or off here
    codeloop plugin validate PATH                       what a session would load from a plugin folder

The work is config.plugin_store's; this module parses the words, says one line per change, and
gives exit status 1 with one line (naming the file or source) when something cannot be done.
`cli.commands.plugin` runs it as a subcommand; `/plugin` (`slash_plugin`) with the same words in a
session, where a change applies when codeloop next starts (plugins are resolved at the door).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

EXIT_OK, EXIT_ERROR = 0, 1
SCOPES = ("user", "project", "local")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="codeloop plugin", allow_abbrev=False,
                description="Manage plugin marketplaces and plugins (as `claude plugin`).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    market = sub.add_parser("marketplace", help="add, list or remove marketplaces")
    msub = market.add_subparsers(dest="action", required=True, parser_class=_Parser)
    msub.add_parser("add", help="add a marketplace: a folder, a git URL or owner/repo").add_argument("source")
    msub.add_parser("list", help="list the known marketplaces")
    msub.add_parser("remove", aliases=["rm"], help="forget a marketplace").add_argument("name")
    for name, helptext in (("install", "install and enable NAME@MARKETPLACE"), ("enable", "turn a plugin on"),
                           ("disable", "turn a plugin off")):
        cmd = sub.add_parser(name, help=helptext, aliases=["i"] if name == "install" else [])
        cmd.add_argument("plugin")
        cmd.add_argument("-s", "--scope", choices=SCOPES, default="user",
                         help="settings file to write: user (default), project (.claude/settings.json) or "
                              "local (.claude/settings.local.json)")
    sub.add_parser("uninstall", aliases=["remove"], help="remove an installed plugin").add_argument("plugin")
    sub.add_parser("list", help="list installed plugins")
    sub.add_parser("validate", help="check a plugin folder").add_argument("path")
    return p


def _settings(cwd: Path) -> dict:
    """The merged settings as a session here would see them (a folder's own only when trusted)."""
    from codeloop.config.settings import load_settings
    from codeloop.config.trust import check_trust

    return load_settings(cwd, trusted=check_trust(cwd).trusted).merged


def run(argv: list[str], cwd: Path) -> tuple[int, str]:
    """(exit code, what to print) for `codeloop plugin ARGV`."""
    from codeloop.config import plugin_store as ps
    from codeloop.config.paths import config_dir

    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        return EXIT_ERROR, str(exc)
    cfg = config_dir()
    try:
        if args.command == "marketplace":
            return EXIT_OK, _marketplace(args, cfg, cwd)
        if args.command == "validate":
            return _validate(Path(args.path))
        if args.command == "list":
            return EXIT_OK, _list(cfg, cwd)
        if args.command in ("install", "i"):
            record = ps.install(cfg, args.plugin, _settings(cwd))
            path = ps.set_enabled(ps.settings_file(args.scope, cfg, cwd), args.plugin, True)
            lines = [f"Installed {args.plugin} {record.get('version') or ''}".rstrip()
                     + f" in {record['installPath']}", f"Enabled in {path}"]
            return EXIT_OK, "\n".join([*lines, *(f"warning: {w}" for w in record.get("warnings", []))])
        pid = ps.resolve_id(cfg, args.plugin)
        if args.command in ("enable", "disable"):
            on = args.command == "enable"
            if on and pid not in ps.installed(cfg):
                raise ps.PluginStoreError(f"plugin {pid} is not installed (codeloop plugin install {pid})")
            path = ps.set_enabled(ps.settings_file(args.scope, cfg, cwd), pid, on)
            return EXIT_OK, f"{'Enabled' if on else 'Disabled'} {pid} in {path}"
        ps.uninstall(cfg, pid)   # uninstall / remove
        path = ps.set_enabled(ps.settings_file("user", cfg, cwd), pid, None)
        return EXIT_OK, f"Uninstalled {pid} (and removed it from {path})"
    except ps.PluginStoreError as exc:
        return EXIT_ERROR, f"codeloop plugin: error: {exc}"


def _marketplace(args: argparse.Namespace, cfg: Path, cwd: Path) -> str:
    from codeloop.config import plugin_store as ps

    if args.action == "add":
        name, root = ps.add_marketplace(cfg, ps.source_of(args.source, cwd))
        plugins = ps.read_marketplace(root)["plugins"]
        return f"Added marketplace {name} ({len(plugins)} plugin{'s' * (len(plugins) != 1)}) from {root}"
    if args.action in ("remove", "rm"):
        ps.remove_marketplace(cfg, args.name)
        return f"Removed marketplace {args.name}"
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


async def slash_plugin(host: Any, args: str) -> Any:
    """`/plugin [words]`: the subcommand's words in a session; bare, the plugins and marketplaces."""
    import asyncio
    import shlex

    from codeloop.input.commands import CommandOutcome

    try:
        words = shlex.split(args)
    except ValueError as exc:
        return CommandOutcome(f"/plugin: {exc}")
    cwd = host.conv.config.cwd
    if not words:
        loaded = host.conv.parts.options.plugins if host.conv.parts.options is not None else ()
        here = [f"  {p.id}  {p.root}" for p in loaded] or ["  none"]
        _, installed = run(["list"], cwd)
        _, markets = run(["marketplace", "list"], cwd)
        return CommandOutcome("\n".join(["Plugins in this session:", *here, "", installed, "", markets, "",
                                         "Usage: /plugin install NAME@MARKETPLACE | enable | disable | uninstall | "
                                         "list | marketplace add PATH_OR_URL | marketplace list | validate PATH"]))
    code, text = await asyncio.to_thread(run, words, cwd)   # a marketplace may be a git clone
    changed = code == EXIT_OK and words[0] in ("install", "i", "enable", "disable", "uninstall", "remove")
    return CommandOutcome(text + ("\nThis applies when codeloop next starts." if changed else ""))
