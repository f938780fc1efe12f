"""Claude Code's guarded folders, and the words said about a Bash call that leaves the sandbox.

Owns `guarded_folder(path)`: writes into `.git`, `.claude`, `.vscode`, `.idea` and `.husky`
(and codeloop's own `.codeloop`) are never approved without the user, in any permission mode,
bypassPermissions included — their files run programs later (git and husky hooks, editor tasks,
agent settings) or hold the repository itself. As in Claude Code, the folders Claude is meant to
write in bypass mode are exempt there: `.claude/commands`, `.claude/agents`, `.claude/skills`
(and the same under `.codeloop`); `.claude/worktrees/NAME` (`-w`) is an ordinary checkout.
Where nobody can answer (print mode, dontAsk) such a write is refused. Finer protections
(settings files, `.git/config` and hooks) are deny rules (`modes.protected_paths`) and hold
whatever is answered here.
"""

from __future__ import annotations

import os

GUARDED_DIRS = frozenset({".git", ".claude", ".codeloop", ".vscode", ".idea", ".husky"})
# Sub-folders of `.claude` (and `.codeloop`) written without a question in bypass mode.
EXEMPT_IN_BYPASS = frozenset({"commands", "agents", "skills"})
_CONFIG = frozenset({".claude", ".codeloop"})

# Said in every question about a call that asked to leave the sandbox, and in print mode's refusal.
OUTSIDE_SANDBOX = ("This command runs outside the sandbox (dangerouslyDisableSandbox), without its limits on "
                   "files and network")


def _guarded_in(parts: list[str], exempt: bool) -> str | None:
    for i, part in enumerate(parts):
        if part not in GUARDED_DIRS:
            continue
        # `.claude/commands/x.md` is exempt; `.claude/commands` itself (a file replacing the folder) is
        # not. `-w` worktrees live in `.claude/worktrees/NAME`: their files are a checkout like any
        # other, in every mode (the folders inside one are looked at all the same).
        if part in _CONFIG and i + 2 < len(parts) and (parts[i + 1] == "worktrees"
                                                       or exempt and parts[i + 1] in EXEMPT_IN_BYPASS):
            continue
        return part
    return None


def guarded_folder(path: str, cwd: str, *, bypass: bool) -> str | None:
    """The guarded folder a write to `path` lands in (None: none). Checked as written and as the
    kernel resolves it, so a symlink into `.git` is the `.git` it points at. `bypass`: the
    exempt sub-folders are exempt."""
    full = os.path.join(cwd, os.path.expanduser(path))
    for form in dict.fromkeys((os.path.normpath(full), os.path.realpath(full))):
        if hit := _guarded_in([p for p in form.split(os.sep) if p], bypass):
            return hit
    return None


def guarded_reason(tool: str, path: str, folder: str) -> str:
    return (f"{tool} writes {path}, inside {folder}, a folder guarded in every permission mode "
            f"(bypassPermissions included): its files run programs or hold the repository")


def guarded_write(writes: list, cwd: str, *, bypass: bool) -> str | None:
    """Why one of a Bash line's known write targets needs the user: it lands in a guarded folder."""
    for w in writes:
        if w.path is not None and (folder := guarded_folder(w.path, cwd, bypass=bypass)):
            return guarded_reason(f"{w.how} in {w.part!r}", w.path, folder)
    return None


def wants_outside(inp: object, raw: dict) -> bool:
    """Whether a Bash call asked to leave the sandbox: as parsed (what the tool obeys — `"true"`
    becomes True there) or as sent; either one is enough."""
    return getattr(inp, "dangerouslyDisableSandbox", None) is True or raw.get("dangerouslyDisableSandbox") is True
