"""The Grep tool: regex search over file contents, via ripgrep or a pure-Python fallback.

Owns both search back ends and the one formatter they feed, so the model sees the same shape
either way: `path` lines (files_with_matches, newest first), `path:line:text` with `path-line-text`
context and `--` group separators (content), `path:count` (count). The fallback does not read
.gitignore files; ripgrep does.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import re
import shutil
from pathlib import Path
from typing import Callable, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.glob import glob_to_regex, newest_first, walk_files
from codeloop.tools.builtin.read import looks_binary

OutputMode = Literal["content", "files_with_matches", "count"]

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


class GrepInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(description="The regular expression pattern to search for in file contents")
    path: str | SkipJsonSchema[None] = Field(
        None, description="File or directory to search in. Defaults to the current working directory."
    )
    glob: str | SkipJsonSchema[None] = Field(
        None,
        description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}"); several may be '
        "separated by spaces or commas, and a leading ! excludes",
    )
    type: str | SkipJsonSchema[None] = Field(
        None,
        description="File type to search (rg --type), e.g. js, py, rust, go, java. More efficient "
        "than glob for standard file types.",
    )
    output_mode: OutputMode = Field(
        "files_with_matches",
        description='Output mode: "content" shows matching lines (supports -A/-B/-C context, -n '
        'line numbers, head_limit), "files_with_matches" shows file paths (supports head_limit), '
        '"count" shows match counts (supports head_limit). Defaults to "files_with_matches".',
    )
    case_insensitive: bool | SkipJsonSchema[None] = Field(
        None, alias="-i", description="Case insensitive search (rg -i)"
    )
    line_numbers: bool | SkipJsonSchema[None] = Field(
        None,
        alias="-n",
        description='Show line numbers in output (rg -n). Requires output_mode: "content". '
        "Defaults to true.",
    )
    after: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        alias="-A",
        description='Number of lines to show after each match (rg -A). Requires output_mode: "content".',
    )
    before: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        alias="-B",
        description='Number of lines to show before each match (rg -B). Requires output_mode: "content".',
    )
    context: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        alias="-C",
        description="Number of lines to show before and after each match (rg -C). Requires "
        'output_mode: "content".',
    )
    head_limit: PositiveInt | SkipJsonSchema[None] = Field(
        None,
        description="Limit output to the first N lines/entries, like `| head -N`. Applies to every "
        "output mode. Defaults to no limit.",
    )
    multiline: bool | SkipJsonSchema[None] = Field(
        None,
        description="Enable multiline mode where . matches newlines and patterns can span lines "
        "(rg -U --multiline-dotall). Default: false.",
    )


def split_globs(glob: str | None) -> list[str]:
    """Several globs may come in one string; commas inside {a,b} belong to the glob."""
    out: list[str] = []
    for part in (glob or "").split():
        out.extend([part] if "{" in part else [p for p in part.split(",") if p])
    return out


def context_sizes(inp: GrepInput) -> tuple[int, int]:
    """(before, after); explicit -A/-B win over -C."""
    before = inp.before if inp.before is not None else (inp.context or 0)
    after = inp.after if inp.after is not None else (inp.context or 0)
    return before, after


class GrepTool(Tool):
    name: ClassVar[str] = "Grep"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = GrepInput
    interruptible: ClassVar[bool] = True  # read-only: cancelling it when the user types loses nothing

    def __init__(self, *, use_ripgrep: bool | None = None) -> None:
        # None = use rg when it's on PATH; False forces the Python fallback (tests, odd hosts).
        self.use_ripgrep = use_ripgrep

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True

    async def call(self, inp: GrepInput, ctx: ToolContext) -> ToolResult:
        root = Path(os.path.normpath(ctx.resolve(inp.path))) if inp.path else ctx.cwd
        if not root.exists():
            raise ToolError(f"Path does not exist: {root}. Current working directory: {ctx.cwd}")
        rg = shutil.which("rg") if self.use_ripgrep is not False else None
        if rg:
            entries = await _ripgrep(rg, inp, root, ctx)
        else:
            entries = await asyncio.to_thread(_python_grep, inp, root)
        if ctx.read_denied is not None:
            entries = await asyncio.to_thread(_drop_denied, entries, root, ctx.read_denied)
        return _format(inp, entries)


def _drop_denied(entries: list[str], root: Path, denied: Callable[[Path], bool]) -> list[str]:
    """Remove every output line that comes from a file a Read deny rule covers, so searching a
    parent folder cannot reveal what reading the file directly would not."""
    files = [Path(root)] if root.is_file() else [Path(p) for p, _ in walk_files(root)]
    blocked = {str(f) for f in files if denied(f)}
    if not blocked:
        return entries
    # Entries are `path`, `path:count`, `path:N:text` or context lines `path-N-text`.
    return [e for e in entries if not any(e == b or e.startswith((b + ":", b + "-")) for b in blocked)]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _format(inp: GrepInput, entries: list[str]) -> ToolResult:
    mode = inp.output_mode
    if mode == "files_with_matches":
        entries = newest_first(entries)
    limited = inp.head_limit is not None and len(entries) > inp.head_limit
    shown = entries[: inp.head_limit] if inp.head_limit is not None else entries
    data: dict[str, object] = {
        "mode": mode,
        "numLines": len(shown),
        "appliedLimit": inp.head_limit if limited else None,
    }
    note = f"\n\n(Output limited to the first {inp.head_limit} entries by head_limit.)" if limited else ""

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


async def _ripgrep(rg: str, inp: GrepInput, root: Path, ctx: ToolContext) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--glob", "!.git", "--color", "never", "--no-heading"]
    if inp.case_insensitive:
        args.append("-i")
    if inp.multiline:
        args += ["-U", "--multiline-dotall"]
    if inp.type:
        args += ["--type", inp.type]
    for g in split_globs(inp.glob):
        args += ["--glob", g]
    if inp.output_mode == "files_with_matches":
        args.append("--files-with-matches")
    else:
        # Deterministic order so head_limit cuts the same entries both back ends would.
        args += ["--with-filename", "--sort", "path"]
        if inp.output_mode == "count":
            args.append("--count")
        else:
            if inp.line_numbers is not False:
                args.append("-n")
            before, after = context_sizes(inp)
            if before:
                args += ["-B", str(before)]
            if after:
                args += ["-A", str(after)]
    args += ["--", inp.pattern, str(root)]

    proc = await asyncio.create_subprocess_exec(
        *args,
        # rg matches globs containing `/` against paths relative to its cwd, so anchor them at root.
        cwd=root if root.is_dir() else root.parent,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    run = asyncio.ensure_future(proc.communicate())
    abort = asyncio.ensure_future(ctx.abort.wait())
    try:
        await asyncio.wait({run, abort}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        proc.kill()
        raise
    finally:
        abort.cancel()
    if not run.done():
        proc.kill()
        await run
        raise ToolError("Search was aborted")
    out_b, err_b = run.result()
    out = out_b.decode("utf-8", errors="replace")
    if proc.returncode not in (0, 1) and not out.strip():
        err = err_b.decode("utf-8", errors="replace").strip()
        if "regex" in err:
            raise ToolError(f"Invalid regex pattern {inp.pattern!r}: {err}")
        raise ToolError(f"ripgrep failed: {err or f'exit code {proc.returncode}'}")
    return [line.rstrip("\r") for line in out.split("\n") if line]


def _compile(inp: GrepInput) -> re.Pattern[str]:
    flags = re.IGNORECASE if inp.case_insensitive else 0
    if inp.multiline:
        flags |= re.DOTALL | re.MULTILINE
    try:
        return re.compile(inp.pattern, flags)
    except re.error as e:
        raise ToolError(f"Invalid regex pattern {inp.pattern!r}: {e}") from e


def _file_filter(inp: GrepInput) -> Callable[[str], bool]:
    includes, excludes = [], []
    for g in split_globs(inp.glob):
        (excludes if g.startswith("!") else includes).append(g.lstrip("!"))
    if inp.type:
        if inp.type not in FILE_TYPES:
            known = ", ".join(sorted(FILE_TYPES))
            raise ToolError(f"Unknown file type {inp.type!r}; known types: {known}")
        type_globs = [glob_to_regex(g) for g in FILE_TYPES[inp.type]]
    else:
        type_globs = None

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


def _candidate_files(inp: GrepInput, root: Path) -> list[str]:
    if root.is_file():
        return [str(root)]  # an explicit file is searched regardless of filters, as rg does
    keep = _file_filter(inp)
    # Component-wise order is what `rg --sort path` produces ("b/x" before "b-c").
    return sorted((path for path, rel in walk_files(root) if keep(rel)), key=lambda p: p.split(os.sep))


def _matching_lines(rx: re.Pattern[str], text: str, lines: list[str], multiline: bool) -> list[int]:
    """0-based indexes of lines that contain (part of) a match."""
    if not multiline:
        return [i for i, line in enumerate(lines) if rx.search(line)]
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


def _python_grep(inp: GrepInput, root: Path) -> list[str]:
    rx = _compile(inp)
    before, after = context_sizes(inp)
    numbered = inp.line_numbers is not False
    out: list[str] = []
    last_printed: tuple[str, int] | None = None  # (file, line index) of the last emitted line
    for path in _candidate_files(inp, root):
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if looks_binary(raw):
            continue
        text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        hits = _matching_lines(rx, text, lines, bool(inp.multiline))
        if not hits:
            continue
        if inp.output_mode == "files_with_matches":
            out.append(path)
            continue
        if inp.output_mode == "count":
            out.append(f"{path}:{len(hits)}")
            continue
        hit_set = set(hits)
        wanted: list[int] = []
        for i in hits:
            wanted.extend(range(max(i - before, 0), min(i + after, len(lines) - 1) + 1))
        for i in sorted(set(wanted)):
            if (before or after) and last_printed is not None and last_printed != (path, i - 1):
                out.append("--")
            sep = ":" if i in hit_set else "-"
            num = f"{i + 1}{sep}" if numbered else ""
            out.append(f"{path}{sep}{num}{lines[i]}")
            last_printed = (path, i)
    return out
