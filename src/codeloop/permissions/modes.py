"""The vocabulary of permission decisions: modes, tool families, and the paths no mode unlocks.

Owns `PermissionMode`, the Edit/Read tool families, the file-reading commands whose arguments are
checked against Read rules, the protected paths (configuration and session records no tool may
write in any mode), the paths that always ask, and shell start-up files. Kept apart from
`policy.py` so the Bash gate (`bash_gate.py`), which the policy calls, can use them without
importing the policy back.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path


class PermissionMode(str, Enum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    DONT_ASK = "dontAsk"
    BYPASS = "bypassPermissions"
    AUTO = "auto"          # a classifier answers what would ask (permissions.auto_mode)


# Modes in which an Edit inside the working folders runs without a question (auto mode reviews
# only what would otherwise ask, as Claude Code's does).
EDITS_ALLOWED_MODES = frozenset({PermissionMode.ACCEPT_EDITS, PermissionMode.AUTO})


# The tools that write files: Edit rules govern them, acceptEdits allows them.
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
# Read-only commands whose arguments name files they read (checked against Read rules and the
# working directories before they are auto-allowed).
FILE_READERS = frozenset({"cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ls", "stat", "du",
                           "diff", "cmp", "find", "tree", "file", "sort", "uniq", "sed", "readlink", "realpath"})
# The tools that read files: Read rules govern them (Claude Code's LS and NotebookRead too, so a
# rule written for them means the same here), and they ask outside the working directories.
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
# Tools that touch only the session's own state: allowed in every mode unless a rule denies them.
SESSION_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskGet", "TaskList", "TaskUpdate"})
_PATH_KEYS = ("file_path", "notebook_path", "path")


def protected_paths(cwd: Path) -> list[str]:
    """Files and folders no tool may write, in any mode: configuration and session records."""
    from codeloop.config.paths import config_dir, import_cache_root

    # (joined as strings from normalised folders: the same paths pathlib gives, at a fraction of
    # the cost, since the list is made at the first tool call and again at every rule change)
    j = os.path.join
    here, home = str(cwd), str(Path(os.path.expanduser("~")))
    claude_home = str(Path(os.environ.get("CLAUDE_CONFIG_DIR") or j(home, ".claude")))
    cfg = str(config_dir())
    # codeloop's caches hold code it runs at its next start (import-code, dataclass-code) and the
    # tool schemas every session sends: nothing a tool writes may be planted there for later
    caches = dict.fromkeys(c for c in (j(cfg, "cache"), import_cache_root()) if c)
    paths = [j(cfg, "settings.json"), j(cfg, "projects"), j(cfg, "trusted-folders.json"),
             *(j(c, "**") for c in caches),
             j(claude_home, "settings.json"),
             str(Path(os.environ.get("CODELOOP_MANAGED_SETTINGS") or "/etc/codeloop/managed-settings.json"))]
    for d in (".codeloop", ".claude"):
        paths += [j(here, d, "settings.json"), j(here, d, "settings.local.json")]
    # git runs programs named in its config (core.fsmonitor, hooks) on `git status`: never writable,
    # in nested repositories too (`git -C sub status`), nor the pointer a worktree's `.git` file is
    paths += [j(here, ".git", "config"), j(here, ".git", "hooks"), j(here, "**", ".git", "config"),
              j(here, "**", ".git", "hooks"), j(here, ".git", "modules", "**", "config"),
              j(here, ".git", "modules", "**", "hooks")]
    # files that redirect where git reads config from (another repository folder, extra config)
    for name in ("commondir", "config.worktree"):
        paths += [j(here, ".git", name), j(here, "**", ".git", name)]
    # git's per-user config names programs too (core.fsmonitor, core.pager, filter drivers)
    xdg = str(Path(os.environ.get("XDG_CONFIG_HOME") or j(home, ".config")))
    paths += [j(home, ".gitconfig"),
              *(j(d, "git", f) for d in dict.fromkeys((xdg, j(home, ".config"))) for f in ("config", "attributes"))]
    # a `.git` file (worktree or nested repository pointer) names the folder git reads config from
    paths += [j(here, ".git"), j(here, "**", ".git")]
    paths += [str(p) for p in _common_dir_paths(cwd)]
    return paths


def _common_dir_paths(cwd: Path) -> list[Path]:
    """A worktree's `.git` file points at `main/.git/worktrees/x`, whose `commondir` names the
    shared repository folder: its config and hooks run programs for every worktree."""
    try:
        line = (cwd / ".git").read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    gitdir = (cwd / line[7:].strip()).resolve()
    out = [gitdir / "config", gitdir / "hooks", gitdir / "commondir", gitdir / "config.worktree"]
    try:
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return out
    return out + [common / "config", common / "hooks", common / "commondir", common / "config.worktree"]


# Shell start-up files: writing one runs code in every later shell.
SHELL_RC_FILES = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc",
                  ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".inputrc")


def ask_paths(cwd: Path) -> list[str]:
    """Writable only with a question, in every mode but bypass: configuration that starts programs
    (MCP servers, custom commands and agents, hooks) and shell start-up files."""
    j = os.path.join
    here, home = str(cwd), str(Path(os.path.expanduser("~")))
    # nested ones too: codeloop started in `sub/` loads `sub/.claude`, `sub/.mcp.json` (nested git
    # folders are protected outright: `**/.git` above)
    nested = [j(here, "**", ".mcp.json"), j(here, "**", ".claude", "**"), j(here, "**", ".codeloop", "**")]
    # with the project at or above home these lie in the working folders: ssh (`Match exec`),
    # fish, Claude Code's user file, npm's (`node-options`), the bin folders on $PATH
    user = [j(home, ".claude.json"), j(home, ".npmrc"),
            *(f"{j(home, d)}/**" for d in (".ssh", ".config/fish", ".local/bin", "bin"))]
    return [j(here, ".mcp.json"), j(here, ".claude"), j(here, ".codeloop"), *nested, *user,
            *(j(home, f) for f in SHELL_RC_FILES)]


def edit_spec_for(path: str) -> str:
    """The Edit rule specifier that covers `path` (absolute): `//abs` is an absolute pattern, and a
    folder's covers everything under it."""
    folders = ("projects", "hooks", ".claude", ".codeloop")
    return f"/{path}" if not path.endswith(folders) else f"/{path}/**"
