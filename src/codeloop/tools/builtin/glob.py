"""The Glob tool: find files by name pattern, newest first.

Also owns the glob dialect shared with Grep's fallback (`glob_to_regex`): `**` spans
directories, `*`/`?` stay within one path segment, `[...]` classes and `{a,b}` alternatives;
and the no-follow directory walk both use without rg (`walk_regular`). With rg, `rg --files`
lists (pre-filtered by the anchored glob) and the same matcher decides. Only regular files are
listed; symlinks are not followed, as ripgrep does by default.
"""

from __future__ import annotations

import heapq
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from codeloop.permissions.paths import open_dir_no_symlinks
from codeloop.tools.base import LazyModel, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.fileio import (
    Stopped,
    became_link,
    checked_paths,
    run_cancellable,
    swapped_error,
    with_own_fd,
)

MAX_RESULTS = 100
SKIP_DIRS = frozenset({".git"})
TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"
_MAGIC = re.compile(r"[*?\[{]")

DESCRIPTION = """\
Fast file pattern matching tool that works with any codebase size.
- Supports glob patterns like "**/*.js" or "src/**/*.ts" (`**` matches any number of \
directories, `*` and `?` match within one path segment, `{a,b}` alternatives and `[abc]` classes).
- Returns absolute paths of matching files sorted by modification time, newest first \
(at most 100; narrow the pattern or path if results are truncated). `.git` directories are skipped.
- Use this tool when you need to find files by name patterns.
- For open-ended searches that may need several rounds of globbing and grepping, plan them and \
batch independent searches in a single response."""


def _split_braces(body: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in body:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**", i):
            j = i + 2
            at_segment_start = i == 0 or pat[i - 1] == "/"
            if at_segment_start and j < n and pat[j] == "/":
                out.append("(?:[^/]*/)*")  # `**/` : zero or more whole directories
                i = j + 1
            else:
                out.append(".*")
                i = j
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pat.find("]", i + 2 if pat[i + 1 : i + 2] in ("!", "^") else i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pat[i + 1 : j]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        elif c == "{":
            depth, j = 0, i
            while j < n:
                depth += pat[j] == "{"
                depth -= pat[j] == "}"
                if depth == 0:
                    break
                j += 1
            if j >= n:
                out.append(re.escape(c))
                i += 1
                continue
            alts = _split_braces(pat[i + 1 : j])
            out.append("(?:" + "|".join(_translate(a) for a in alts) + ")")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob for matching `/`-separated relative paths (whole-string match)."""
    return re.compile(_translate(pattern) + r"\Z", re.DOTALL)


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def walk_regular(dir_fd: int, stop: threading.Event | None = None, prefix: str = "") -> Iterator[tuple[str, int, str]]:
    """(path relative to the walk's root with `/`, fd of its folder, name) of each regular file.

    Walks by directory fds, entries sorted by name and depth first (the order `rg --sort path`
    gives), never following a symlink: symlinks, FIFOs, sockets and devices are not yielded,
    and a folder swapped for a link mid-walk is not entered. The folder fd is open while the
    caller handles the entry, so files are opened relative to it.
    """
    try:
        with os.scandir(dir_fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if stop is not None and stop.is_set():
            raise Stopped
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name in SKIP_DIRS:
                    continue
                try:
                    sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    continue
                try:
                    yield from walk_regular(sub, stop, prefix + entry.name + "/")
                finally:
                    os.close(sub)
            elif entry.is_file(follow_symlinks=False):
                yield prefix + entry.name, dir_fd, entry.name
        except OSError:
            continue


def walk_files(root: Path) -> Iterator[tuple[str, str]]:
    """(absolute path, path relative to root with `/`) of every regular file below root."""
    fd = os.open(root, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
    try:
        for rel, _dir_fd, _name in walk_regular(fd):
            yield os.path.join(root, rel), rel
    finally:
        os.close(fd)


def mtime_or_zero(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def newest_first(paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (-mtime_or_zero(p), p))


class _Newest:
    """Collects each matching rel with its mtime, stat'ed relative to the open root (no path walk
    per file, a symlink not followed) — as rg's records arrive, so the stats overlap its walk —
    then orders them newest first, ties by path (`newest_first`'s order), as `root`/rel."""

    def __init__(self, rx: re.Pattern[str], root: str, dir_fd: int) -> None:
        self.match, self.dir_fd = rx.match, dir_fd
        self.prefix = root if root.endswith("/") else root + "/"
        self.keyed: list[tuple[int, str]] = []

    def add_all(self, rels: Iterable[str]) -> None:
        # one loop over a batch, names bound locally: a stat dominates each path's cost
        match, dir_fd, append, stat = self.match, self.dir_fd, self.keyed.append, os.stat
        for rel in rels:
            if match(rel):
                try:
                    mtime = stat(rel, dir_fd=dir_fd, follow_symlinks=False).st_mtime_ns
                except OSError:
                    mtime = 0
                append((-mtime, rel))   # the root is prefixed to the few listed, not to every match

    def ordered(self, limit: int | None) -> list[str]:
        """All of them in order; with `limit`, only the first `limit` of that order."""
        keyed = self.keyed
        if limit is not None and len(keyed) > limit:
            keyed = heapq.nsmallest(limit, keyed)
        else:
            keyed.sort()   # (one root: the relative paths order ties as the whole ones would)
        prefix = self.prefix
        return [prefix + rel for _, rel in keyed]


def split_static_prefix(pattern: str) -> tuple[str, str]:
    """Leading directories without glob magic, so the walk can start below them."""
    parts = pattern.split("/")
    static: list[str] = []
    while len(parts) > 1 and not _MAGIC.search(parts[0]):
        static.append(parts.pop(0))
    return "/".join(static), "/".join(parts)


def display(path: str) -> str:
    """A path as text the model (and any JSON encoder) can carry: bytes that are not UTF-8 in a
    file name become `\\xNN` escapes instead of lone surrogates."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", errors="backslashreplace")


def _rg_glob(pattern: str) -> str | None:
    """The pattern as an rg --glob anchored at the search root, or None when rg's dialect might
    read it differently (escapes) — then rg lists everything and our matcher alone decides."""
    return None if "\\" in pattern else "/" + pattern


async def _list_with_rg(rg: str, ctx: ToolContext, dir_fd: int, real: str, pattern: str,
                        each: Callable[[list[str]], None]) -> None:
    """Hands `each` every file's path relative to the root, as rg lists them (a list per read)."""
    from codeloop.tools.builtin.ripgrep import run_rg

    args = [rg, "--files", "--no-config", "--hidden", "--no-ignore", "--no-messages", "-0"]
    if (g := _rg_glob(pattern)) is not None:
        args += ["--glob", g]
    args += ["--glob", "!.git", "."]  # last: of several matching globs rg obeys the last one

    # os.fsdecode's own steps, without its per-call checks (~20,000 calls on a large tree)
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()

    def take(records: list[bytes]) -> bool:
        each([(r[2:] if r.startswith(b"./") else r).decode(encoding, errors) for r in records if r])
        return True

    await run_rg(ctx, args, dir_fd=dir_fd, dir_path=real, stdin_fd=None, sep=b"\0", handle=take, what="Glob",
                 batched=True)


class GlobTool(Tool):
    name: ClassVar[str] = "Glob"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[Any] = LazyModel("codeloop.tools.builtin.glob_input", "GlobInput")
    interruptible: ClassVar[bool] = True  # read-only: cancelling it when the user types loses nothing

    def is_read_only(self, inp: Any) -> bool:
        return True

    def is_concurrency_safe(self, inp: Any) -> bool:
        return True

    def __init__(self, *, use_ripgrep: bool | None = None) -> None:
        # None = use rg when one is found; False forces the Python walk (tests, odd hosts).
        self.use_ripgrep = use_ripgrep

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        root_arg = inp.path or str(ctx.cwd)
        pattern = inp.pattern
        if os.path.isabs(pattern):
            prefix, pattern = split_static_prefix(pattern)
            root_arg = prefix or "/"
        else:
            prefix, pattern = split_static_prefix(pattern)
            root_arg = os.path.join(root_arg, prefix) if prefix else root_arg
        root, real = checked_paths(ctx, root_arg, "Glob")
        try:
            dir_fd = open_dir_no_symlinks(real)
        except FileNotFoundError:
            if inp.path and not os.path.lexists(ctx.resolve(inp.path)):
                raise ToolError(f"Directory does not exist: {root}. Current working directory: {ctx.cwd}") from None
            return self._result([])
        except OSError as e:
            if became_link(e, real):
                raise swapped_error(root, "Glob") from e
            if isinstance(e, NotADirectoryError):
                if not prefix:
                    raise ToolError(f"Path is not a directory: {root}") from None
                return self._result([])
            raise ToolError(f"Cannot list {root}: {e.strerror or e}") from e
        try:
            found = _Newest(glob_to_regex(pattern), str(root), dir_fd)
            rg = None
            if self.use_ripgrep is not False:
                from codeloop.tools.builtin.ripgrep import find_rg
                rg = find_rg()
            if rg is not None:
                await _list_with_rg(rg, ctx, dir_fd, real, pattern, found.add_all)
            else:
                walk = with_own_fd(dir_fd, lambda own, stop: [r for r, _, _ in walk_regular(own, stop)])
                found.add_all(await run_cancellable(ctx, walk, "Glob"))
            # Without deny rules to filter by, only the first MAX_RESULTS (+1: "truncated") count.
            matches = found.ordered(MAX_RESULTS + 1 if ctx.read_denied is None else None)
        finally:
            os.close(dir_fd)
        if ctx.read_denied is not None:  # files a Read deny rule covers are not listed either
            matches = [m for m in matches if not ctx.read_denied(Path(m))]
        return self._result(matches)

    @staticmethod
    def _result(matches: list[str]) -> ToolResult:
        truncated = len(matches) > MAX_RESULTS
        shown = [display(m) for m in matches[:MAX_RESULTS]]
        data = {"filenames": shown, "numFiles": len(shown), "truncated": truncated}
        if not shown:
            return ToolResult("No files found", data=data)
        text = "\n".join(shown)
        if truncated:
            text += "\n" + TRUNCATED_NOTE
        return ToolResult(text, data=data)
