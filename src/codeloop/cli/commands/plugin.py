"""`codeloop plugin …`: the subcommand's parser (as `claude plugin`'s); the words become an Action of
input.plugin_command, which does the work and says what happened. Usage errors exit 1 with one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

EXIT_USAGE = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from codeloop.input.plugin_command import SCOPES

    p = _Parser(prog="codeloop plugin", allow_abbrev=False,
                description="Manage plugin marketplaces and plugins (as `claude plugin`).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    market = sub.add_parser("marketplace", help="add, list or remove marketplaces")
    msub = market.add_subparsers(dest="action", required=True, parser_class=_Parser)
    msub.add_parser("add", help="add a marketplace: a folder, a git URL or owner/repo").add_argument("target")
    msub.add_parser("list", help="list the known marketplaces")
    msub.add_parser("remove", aliases=["rm"], help="forget a marketplace").add_argument("target")
    msub.add_parser("update", help="fetch marketplaces again (all, or NAME)").add_argument("target", nargs="?")
    for name, helptext in (("install", "install and enable NAME@MARKETPLACE"), ("enable", "turn a plugin on"),
                           ("disable", "turn a plugin off")):
        cmd = sub.add_parser(name, help=helptext, aliases=["i"] if name == "install" else [])
        cmd.add_argument("target", metavar="PLUGIN")
        cmd.add_argument("-s", "--scope", choices=SCOPES, default="user",
                         help="settings file to write: user (default), project (.claude/settings.json) or "
                              "local (.claude/settings.local.json)")
    sub.add_parser("uninstall", aliases=["remove"], help="remove an installed plugin").add_argument(
        "target", metavar="PLUGIN")
    sub.add_parser("list", help="list installed plugins")
    sub.add_parser("validate", help="check a plugin folder").add_argument("target", metavar="PATH")
    p.set_defaults(target=None, scope="user", action=None)
    return p


def plugin_main(argv: list[str]) -> int:
    from codeloop.input.plugin_command import ALIASES, EXIT_OK, Action, perform

    args = build_parser().parse_args(argv)
    verb = f"marketplace {args.action}" if args.command == "marketplace" else args.command
    action = ALIASES.get(verb) or Action(verb)
    code, text = perform(action, args.target, Path.cwd().resolve(), args.scope)
    if text:
        (sys.stdout if code == EXIT_OK else sys.stderr).write(text + "\n")
    return code
