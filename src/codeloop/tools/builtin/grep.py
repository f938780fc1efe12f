"""The Grep tool: regex search over file contents, via ripgrep or a pure-Python fallback.

Owns the tool, the ripgrep invocation and the one collector + formatter both back ends feed
(`grep_fallback` is the other back end), so the model sees the same shape either way: `path`
lines (files_with_matches, newest first), `path:line:text` with `path-line-text` context and
`--` group separators (content), `path:count` (count). The collector drops what deny rules
cover (by path, and by inode for hard links) and stops both back ends once head_limit is
reached in content and count modes. The search root is opened without following links; a
FIFO, socket or device is never opened. The fallback does not read .gitignore files; rg does.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, ClassVar, Literal

from codeloop.permissions.paths import open_no_symlinks
from codeloop.tools.base import LazyModel, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.fileio import (
    READ_FLAGS,
    InodeGuard,
    checked_paths,
    open_failure,
    run_cancellable,
    with_own_fd,
)
from codeloop.tools.builtin.glob import display, newest_first
from codeloop.tools.builtin.grep_fallback import (
    MAX_COLUMNS,
    MAX_FILE_BYTES,
    Searcher,
    compile_pattern,
    cut,
    file_filter,
    split_globs,
)

OutputMode = Literal["content", "files_with_matches", "count"]

DESCRIPTION = """\
A powerful search tool built on ripgrep.

Usage:
- ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command.
- Supports full regex syntax (e.g. "log.*Error", "function\\s+\\w+").
- Filter files with the glob parameter (e.g. "*.js", "**/*.tsx") or the type parameter \
(e.g. "js", "py", "rust"); type is more efficient than glob for standard file types.
- Output modes: "files_with_matches" shows only file paths, newest first (default); "content" \
shows matching lines (with -n line numbers and -A/-B/-C context); "count" shows match counts per file.
- Use head_limit to cap the number of output lines or entries.
- Pattern syntax is ripgrep's: literal braces need escaping (use `interface\\{\\}` to find \
`interface{}` in Go code).
- By default patterns match within single lines only. For patterns spanning lines, like \
`struct \\{[\\s\\S]*?field`, set multiline: true.
- .git directories are skipped; hidden files are searched."""


def context_sizes(inp: Any) -> tuple[int, int]:
    """(before, after); explicit -A/-B win over -C."""
    before = inp.before if inp.before is not None else (inp.context or 0)
    after = inp.after if inp.after is not None else (inp.context or 0)
    return before, after


class Collector:
    """Entries from either back end: denied files dropped, head_limit counted as they come."""

    def __init__(self, ctx: ToolContext, inp: Any, *, verify_files: bool) -> None:
        self.mode = inp.output_mode
        # files_with_matches is sorted newest first afterwards, so it needs every file
        self.limit = inp.head_limit if self.mode != "files_with_matches" else None
        self.entries: list[tuple[str, str]] = []  # (file system path, output line)
        self.escaped = 0
        self.received = 0
        self.capped_files = 0  # the fallback searched these only in part (or skipped them, multiline)
        self._pending_sep = False
        self._verdicts: dict[str, bool] = {}
        self._denied = ctx.read_denied
        self._inodes = InodeGuard(ctx, "Grep")
        self._verify = verify_files

    def allowed(self, path: str, st: os.stat_result | None = None) -> bool:
        verdict = self._verdicts.get(path)
        if verdict is None:
            verdict = self._verdicts[path] = self._judge(path, st)
        return verdict

    def _judge(self, path: str, st: os.stat_result | None) -> bool:
        if self._denied is not None and self._denied(Path(path)):
            return False
        if st is None and self._verify:
            try:
                st = os.lstat(path)
            except OSError:
                return False
            if not stat.S_ISREG(st.st_mode):
                return False  # rg reported a file that is now a link or a special file: swapped
        return st is None or not self._inodes.denied(st)

    def add(self, path: str | None, suffix: str) -> bool:
        """One output line (`path` + `suffix`; None + "--" is a separator); False → stop."""
        self.received += 1
        if path is None:
            self._pending_sep = bool(self.entries)
            return True
        if not self.allowed(path):
            return True
        if self._pending_sep:
            self.entries.append(("", "--"))
            self._pending_sep = False
        self.entries.append((path, self._text(path) + self._text(suffix)))
        return self.limit is None or len(self.entries) <= self.limit

    def _text(self, s: str) -> str:
        shown = display(s)
        self.escaped += shown is not s
        return shown


class GrepTool(Tool):
    name: ClassVar[str] = "Grep"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[Any] = LazyModel("codeloop.tools.builtin.grep_input", "GrepInput")
    interruptible: ClassVar[bool] = True  # read-only: cancelling it when the user types loses nothing

    def __init__(self, *, use_ripgrep: bool | None = None) -> None:
        # None = use rg when one is found; False forces the Python fallback (tests, odd hosts).
        self.use_ripgrep = use_ripgrep

    def is_read_only(self, inp: Any) -> bool:
        return True

    def is_concurrency_safe(self, inp: Any) -> bool:
        return True

    def _rg(self) -> str | None:
        if self.use_ripgrep is False:
            return None
        from codeloop.tools.builtin.ripgrep import find_rg

        return find_rg()

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        root, real = checked_paths(ctx, inp.path or str(ctx.cwd), "Grep")
        try:
            fd = open_no_symlinks(real, READ_FLAGS)
        except FileNotFoundError:
            raise ToolError(f"Path does not exist: {root}. Current working directory: {ctx.cwd}") from None
        except OSError as e:
            raise open_failure(e, root, "Grep", real) from e
        try:
            st = os.fstat(fd)
            is_dir = stat.S_ISDIR(st.st_mode)
            if not is_dir and not stat.S_ISREG(st.st_mode):
                raise ToolError(f"{root} is not a regular file or a directory (device, FIFO or socket); "
                                "Grep cannot search it.")
            if not is_dir:
                InodeGuard(ctx, "Grep").check(st, root)
            collector = Collector(ctx, inp, verify_files=is_dir)
            rg = self._rg()
            if rg is not None:
                await _ripgrep(rg, inp, ctx, collector, root=str(root), real=real, fd=fd, is_dir=is_dir)
            else:
                work = with_own_fd(fd, lambda own, stop: _fallback(inp, collector, str(root), own, st, stop))
                await run_cancellable(ctx, work, "Grep")
        finally:
            os.close(fd)
        return _format(inp, collector)


def _fallback(inp: Any, collector: Collector, root: str, fd: int, st: os.stat_result, stop) -> None:
    rx = compile_pattern(inp.pattern, ignore_case=bool(inp.case_insensitive), multiline=bool(inp.multiline))
    before, after = context_sizes(inp)
    searcher = Searcher(rx, inp.output_mode, before=before, after=after, numbered=inp.line_numbers is not False,
                        multiline=bool(inp.multiline), emit=collector.add)
    try:
        if stat.S_ISDIR(st.st_mode):
            searcher.search_dir(fd, root, file_filter(inp.glob, inp.type), stop, collector.allowed)
        else:  # an explicit file is searched regardless of filters, as rg does
            searcher.search_fd(fd, st, root, stop)
    finally:
        collector.capped_files = searcher.capped[0]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _format(inp: Any, collector: Collector) -> ToolResult:
    mode = inp.output_mode
    entries = collector.entries
    if mode == "files_with_matches":
        order = newest_first([p for p, _ in entries])
        text_of = dict(entries)
        entries = [(p, text_of[p]) for p in order]
    limited = inp.head_limit is not None and len(entries) > inp.head_limit
    shown = [line for _, line in (entries[: inp.head_limit] if inp.head_limit is not None else entries)]
    data: dict[str, object] = {
        "mode": mode,
        "numLines": len(shown),
        "appliedLimit": inp.head_limit if limited else None,
    }
    note = f"\n\n(Output limited to the first {inp.head_limit} entries by head_limit.)" if limited else ""
    if collector.capped_files:
        cap = MAX_FILE_BYTES // 2**20
        how = "skipped (multiline)" if inp.multiline else f"searched only in their first {cap} MB"
        note += f"\n\n({_plural(collector.capped_files, 'file')} larger than {cap} MB: {how}.)"
    if collector.escaped:
        note += "\n\n(Some paths or lines hold bytes that are not valid UTF-8; they are shown as \\xNN escapes.)"

    if mode == "files_with_matches":
        data.update(filenames=shown, numFiles=len(shown))
        if not shown:
            return ToolResult("No files found", data=data)
        head = f"Found {_plural(len(shown), 'file')}"
        return ToolResult(head + "\n" + "\n".join(shown) + note, data=data)
    if mode == "count":
        total = sum(int(e.rsplit(":", 1)[1]) for e in shown)
        data.update(numFiles=len(shown), numMatches=total)
        if not shown:
            return ToolResult("No matches found", data=data)
        summary = f"\n\nFound {_plural(total, 'total matching line')} across {_plural(len(shown), 'file')}."
        return ToolResult("\n".join(shown) + summary + note, data=data)
    data["content"] = "\n".join(shown)
    if not shown:
        return ToolResult("No matches found", data=data)
    return ToolResult("\n".join(shown) + note, data=data)


_RG_LINE = re.compile(rb"(\d+)([:-])")


def _rg_args(rg: str, inp: Any, target: str) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--color", "never", "--no-heading", "-0",
            "--max-columns", str(MAX_COLUMNS), "--max-columns-preview"]
    if inp.case_insensitive:
        args.append("-i")
    if inp.multiline:
        # a multiline search holds a whole file: the same cap as the fallback's
        args += ["-U", "--multiline-dotall", "--max-filesize", str(MAX_FILE_BYTES)]
    if inp.type:
        args += ["--type", inp.type]
    for g in split_globs(inp.glob):
        args += ["--glob", g]
    args += ["--glob", "!.git"]  # after the model's globs: of several matching globs rg obeys the last
    if inp.output_mode == "files_with_matches":
        args.append("--files-with-matches")
    else:
        # Deterministic order so head_limit cuts the same entries both back ends would; --sort
        # path also makes rg stream, so it can be stopped once head_limit is reached.
        args += ["--with-filename", "--sort", "path"]
        if inp.output_mode == "count":
            args.append("--count")
        else:
            args.append("-n")  # always: with -0 the number's `:`/`-` is what tells matches from context
            before, after = context_sizes(inp)
            if before:
                args += ["-B", str(before)]
            if after:
                args += ["-A", str(after)]
    return args + ["--", inp.pattern, target]


async def _ripgrep(rg: str, inp: Any, ctx: ToolContext, collector: Collector, *, root: str, real: str,
                   fd: int, is_dir: bool) -> None:
    from codeloop.tools.builtin.ripgrep import run_rg

    if not is_dir and b"\0" in os.pread(fd, 8192, 0):
        return  # binary, skipped as the fallback skips it
    numbered = inp.line_numbers is not False

    def handle(record: bytes) -> bool:
        if inp.output_mode != "files_with_matches" and record in (b"--", b"--\r"):
            return collector.add(None, "--")
        raw_path, _, rest = record.partition(b"\0")
        path = root if not is_dir else os.path.join(root, os.fsdecode(raw_path.removeprefix(b"./")))
        if inp.output_mode == "files_with_matches":
            return collector.add(path, "")
        if inp.output_mode == "count":
            return collector.add(path, ":" + rest.decode("ascii", errors="replace").strip())
        m = _RG_LINE.match(rest)
        if m is None:
            return True  # not a line rg prints for a match (a warning about a binary file)
        text = cut(os.fsdecode(rest[m.end():].rstrip(b"\r")))
        sep = m.group(2).decode()
        return collector.add(path, f"{sep}{m.group(1).decode()}{sep}{text}" if numbered else f"{sep}{text}")

    os.lseek(fd, 0, os.SEEK_SET)
    run = await run_rg(ctx, _rg_args(rg, inp, "." if is_dir else "-"), dir_fd=fd if is_dir else None,
                       dir_path=real, stdin_fd=None if is_dir else fd,
                       sep=b"\0" if inp.output_mode == "files_with_matches" else b"\n", handle=handle,
                       what="Search")
    if run.returncode not in (0, 1) and not run.stopped_early and not collector.received:
        if "regex" in run.stderr:
            raise ToolError(f"Invalid regex pattern {inp.pattern!r}: {run.stderr}")
        raise ToolError(f"ripgrep failed: {run.stderr or f'exit code {run.returncode}'}")
