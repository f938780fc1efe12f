"""The worktree session a ToolContext is in (EnterWorktree made or entered it; ExitWorktree ends it).

Apart from the tools (`tools.builtin.worktree`) so that `tools.base` can name the type without an
import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class WorktreeSession:
    """The worktree this session entered, and where it came from."""
    path: Path
    original_cwd: Path
    branch: str | None
    created: bool             # made by EnterWorktree (so ExitWorktree may remove it and its branch)
    base_head: str | None     # the commit it started from: later commits are work a removal would lose
    by_hook: bool = False     # made by a WorktreeCreate hook (not git): WorktreeRemove hooks remove it
