"""Grep's pure-Python back end, for hosts without ripgrep: bounded, no-follow, never blocking.

Owns the fallback's file selection (`--glob`/`--type` as rg reads them), the walk (regular
files only, by directory fds: a FIFO, socket, device or symlink is never opened), and the
per-file search: lines are streamed with a per-line and a per-file byte cap, so a huge file
costs bounded memory; multiline mode reads a whole file and so skips files over the cap.
Results go to the caller's `emit(path, suffix)` (False → stop): the file's path and what follows
it on the output line (`:N:text`, `-N-text`, `:count`, or nothing), still holding
surrogate-escaped bytes; the caller turns both into text. A separator is `emit(None, "--")`.
"""

from __future__ import annotations

import bisect
import io
import os
import re
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterator

from codeloop.tools.base import ToolError
from codeloop.tools.builtin.fileio import READ_FLAGS, Stopped
from codeloop.tools.builtin.glob import glob_to_regex, walk_regular

MAX_FILE_BYTES = 64 * 1024 * 1024   # searched per file (line mode); larger files in multiline are skipped
MAX_COLUMNS = 2000                  # longer lines are shown cut, as rg --max-columns-preview does
OMITTED = " [... omitted end of long line]"
LINE_CAP_BYTES = 1024 * 1024        # a line is searched up to this many bytes
_SNIFF = 8192

# A pragmatic subset of ripgrep's --type table for the fallback.
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py", "*.pyi"), "python": ("*.py", "*.pyi"),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs"), "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "rust": ("*.rs",), "go": ("*.go",), "java": ("*.java",), "kotlin": ("*.kt", "*.kts"),
    "c": ("*.c", "*.h"), "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"),
    "cs": ("*.cs",), "rb": ("*.rb",), "ruby": ("*.rb",), "php": ("*.php",),
    "swift": ("*.swift",), "scala": ("*.scala",), "sh": ("*.sh", "*.bash", "*.zsh"),
    "md": ("*.md", "*.markdown"), "markdown": ("*.md", "*.markdown"), "json": ("*.json",),
    "yaml": ("*.yaml", "*.yml"), "toml": ("*.toml",), "xml": ("*.xml",), "html": ("*.html", "*.htm"),
    "css": ("*.css", "*.scss", "*.sass", "*.less"), "sql": ("*.sql",), "txt": ("*.txt",),
}

Emit = Callable[[str | None, str], bool]


def split_globs(glob: str | None) -> list[str]:
    """Several globs may come in one string; commas inside {a,b} belong to the glob."""
    out: list[str] = []
    for part in (glob or "").split():
        out.extend([part] if "{" in part else [p for p in part.split(",") if p])
    return out


def compile_pattern(pattern: str, *, ignore_case: bool, multiline: bool) -> re.Pattern[str]:
    flags = re.IGNORECASE if ignore_case else 0
    if multiline:
        flags |= re.DOTALL | re.MULTILINE
    try:
        return re.compile(pattern, flags)
    except re.error as e:
        raise ToolError(f"Invalid regex pattern {pattern!r}: {e}") from e


def file_filter(glob: str | None, type_: str | None) -> Callable[[str], bool]:
    includes: list[str] = []
    excludes: list[str] = []
    for g in split_globs(glob):
        (excludes if g.startswith("!") else includes).append(g.lstrip("!"))
    type_globs = None
    if type_:
        if type_ not in FILE_TYPES:
            raise ToolError(f"Unknown file type {type_!r}; known types: {', '.join(sorted(FILE_TYPES))}")
        type_globs = [glob_to_regex(g) for g in FILE_TYPES[type_]]

    def matches(g: str, rel: str) -> bool:
        # As in ripgrep: a glob without `/` matches the file name at any depth.
        target = rel if "/" in g else rel.rsplit("/", 1)[-1]
        return bool(glob_to_regex(g.lstrip("/")).match(target))

    def keep(rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        if type_globs is not None and not any(rx.match(name) for rx in type_globs):
            return False
        if includes and not any(matches(g, rel) for g in includes):
            return False
        return not any(matches(g, rel) for g in excludes)

    return keep


def cut(line: str) -> str:
    """An over-long line cut as rg's --max-columns-preview cuts it (idempotent on rg's output)."""
    return line[:MAX_COLUMNS] + OMITTED if len(line) > MAX_COLUMNS else line


def _lines(f: io.BufferedReader[io.FileIO], stop: threading.Event, capped: list[int]) -> Iterator[str]:
    """Decoded lines (no terminator) of the first MAX_FILE_BYTES; a NUL ends the file (binary).
    A file cut at the cap adds one to `capped[0]`, so the result can say so."""
    read = 0
    while True:
        if read >= MAX_FILE_BYTES:
            if f.peek(1):
                capped[0] += 1
            return
        if stop.is_set():
            raise Stopped
        raw = f.readline(LINE_CAP_BYTES)
        if not raw or b"\0" in raw:
            return
        read += len(raw)
        if not raw.endswith(b"\n") and len(raw) == LINE_CAP_BYTES:
            while (more := f.readline(1 << 16)) and not more.endswith(b"\n"):  # drop the rest
                read += len(more)
                if stop.is_set() or read >= MAX_FILE_BYTES:
                    break
            read += len(more)
        raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw
        yield raw.decode("utf-8", errors="surrogateescape")


class Searcher:
    """One fallback search: pattern, mode and context, emitting entries as rg would print them."""

    def __init__(self, rx: re.Pattern[str], mode: str, *, before: int, after: int, numbered: bool,
                 multiline: bool, emit: Emit) -> None:
        self.rx, self.mode, self.emit = rx, mode, emit
        self.before, self.after, self.numbered, self.multiline = before, after, numbered, multiline
        self.last_printed: tuple[str, int] | None = None  # (file, line index) of the last emitted line
        self.capped = [0]  # files searched only in their first MAX_FILE_BYTES (or skipped, multiline)

    def search_dir(self, dir_fd: int, root: str, keep: Callable[[str], bool], stop: threading.Event,
                   allowed: Callable[[str, os.stat_result], bool]) -> None:
        for rel, parent_fd, name in walk_regular(dir_fd, stop):
            if not keep(rel):
                continue
            path = os.path.join(root, rel)
            try:
                fd = os.open(name, READ_FLAGS | getattr(os, "O_NOFOLLOW", 0), dir_fd=parent_fd)
            except OSError:
                continue  # gone, unreadable or swapped for a link since the walk saw it
            try:
                st = os.fstat(fd)
                if stat.S_ISREG(st.st_mode) and allowed(path, st) and not self.search_fd(fd, st, path, stop):
                    return
            finally:
                os.close(fd)

    def search_fd(self, fd: int, st: os.stat_result, path: str, stop: threading.Event) -> bool:
        """Search one open regular file; False once the consumer wants no more."""
        if b"\0" in os.pread(fd, _SNIFF, 0):
            return True  # binary: skipped, as rg skips it
        os.lseek(fd, 0, os.SEEK_SET)
        if self.multiline:
            if st.st_size > MAX_FILE_BYTES:
                self.capped[0] += 1
                return True
            data = os.read(fd, MAX_FILE_BYTES + 1)
            text = data.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n")
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            return self._report(path, _multiline_hits(self.rx, text, lines), lines)
        f = io.BufferedReader(io.FileIO(fd, closefd=False), 1 << 16)
        if self.mode == "files_with_matches":
            if any(self.rx.search(line) for line in _lines(f, stop, self.capped)):
                return self.emit(path, "")
            return True
        if self.mode == "count":
            n = sum(1 for line in _lines(f, stop, self.capped) if self.rx.search(line))
            return n == 0 or self.emit(path, f":{n}")
        return self._stream_content(path, _lines(f, stop, self.capped))

    def _line(self, path: str, i: int, text: str, hit: bool) -> bool:
        if (self.before or self.after) and self.last_printed is not None and self.last_printed != (path, i - 1):
            if not self.emit(None, "--"):
                return False
        sep = ":" if hit else "-"
        num = f"{i + 1}{sep}" if self.numbered else ""
        self.last_printed = (path, i)
        return self.emit(path, f"{sep}{num}{cut(text)}")

    def _stream_content(self, path: str, lines: Iterator[str]) -> bool:
        recent: deque[tuple[int, str]] = deque(maxlen=self.before or None)
        after_left = 0
        for i, line in enumerate(lines):
            if self.rx.search(line):
                for j, old in recent:
                    if not self._line(path, j, old, False):
                        return False
                recent.clear()
                if not self._line(path, i, line, True):
                    return False
                after_left = self.after
            elif after_left:
                after_left -= 1
                if not self._line(path, i, line, False):
                    return False
            elif self.before:
                recent.append((i, line))
        return True

    def _report(self, path: str, hits: list[int], lines: list[str]) -> bool:
        if not hits:
            return True
        if self.mode == "files_with_matches":
            return self.emit(path, "")
        if self.mode == "count":
            return self.emit(path, f":{len(hits)}")
        hit_set = set(hits)
        wanted: set[int] = set()
        for i in hits:
            wanted.update(range(max(i - self.before, 0), min(i + self.after, len(lines) - 1) + 1))
        return all(self._line(path, i, lines[i], i in hit_set) for i in sorted(wanted))


def _multiline_hits(rx: re.Pattern[str], text: str, lines: list[str]) -> list[int]:
    """0-based indexes of lines that contain (part of) a match."""
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    hit: set[int] = set()
    for m in rx.finditer(text):
        first = bisect.bisect_right(starts, m.start()) - 1
        end = m.end() - 1 if m.end() > m.start() else m.start()  # last char of the match
        last = bisect.bisect_right(starts, end) - 1
        hit.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(hit)
