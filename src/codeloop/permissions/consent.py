"""What an explicit Bash allow rule consents to: the files the commands it matched name.

A rule such as `Bash(mkdir:*)` (from a flag, a settings file or a saved "don't ask again") is the
user's consent to that command doing its job: `mkdir build` may make `build`, `rm x` may remove
`x`, `python3 -c …` may run its code. The consent reaches only the parts of the line the rule
matched (a redirect, or another command chained on, is judged on its own) and only operands
inside the working folders. Protected paths, ask paths, Read-denied paths and configuration
(project configuration folders, codeloop's and Claude's own, home dot-files when the project
holds home) stay out of it; the permission gate (`bash_gate.py`) judges those.

Owns: `rules_concern` (what the rule decision itself refuses to consent to: a write known only
at run time, or outside the working folders), `config_component` (the configuration folders a
consented write may not touch) and `holds_config` (a folder copied, moved or linked in that
would bring one along). The only I/O: `realpath`, and a bounded walk of a copied folder.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeloop.permissions.shell_writes import WriteTarget

# Folders whose files start programs later (git config and hooks, Claude/codeloop settings and
# commands, editor tasks, husky hooks), and the MCP server list: Claude Code guards these even in
# bypass mode, so a rule about a command does not consent to writing them.
CONFIG_NAMES = frozenset({".git", ".claude", ".codeloop", ".vscode", ".idea", ".husky", ".mcp.json"})
_WALK_BUDGET = 20_000


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def in_roots(path: str, roots: Iterable[str]) -> bool:
    """Whether `path` (absolute), as written and as the kernel resolves it, is in a working folder."""
    real, lexical = os.path.realpath(path), os.path.normpath(path)
    return any(inside(real, os.path.realpath(r)) and (inside(lexical, os.path.normpath(r))
                                                      or inside(lexical, os.path.realpath(r))) for r in roots)


def consented_unknown(w: WriteTarget, consented: Collection[int]) -> bool:
    """A write whose target is known only at run time that the rule still covers: code run by an
    interpreter the rule names (`Bash(python3:*)` covers `python3 -c …` as it covers a script)."""
    return w.path is None and w.index in consented and w.how.endswith("inline code")


def rules_concern(writes: list[WriteTarget], consented: Collection[int], roots: Iterable[str]) -> str | None:
    """Why a line whose every part is allowed or read-only is still not allowed by the rules: a
    write known only when it runs, or one outside the working folders (None: no such write)."""
    roots = list(roots)
    for w in writes:
        if w.path is None and not consented_unknown(w, consented):
            return f"{w.how} writes somewhere known only when it runs: {w.part}"
        if w.path is not None and not in_roots(w.path, roots):
            return f"{w.how} writes outside the working directories: {w.part}"
    return None


def config_component(path: str, roots: Iterable[str]) -> str | None:
    """The configuration `path` is or lies in: a configuration folder (or `.mcp.json`) below its
    working folder, codeloop's or Claude's configuration folder, or — when a working folder holds
    the home folder — a dot-file or dot-folder of home (`~/.ssh/config`, `~/.bash_aliases`…)."""
    from codeloop.config.paths import config_dir

    bases = {b for r in roots for b in (os.path.normpath(r), os.path.realpath(r))}
    home = os.path.realpath(os.path.expanduser("~"))
    claude = os.path.expanduser(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude")
    for form in (os.path.normpath(path), os.path.realpath(path)):
        for folder in (str(config_dir()), claude):
            if inside(form, os.path.normpath(folder)) or inside(form, os.path.realpath(folder)):
                return folder
        if form != home and inside(form, home) and any(inside(home, b) for b in bases):
            first = os.path.relpath(form, home).split(os.sep)[0]
            if first.startswith("."):
                return f"~/{first}"
        for base in bases:
            if inside(form, base):
                hit = next((c for c in os.path.relpath(form, base).split(os.sep) if c in CONFIG_NAMES), None)
                if hit:
                    return hit
    return None


def holds_config(folder: str) -> str | None:
    """A configuration folder or file inside `folder` (copying it in would plant it), or why the
    folder cannot be checked; None for a file or a folder holding none."""
    if not os.path.isdir(folder):
        return None
    budget, stack = _WALK_BUDGET, [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            budget -= 1
            if budget < 0:
                return f"{folder} is too big to check for configuration folders"
            if e.name in CONFIG_NAMES:
                return f"{folder} holds {e.path}"
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
    return None
