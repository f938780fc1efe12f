"""The Read tool: numbered text lines, images as content blocks, and the read record.

Also owns the helpers the editing tools share with it: how a tool argument becomes a path
(`resolve_file_path`) and what a read remembers about a file (`snapshot`), so Write and Edit
can tell whether the file changed since the model last saw it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import UNBOUNDED, FileReadRecord, Tool, ToolContext, ToolError, ToolResult

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

DESCRIPTION = """\
Reads a file from the local filesystem. You can access any file directly by using this tool.
Assume this tool is able to read all files on the machine. If the user provides a path to a file, \
assume that path is valid. It is okay to read a file that does not exist; an error will be returned.

Usage:
- The file_path parameter should be an absolute path, not a relative path
- By default, it reads up to 2000 lines starting from the beginning of the file
- You can optionally specify a line offset and limit (especially handy for long files), but it's \
recommended to read the whole file by not providing these parameters
- Any lines longer than 2000 characters will be truncated
- Results are returned using cat -n format, with line numbers starting at 1
- This tool can read images (PNG, JPG, GIF, WEBP); the contents are presented visually
- This tool can read PDF files (.pdf). For large PDFs (more than 10 pages), you MUST provide the pages \
parameter to read specific page ranges (e.g., pages: "1-5"). Maximum 20 pages per request.
- This tool can read Jupyter notebooks (.ipynb files) and returns all cells with their outputs
- This tool can only read files, not directories. To list a directory, use ls via the Bash tool \
or the Glob tool
- You can call multiple tools in a single response. It is always better to speculatively read \
multiple potentially useful files in parallel
- You must Read a file before you Edit or overwrite it with Write"""


class ReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file_path: str = Field(description="The absolute path to the file to read")
    offset: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        description="The line number to start reading from (1-based). Only provide if the file is "
        "too large to read at once",
    )
    limit: PositiveInt | SkipJsonSchema[None] = Field(
        None,
        description="The number of lines to read. Only provide if the file is too large to read at once.",
    )
    pages: str | SkipJsonSchema[None] = Field(
        None, description="Page range for PDF files (e.g., \"1-5\", \"3\", \"10-20\"). Only applicable to PDF "
        "files. Maximum 20 pages per request.")


def resolve_file_path(ctx: ToolContext, file_path: str, tool: str = "Read") -> Path:
    """The absolute, `..`-free path used both for I/O and as the read_files key.

    Symlinks are deliberately not resolved here: the key must match what the model passes. The
    permission guard is asked again right before the I/O, so a symlink swapped in after the
    permission check (pointing into a denied place) is caught here.
    """
    path = Path(os.path.normpath(ctx.resolve(file_path)))
    if ctx.path_guard is not None:
        ctx.path_guard(tool, path)
    return path


def snapshot(path: Path, data: bytes | None, *, partial: bool) -> FileReadRecord:
    """What we know about `path` right now; `data` is the whole content when it was seen whole."""
    st = path.stat()
    digest = hashlib.sha256(data).hexdigest() if data is not None and not partial else None
    return FileReadRecord(mtime_ns=st.st_mtime_ns, size=st.st_size, sha256=digest, partial=partial)


def missing_file_error(path: Path, ctx: ToolContext) -> ToolError:
    return ToolError(f"File does not exist: {path}. Current working directory: {ctx.cwd}")


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def split_lines(text: str) -> list[str]:
    """Lines as `cat` would show them: no terminators, no phantom line after a final newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def number_lines(lines: list[str], start: int) -> str:
    out = []
    for n, line in enumerate(lines, start):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + "... [line truncated]"
        out.append(f"{n:>6}\t{line}")
    return "\n".join(out)


class ReadTool(Tool):
    # Read bounds its own output (lines × width); persisting it to a file to be Read again would loop.
    max_result_chars = UNBOUNDED
    name: ClassVar[str] = "Read"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = ReadInput

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True

    async def call(self, inp: ReadInput, ctx: ToolContext) -> ToolResult:
        path = resolve_file_path(ctx, inp.file_path)
        if path.suffix.lower() in (".pdf", ".ipynb") and path.is_file():  # PDFs, notebooks: read_formats.py
            from codeloop.tools.builtin.read_formats import read_document
            return await asyncio.to_thread(read_document, path, inp.pages, ctx)
        return await asyncio.to_thread(self._read, path, inp, ctx)

    def _read(self, path: Path, inp: ReadInput, ctx: ToolContext) -> ToolResult:
        if path.is_dir():
            raise ToolError(
                f"{path} is a directory, not a file; use Bash ls or Glob to list its contents."
            )
        if not path.exists():
            raise missing_file_error(path, ctx)
        if not path.is_file():
            raise ToolError(f"{path} is not a regular file (device, FIFO or socket); cannot read it.")
        media_type = IMAGE_TYPES.get(path.suffix.lower())
        if media_type is not None:
            return self._read_image(path, media_type, ctx)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ToolError(f"Cannot read {path}: {e.strerror or e}") from e
        if looks_binary(data):
            raise ToolError(
                f"Cannot read {path}: it appears to be a binary file. "
                "Use Bash with a suitable tool (e.g. xxd, file) to inspect it."
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ToolError(
                f"Cannot read {path}: it is not valid UTF-8 text (binary file?). "
                "Use Bash with a suitable tool (e.g. xxd, iconv) to inspect it."
            ) from e

        lines = split_lines(text)
        total = len(lines)
        start = max(inp.offset or 1, 1)
        limit = inp.limit or DEFAULT_LIMIT
        shown = lines[start - 1 : start - 1 + limit]
        end = start - 1 + len(shown)
        partial = start > 1 or end < total
        ctx.read_files[str(path)] = snapshot(path, data, partial=partial)

        data_out: dict[str, Any] = {
            "filePath": str(path),
            "numLines": len(shown),
            "startLine": start,
            "totalLines": total,
        }
        if total == 0:
            note = "<system-reminder>Warning: the file exists but is empty.</system-reminder>"
            return ToolResult(note, data=data_out)
        if not shown:
            note = (
                f"<system-reminder>Warning: the file exists but is shorter than the provided offset "
                f"({start}). The file has {total} lines.</system-reminder>"
            )
            return ToolResult(note, data=data_out)
        body = number_lines(shown, start)
        if end < total:
            body += (
                f"\n\n(Showing lines {start}-{end} of {total}. {total - end} more lines remain; "
                f"call Read with offset={end + 1} to continue.)"
            )
        return ToolResult(body, data=data_out)

    def _read_image(self, path: Path, media_type: str, ctx: ToolContext) -> ToolResult:
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"Image {path} is {size} bytes, over the {MAX_IMAGE_BYTES // (1024 * 1024)} MB "
                "limit for images; resize or compress it first (e.g. with Bash)."
            )
        data = path.read_bytes()
        ctx.read_files[str(path)] = snapshot(path, data, partial=False)
        block = {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": media_type,
                "data": base64.b64encode(data).decode("ascii"),
            },
        }
        return ToolResult(
            [block],
            data={"type": "image", "filePath": str(path), "mediaType": media_type, "originalSize": size},
        )
