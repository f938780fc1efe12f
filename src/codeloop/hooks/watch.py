"""CwdChanged and FileChanged: the working folder and the watched files, looked at between steps.

Claude Code watches files with a file-system watcher and fires as soon as one changes; codeloop
looks at turn boundaries instead — when a prompt is submitted and after each batch of tool calls
(`check`) — which is where a change can first matter to the model. Watched: the file names the
FileChanged matchers list (`.envrc|.env`: those names in the working folder), and the absolute
paths hooks answered with in `watchPaths` (SessionStart, CwdChanged, FileChanged). A file that
appears is `add`, one that goes is `unlink`, one whose size or mtime moved is `change`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from codeloop.hooks.events import HookEvent, hooks_section

if TYPE_CHECKING:
    from codeloop.hooks.lifecycle import LifecycleHooks
    from codeloop.hooks.runner import HookRunner

_LITERAL_NAME = re.compile(r"[\w.\-]+")


def matcher_names(config: dict) -> list[str]:
    """The file names FileChanged matchers name (each `|` alternative that is a plain name)."""
    names: list[str] = []
    for group in hooks_section(config).get(HookEvent.FILE_CHANGED.value) or []:
        matcher = group.get("matcher") if isinstance(group, dict) else None
        if isinstance(matcher, str):
            names += [n for n in matcher.split("|") if _LITERAL_NAME.fullmatch(n) and n not in names]
    return names


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class WorkspaceWatch:
    """`runner()` is the session's HookRunner (None: nothing to watch)."""

    def __init__(self, lifecycle: LifecycleHooks, runner: Callable[[], HookRunner | None]) -> None:
        self.lifecycle, self._runner = lifecycle, runner
        self.cwd: str | None = None
        self.extra: list[str] = []                            # watchPaths hooks asked for
        self.stamps: dict[str, tuple[int, int] | None] = {}   # path → last seen (None: absent)

    def add(self, paths: Iterable[str]) -> None:
        for p in paths:
            if os.path.isabs(p) and p not in self.extra:
                self.extra.append(p)
                self.stamps.setdefault(p, _stamp(p))   # watched from now on: no event for what it is

    def _paths(self) -> list[str]:
        runner = self._runner()
        names = matcher_names(runner.config) if runner is not None else []
        return [*(os.path.join(self.cwd or "", n) for n in names), *self.extra]

    async def check(self, cwd: str | os.PathLike[str]) -> None:
        """Fire CwdChanged if the working folder moved, then FileChanged for each watched change."""
        if self._runner() is None:
            return
        cwd = os.fspath(cwd)
        if self.cwd is None:
            self.cwd = cwd
            self.stamps.update({p: _stamp(p) for p in self._paths() if p not in self.stamps})
            return
        if cwd != self.cwd:
            old, self.cwd = self.cwd, cwd
            self.add(await self.lifecycle.cwd_changed(old, cwd))
        for path in self._paths():
            now = _stamp(path)
            if path not in self.stamps:   # newly watched (the folder moved): a baseline, no event
                self.stamps[path] = now
                continue
            before, self.stamps[path] = self.stamps[path], now
            if before == now:
                continue
            event = "add" if before is None else "unlink" if now is None else "change"
            self.add(await self.lifecycle.file_changed(path, event))
