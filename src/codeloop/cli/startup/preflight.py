"""Claude Code's remaining command-line flags: their definitions and what they do at start-up.

Owns the flags added for drop-in compatibility beyond the core set in main.py, and `prepare()`,
which main runs once after parsing: it applies the flags that act before a conversation exists
(`--debug`, `--append-system-prompt-file`, `--bare`, `--worktree`, `--file`,
`--disable-slash-commands`, `--permission-mode auto`) and prints one warning line for each flag
codeloop accepts but cannot honour (IDE, browser, remote and tmux integrations). Session naming
(`-n/--name`, `--resume <name>`) is `find_session_by_name` + a `custom-title` transcript entry,
as Claude Code records it.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING

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
    "init": "no Setup hooks (--init)",
    "init_only": "no Setup hooks (--init-only)",
    "maintenance": "no Setup hooks (--maintenance)",
    "allow_dangerously_skip_permissions": "the REPL's mode cycle has no bypassPermissions entry",
    "append_subagent_system_prompt": "subagent system prompts cannot be extended yet",
    "exclude_dynamic_system_prompt_sections": "the system prompt has no dynamic sections to move",
    "advisor": "no server-side advisor tool",
}
DISABLE_SLASH_ENV = "CODELOOP_DISABLE_SLASH_COMMANDS"
_WORKTREE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


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
    """Apply the start-up flags (in this order: logging, cwd, files, prompt, modes). FlagError on bad input."""
    for name, why in NOT_SUPPORTED.items():
        value = getattr(args, name, None)
        if why and value not in (None, False):
            sys.stderr.write(f"codeloop: warning: --{name.replace('_', '-')} is not supported ({why}); ignored\n")
    _debug(args)
    from pathlib import Path

    if getattr(args, "worktree", None) is not None:
        os.chdir(make_worktree(Path.cwd(), args.worktree))
    if getattr(args, "file", None):
        download_files(args.file, Path.cwd())
    if getattr(args, "append_system_prompt_file", None):
        path = Path(args.append_system_prompt_file).expanduser()
        try:
            extra = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise FlagError(f"--append-system-prompt-file: cannot read {path}: {getattr(exc, 'strerror', exc)}") \
                from None
        args.append_system_prompt = "\n\n".join(x for x in (args.append_system_prompt, extra) if x)
    if getattr(args, "disable_slash_commands", False):
        os.environ[DISABLE_SLASH_ENV] = "1"  # read by input.commands.parse_slash (and the REPL it serves)
    if getattr(args, "safe_mode", False):
        args.bare, args.mcp_config = True, []
    if getattr(args, "bare", False):
        args.strict_mcp_config = True  # only --mcp-config servers
        os.environ.setdefault("CLAUDE_CODE_SIMPLE", "1")  # as Claude Code marks a bare run
    if getattr(args, "permission_mode", None) == "auto":
        sys.stderr.write("codeloop: warning: --permission-mode auto needs Claude Code's safety classifier, which "
                         "codeloop does not have; running in default mode (actions that need approval are asked "
                         "for, or denied in print mode)\n")
        args.permission_mode = "default"


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
    spec = getattr(args, "debug", None)
    if getattr(args, "mcp_debug", False) and spec is None:
        spec = "mcp"
    target = getattr(args, "debug_file", None)
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
    if not _WORKTREE_NAME.fullmatch(name):
        raise FlagError(f"--worktree: invalid name {name!r} (letters, digits, '.', '_', '-')")
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True)
    if top.returncode != 0:
        raise FlagError(f"--worktree needs a git repository; {cwd} is not in one")
    root = Path(top.stdout.strip())
    path = root / ".claude" / "worktrees" / name
    if path.exists():
        if not (path / ".git").exists():
            raise FlagError(f"--worktree: {path} exists and is not a worktree")
        return path  # the same name again: back into that worktree
    made = subprocess.run(["git", "worktree", "add", "-b", f"worktree-{name}", str(path)], cwd=root,
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise FlagError(f"--worktree: git worktree add failed: {made.stderr.strip()[:300]}")
    return path


def download_files(specs: list[str], cwd: Path) -> None:
    """`--file file_id:relative/path`: fetch each file from the Files API into the working directory."""
    import httpx

    base = (os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com").rstrip("/")
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01", "anthropic-beta": "files-api-2025-04-14"}
    root = cwd.resolve()
    for spec in specs:
        file_id, sep, rel = spec.partition(":")
        if not sep or not file_id or not rel:
            raise FlagError(f"--file: expected FILE_ID:PATH, got {spec!r}")
        dest = (root / rel).resolve()
        if dest != root and root not in dest.parents:
            raise FlagError(f"--file: {rel!r} is outside the working directory")
        try:
            resp = httpx.get(f"{base}/v1/files/{file_id}/content", headers=headers, timeout=60,
                             follow_redirects=True)
        except httpx.HTTPError as exc:
            raise FlagError(f"--file {file_id}: download failed: {exc}") from None
        if resp.status_code != 200:
            raise FlagError(f"--file {file_id}: the API answered {resp.status_code}: {resp.text[:200]}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(resp.content)


def apply_main_agent(args: argparse.Namespace, definitions: dict) -> None:
    """`--agent NAME`: the agent's prompt becomes the system prompt, its tools the only tools and
    its model the model — each unless the command line says otherwise."""
    name = getattr(args, "agent", None)
    if not name:
        return
    agent = definitions.get(name)
    if agent is None:
        raise FlagError(f"--agent: no agent named {name!r} (known: {', '.join(sorted(definitions))})")
    if args.system_prompt is None and not args.system_prompt_file:
        args.system_prompt = agent.system_prompt
    if agent.tools is not None and args.tools is None:
        from codeloop.tools.registry import BUILTINS

        from codeloop.tools.registry import canonical_name

        known = {n for n, _, _ in BUILTINS} | {"Agent"}
        args.tools = [canonical_name(t) for t in agent.tools if canonical_name(t) in known]  # MCP tool names are not built-ins
    args.disallowed_tools = [*args.disallowed_tools, *getattr(agent, "disallowed_tools", ())]
    if not args.model and agent.model and agent.model != "inherit":
        args.model = agent.model


def find_session_by_name(cwd: Path, name: str) -> str | None:
    """The newest session in this project whose `custom-title` is `name` (Claude Code's `-n`)."""
    import json

    from codeloop.session.store import project_dir

    needle = b'"custom-title"'
    best: tuple[float, str] | None = None
    try:
        files = list(project_dir(cwd).glob("*.jsonl"))
    except OSError:
        return None
    for path in files:
        try:
            data = path.read_bytes()
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if needle not in data:
            continue
        title = None
        for line in data.splitlines():
            if needle in line:
                try:
                    title = json.loads(line).get("customTitle", title)
                except ValueError:
                    continue
        if title == name and (best is None or mtime > best[0]):
            best = (mtime, path.stem)
    return best[1] if best else None
