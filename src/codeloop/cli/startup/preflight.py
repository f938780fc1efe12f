"""Claude Code's remaining command-line flags: their definitions and what they do at start-up.

Owns the flags added for drop-in compatibility beyond the core set in main.py, and `prepare()`,
which main runs once after parsing: it applies the flags that act on the process before a
session exists (`--debug`, `--worktree`, `--file`, `--disable-slash-commands`, `--bare`'s
environment mark) and prints one warning line for each flag
codeloop accepts but cannot honour (IDE, browser, remote and tmux integrations). What the other
flags mean for the session is resolved into RunOptions (`cli.startup.options`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING

from codeloop.shellpath import program

if TYPE_CHECKING:
    from pathlib import Path
# logging, subprocess, uuid and pathlib are imported where used: every start-up builds this parser.

# Accepted so Claude Code command lines run; each prints this reason once and changes nothing.
NOT_SUPPORTED = {
    "ide": "no IDE integration",
    "chrome": "no browser integration",
    "no_chrome": None,  # turning off what codeloop does not have needs no warning
    "from_pr": "no GitHub pull-request sessions",
    "teleport": "no web/app sessions to pull in",
    "remote": "no remote (web) sessions",
    "tmux": "no tmux integration",
    "init_only": "Setup hooks run with --init; running them and exiting is not supported",
    "allow_dangerously_skip_permissions": "the REPL's mode cycle has no bypassPermissions entry",
    "append_subagent_system_prompt": "subagent system prompts cannot be extended yet",
    "exclude_dynamic_system_prompt_sections": "the system prompt has no dynamic sections to move",
    "advisor": "no server-side advisor tool",
}
DISABLE_SLASH_ENV = "CODELOOP_DISABLE_SLASH_COMMANDS"
_WORKTREE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"   # compiled on first use


class FlagError(Exception):
    """A flag whose value cannot be used: one line for the user, exit 1."""


def add_claude_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bare", action="store_true",
                   help="minimal start: no hooks, no CLAUDE.md discovery, only --mcp-config MCP servers")
    p.add_argument("--safe-mode", action="store_true",
                   help="start with customizations off: like --bare, and no MCP servers at all")
    p.add_argument("-d", "--debug", nargs="?", const="", metavar="FILTER",
                   help='debug logs on stderr; FILTER picks categories ("api,hooks", "!mcp")')
    p.add_argument("--debug-file", metavar="PATH", help="write debug logs to this file (turns on --debug)")
    p.add_argument("--mcp-debug", action="store_true", help=argparse.SUPPRESS)  # deprecated: --debug mcp
    p.add_argument("-n", "--name", metavar="NAME", help="name this session (resume it with --resume NAME)")
    p.add_argument("--append-system-prompt-file", metavar="FILE", help="append a file's text to the system prompt")
    p.add_argument("--disable-slash-commands", action="store_true",
                   help="treat /text as a plain prompt: no slash commands or custom commands")
    p.add_argument("--file", nargs="+", action="extend", metavar="FILE_ID:PATH",
                   help="download Files API files into the working directory at start-up")
    p.add_argument("-w", "--worktree", nargs="?", const="", metavar="NAME",
                   help="run in a new git worktree at .claude/worktrees/NAME (branch worktree-NAME)")
    p.add_argument("--agent", metavar="NAME", help="run the main thread as this agent (its prompt, tools, model)")
    for flag in ("--ide", "--chrome", "--no-chrome", "--teleport", "--remote", "--tmux", "--init", "--init-only",
                 "--maintenance", "--allow-dangerously-skip-permissions", "--exclude-dynamic-system-prompt-sections"):
        p.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--from-pr", nargs="?", const="", help=argparse.SUPPRESS)
    p.add_argument("--append-subagent-system-prompt", help=argparse.SUPPRESS)
    p.add_argument("--advisor", metavar="MODEL", help=argparse.SUPPRESS)


def prepare(args: argparse.Namespace) -> None:
    """Apply the start-up flags that act on the process before a session exists (in this order:
    logging, cwd, files, environment). FlagError on bad input. Everything else is resolved into
    RunOptions (cli.startup.options)."""
    for name, why in NOT_SUPPORTED.items():
        value = vars(args)[name]
        if why and value not in (None, False):
            sys.stderr.write(f"codeloop: warning: --{name.replace('_', '-')} is not supported ({why}); ignored\n")
    _debug(args)
    from pathlib import Path

    if args.worktree is not None:
        os.chdir(make_worktree(Path.cwd(), args.worktree))
    if args.file:
        download_files(args.file, Path.cwd())
    if args.disable_slash_commands:
        os.environ[DISABLE_SLASH_ENV] = "1"  # read by input.commands.parse_slash (and the REPL it serves)
    if args.bare or args.safe_mode:
        os.environ.setdefault("CLAUDE_CODE_SIMPLE", "1")  # as Claude Code marks a bare run


def _category_filter(spec: str):
    """`--debug api,hooks` keeps those categories; `--debug "!mcp"` keeps all but those."""
    parts = [s.strip().lower() for s in spec.split(",") if s.strip()]
    exclude = {p[1:] for p in parts if p.startswith("!")}
    include = {p for p in parts if not p.startswith("!")}

    def keep(record) -> bool:
        if record.name == "codeloop":  # the harness's own lines (the start banner) always pass
            return True
        words = set(record.name.lower().split("."))
        if words & exclude:
            return False
        return not include or bool(words & include)
    return keep


def _debug(args: argparse.Namespace) -> None:
    spec = args.debug
    if args.mcp_debug and spec is None:
        spec = "mcp"
    target = args.debug_file
    if spec is None and not target:
        return
    import logging

    try:
        handler: logging.Handler = logging.FileHandler(target, encoding="utf-8") if target else logging.StreamHandler()
    except OSError as exc:
        raise FlagError(f"--debug-file: cannot open {target}: {exc.strerror}") from None
    handler.setFormatter(logging.Formatter("[DEBUG] %(asctime)s %(name)s: %(message)s"))
    handler.addFilter(_category_filter(spec or ""))
    root = logging.getLogger("codeloop")
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    root.debug("debug logging on (filter %r)", spec or "")


def make_worktree(cwd: Path, name: str) -> Path:
    """`git worktree add <repo>/.claude/worktrees/<name> -b worktree-<name>`; the new folder."""
    import subprocess
    import uuid
    from pathlib import Path

    name = name or f"session-{uuid.uuid4().hex[:8]}"
    if not re.fullmatch(_WORKTREE_NAME, name):
        raise FlagError(f"--worktree: invalid name {name!r} (letters, digits, '.', '_', '-')")
    top = subprocess.run([program("git"), "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True)
    if top.returncode != 0:
        raise FlagError(f"--worktree needs a git repository; {cwd} is not in one")
    root = Path(top.stdout.strip())
    path = root / ".claude" / "worktrees" / name
    if path.exists():
        if not (path / ".git").exists():
            raise FlagError(f"--worktree: {path} exists and is not a worktree")
        return path  # the same name again: back into that worktree
    made = subprocess.run([program("git"), "worktree", "add", "-b", f"worktree-{name}", str(path)], cwd=root,
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise FlagError(f"--worktree: git worktree add failed: {made.stderr.strip()[:300]}")
    return path


def download_files(specs: list[str], cwd: Path) -> None:
    """`--file file_id:relative/path`: checked, fetched and written safely (`cli.startup.file_download`)."""
    from codeloop.cli.startup.file_download import FileFlagError, download_files as download

    try:
        download(specs, str(cwd))
    except FileFlagError as exc:
        raise FlagError(str(exc)) from None
