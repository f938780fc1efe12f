"""Nested-memory prefetch (spec 004 §7.1, §13.2): instruction files below the working directory.

The user context already carries the CLAUDE.md files of cwd and its ancestors. Subdirectories
can hold their own (`sub/CLAUDE.md`, `sub/CLAUDE.local.md`, `sub/.claude/CLAUDE.md`); those
matter only once the model works in that subtree. This module owns finding them in the
background when a query starts, and handing the relevant ones to the loop between turns
without ever making the loop wait. `NestedMemory` is the session's state: which files are
attached (and by which message), so each is attached once however many queries run — until a
compaction summarises its attachment away; then it is attached again once its folder is read
again. Its `start` is the capability the loop receives (`QueryParams.memory`). The loop only
yields what it gets. Files are read through the session's `ProjectFiles`: a nested CLAUDE.md that
leads out of the project is never attached (the reader keeps a warning for the user).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.messages import Message, user_message

if TYPE_CHECKING:
    from codeloop.permissions.project_files import ProjectFiles

# Same per-directory order as the user context: shared, then .claude/, then private.
MEMORY_FILE_NAMES = ("CLAUDE.md", os.path.join(".claude", "CLAUDE.md"), "CLAUDE.local.md")
_LOCAL_NAMES = frozenset({"CLAUDE.local.md"})


def memory_file_names(sources: frozenset[str] | set[str] | None) -> tuple[str, ...]:
    """The nested instruction files --setting-sources allows: `project` the shared ones, `local`
    CLAUDE.local.md (None: all)."""
    if sources is None:
        return MEMORY_FILE_NAMES
    return tuple(n for n in MEMORY_FILE_NAMES if ("local" if n in _LOCAL_NAMES else "project") in sources)
# Dot-dirs are skipped wholesale; these are the big non-dot ones worth never descending into.
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
MAX_MEMORY_CHARS = 40_000


@dataclass(frozen=True)
class MemoryFile:
    """An instruction (memory) file and the directory it governs."""
    path: str       # absolute path of the instruction file
    directory: str  # the directory it governs (for .claude/CLAUDE.md, the parent of .claude)


def find_nested_memory_files(cwd: Path, *, max_files: int = 2000, max_depth: int = 6,
                             stop: threading.Event | None = None,
                             names: tuple[str, ...] = MEMORY_FILE_NAMES) -> list[MemoryFile]:
    """Memory files in subdirectories of `cwd`, shallowest first.

    Breadth-first so that when the `max_files` bound cuts a huge tree short, what was found is
    what sits closest to the user. Runs in a worker thread; `stop` lets the owner end it early.
    """
    root = os.path.abspath(cwd)
    found: list[MemoryFile] = []
    visited = 0
    pending: deque[tuple[str, int]] = deque([(root, 0)])
    while pending:
        directory, depth = pending.popleft()
        if stop is not None and stop.is_set():
            break
        if depth > 0:
            for name in names:
                candidate = os.path.join(directory, name)
                if os.path.isfile(candidate) or os.path.islink(candidate):   # a link is judged when read
                    found.append(MemoryFile(candidate, directory))
        if depth >= max_depth:
            continue
        children = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    # Every entry counts, files too: a huge flat directory costs as much as a deep tree.
                    visited += 1
                    if visited > max_files:
                        return found
                    if _walkable(entry) and not entry.name.startswith(".") and entry.name not in SKIP_DIRS:
                        children.append(entry.name)
        except OSError:
            continue  # unreadable directory: skip it, keep the rest of the walk
        pending.extend((os.path.join(directory, name), depth + 1) for name in sorted(children))
    return found


def _walkable(entry: os.DirEntry[str]) -> bool:
    # No symlinked directories: they can loop, or lead outside the project.
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


class MemoryPrefetch:
    """A background walk for nested memory files, consumed zero-wait by the loop."""

    def __init__(self, cwd: Path, *, max_files: int = 2000, max_depth: int = 6,
                 names: tuple[str, ...] = MEMORY_FILE_NAMES, files: ProjectFiles | None = None) -> None:
        from codeloop.permissions.project_files import ProjectFiles

        self.cwd = Path(os.path.abspath(cwd))
        self.names = names
        self.reader = files if files is not None else ProjectFiles(self.cwd)
        self.settled_at: float | None = None
        self.error: BaseException | None = None
        self._files: list[MemoryFile] = []
        self._stop = threading.Event()
        self.task: asyncio.Task[None] = asyncio.get_running_loop().create_task(
            self._run(max_files, max_depth), name="memory-prefetch")
        # A done-callback, not a `finally`: it also fires when the task is cancelled before
        # its first step, and it runs before anyone awaiting the task resumes.
        self.task.add_done_callback(self._settle)

    async def _run(self, max_files: int, max_depth: int) -> None:
        try:
            self._files = await asyncio.to_thread(
                find_nested_memory_files, self.cwd, max_files=max_files, max_depth=max_depth,
                stop=self._stop, names=self.names)
        except Exception as exc:  # a failed prefetch only means no nested memory this query
            self.error = exc

    def _settle(self, _task: asyncio.Task[None]) -> None:
        self.settled_at = time.time()

    @property
    def files(self) -> list[MemoryFile]:
        return list(self._files)

    def take_attachments(self, read_paths: Iterable[str], already: Collection[str],
                         stale: Mapping[str, Collection[str]] | None = None) -> list[dict[str, Any]]:
        """Attachments for memory files governing something the model read; never waits.

        Returns [] until the walk has settled, so the loop simply tries again next iteration.
        Adds each attached path to `already` (when it is a set) so a file is attached once; reads
        listed in `stale` for a memory file (made before it was forgotten) do not bring it back.
        """
        if self.settled_at is None or not self._files:
            return []
        touched = [(p, os.path.abspath(p if os.path.isabs(p) else self.cwd / p)) for p in read_paths]
        out = []
        for mem in self._files:
            old = (stale or {}).get(mem.path, ())
            if mem.path in already or not any(_is_within(full, mem.directory) for p, full in touched if p not in old):
                continue
            content = _read_capped(mem.path, self.reader)
            if content is None:
                continue  # vanished, unreadable or skipped (a link out of the project: warned once)
            if isinstance(already, set):
                already.add(mem.path)
            out.append({"type": "nested_memory", "path": mem.path, "content": content})
        return out

    def close(self) -> None:
        """Dispose: call on every exit path of the query so no walk outlives it."""
        self._stop.set()
        if not self.task.done():
            self.task.cancel()


def start_memory_prefetch(cwd: Path, *, max_files: int = 2000, max_depth: int = 6,
                          names: tuple[str, ...] = MEMORY_FILE_NAMES,
                          files: ProjectFiles | None = None) -> MemoryPrefetch:
    """Start the walk on the running loop; the caller must `close()` the result."""
    return MemoryPrefetch(cwd, max_files=max_files, max_depth=max_depth, names=names, files=files)


def _is_within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _read_capped(path: str, files: ProjectFiles) -> str | None:
    # 4 bytes hold any character: enough bytes for the cap, and the cut is marked below
    text = files.read_text(path, "nested instructions", limit=4 * MAX_MEMORY_CHARS + 4, warn_cut=False)
    if text is None:
        return None
    if len(text) > MAX_MEMORY_CHARS:
        text = text[:MAX_MEMORY_CHARS] + "\n… [truncated]"
    return text


class NestedMemory:
    """Nested CLAUDE.md for one session: attached once while its attachment is in the history
    (spec 004 §13.2).

    The state outlives each query's prefetch, so a file read again in a later prompt is not
    attached a second time (the first attachment is still in the history). A compaction drops
    the attachment from the history: the file is forgotten then, and attached again when its
    folder is read again — the reads made before it was forgotten do not count (`stale`).
    """

    def __init__(self, cwd: Path, files: ProjectFiles | None = None) -> None:
        from codeloop.permissions.project_files import ProjectFiles

        self.cwd = cwd
        self.files = files if files is not None else ProjectFiles(cwd)   # reads them; keeps what it skipped
        self.attached: dict[str, str] = {}   # memory file → uuid of its attachment message
        # forgotten memory file → the reads made before it was forgotten (path → read record)
        self._stale_records: dict[str, dict[str, Any]] = {}
        self.file_names = MEMORY_FILE_NAMES   # narrowed by --setting-sources (memory_file_names)

    def start(self) -> QueryMemory:
        """One query's view: a fresh walk (files may have appeared), the session's state."""
        return QueryMemory(start_memory_prefetch(self.cwd, names=self.file_names, files=self.files), self)

    def forget_missing(self, history: list[Message], read_files: Mapping[str, Any]) -> None:
        if not self.attached:
            return
        present = {m.uuid for m in history}
        for path, uuid in list(self.attached.items()):
            if uuid not in present:
                del self.attached[path]
                # a read counts again once its record changes: every read stores a new one
                self._stale_records[path] = dict(read_files)

    def stale_reads(self, read_files: Mapping[str, Any]) -> dict[str, frozenset[str]]:
        """Per forgotten file, the reads that have not been made again since it was forgotten."""
        return {mem: frozenset(p for p, rec in before.items() if read_files.get(p) is rec)
                for mem, before in self._stale_records.items()}

    def remember(self, path: str, message: Message) -> None:
        self.attached[path] = message.uuid
        self._stale_records.pop(path, None)


class QueryMemory:
    """What the loop holds for one query (`loop.continuation.NestedMemory`)."""

    def __init__(self, prefetch: MemoryPrefetch, session: NestedMemory) -> None:
        self.prefetch, self.session = prefetch, session

    def take(self, read_files: Mapping[str, Any] | Iterable[str]) -> list[tuple[dict[str, Any], Message]]:
        records = read_files if isinstance(read_files, Mapping) else dict.fromkeys(read_files)
        out = []
        for att in self.prefetch.take_attachments(list(records), self.session.attached,
                                                  self.session.stale_reads(records)):
            message = attachment_message(att)
            self.session.remember(att["path"], message)
            out.append(({"type": att["type"], "path": att["path"]}, message))
        return out

    def forget_missing(self, history: list[Message], read_files: Mapping[str, Any]) -> None:
        self.session.forget_missing(history, read_files)

    def close(self) -> None:
        self.prefetch.close()


def attachment_message(att: dict[str, Any]) -> Message:
    text = (f"<system-reminder>\nContents of {att['path']} (project instructions for this "
            f"subdirectory):\n\n{att['content']}\n</system-reminder>")
    return user_message(text, is_meta=True)
