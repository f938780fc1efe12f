"""The Glob tool: find files by name pattern, newest first.

Also owns the glob dialect shared with Grep's fallback (`glob_to_regex`): `**` spans
directories, `*`/`?` stay within one path segment, `[...]` classes and `{a,b}` alternatives.
"""

from __future__ import annotations

import asyncio
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Iterator

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import Tool, ToolContext, ToolError, ToolResult

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


class GlobInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(description="The glob pattern to match files against")
    path: str | SkipJsonSchema[None] = Field(
        None,
        description="The directory to search in. If not specified, the current working directory "
        "will be used. IMPORTANT: Omit this field to use the default directory. DO NOT enter "
        '"undefined" or "null" - simply omit it for the default behavior. Must be a valid '
        "directory path if provided.",
    )


def _split_braces(body: str) -> list[str]:
    parts, depth, cur = [], 0, []
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


def walk_files(root: Path) -> Iterator[tuple[str, str]]:
    """(absolute path, path relative to root with `/`) for every file below root, sorted per dir."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            yield os.path.join(dirpath, name), prefix + name


def mtime_or_zero(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def newest_first(paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (-mtime_or_zero(p), p))


def split_static_prefix(pattern: str) -> tuple[str, str]:
    """Leading directories without glob magic, so the walk can start below them."""
    parts = pattern.split("/")
    static: list[str] = []
    while len(parts) > 1 and not _MAGIC.search(parts[0]):
        static.append(parts.pop(0))
    return "/".join(static), "/".join(parts)


def find_files(root: Path, pattern: str) -> list[str]:
    if os.path.isabs(pattern):
        prefix, pattern = split_static_prefix(pattern)
        root = Path(prefix or "/")
    else:
        prefix, pattern = split_static_prefix(pattern)
        root = root / prefix if prefix else root
    if not root.is_dir():
        return []
    rx = glob_to_regex(pattern)
    return [abs_path for abs_path, rel in walk_files(root) if rx.match(rel)]


class GlobTool(Tool):
    name: ClassVar[str] = "Glob"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = GlobInput
    interruptible: ClassVar[bool] = True  # read-only: cancelling it when the user types loses nothing

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True

    async def call(self, inp: GlobInput, ctx: ToolContext) -> ToolResult:
        root = Path(os.path.normpath(ctx.resolve(inp.path))) if inp.path else ctx.cwd
        if not root.exists():
            raise ToolError(f"Directory does not exist: {root}. Current working directory: {ctx.cwd}")
        if not root.is_dir():
            raise ToolError(f"Path is not a directory: {root}")
        matches = await asyncio.to_thread(lambda: newest_first(find_files(root, inp.pattern)))
        if ctx.read_denied is not None:  # files a Read deny rule covers are not listed either
            matches = [m for m in matches if not ctx.read_denied(Path(m))]
        truncated = len(matches) > MAX_RESULTS
        shown = matches[:MAX_RESULTS]
        data = {"filenames": shown, "numFiles": len(shown), "truncated": truncated}
        if not shown:
            return ToolResult("No files found", data=data)
        text = "\n".join(shown)
        if truncated:
            text += "\n" + TRUNCATED_NOTE
        return ToolResult(text, data=data)
