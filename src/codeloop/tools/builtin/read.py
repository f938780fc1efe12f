"""The Read tool: numbered text lines, images as content blocks, and the read record.

The file is opened through `fileio.open_checked` (no symlink followed after the permission
check, no device/FIFO, no hard link to a denied file) and read in a cancellable daemon thread;
text is streamed by `linewindow`, so only the window shown is ever held in memory.

Also owns the helpers the editing tools share with it: how a tool argument becomes a path
(`resolve_file_path`) and what a read remembers about a file (`snapshot`), so Write and Edit
can tell whether the file changed since the model last saw it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from pathlib import Path
from typing import Any, ClassVar

from codeloop.tools.base import FileReadRecord, LazyModel, Tool, ToolContext, ToolError, ToolResult, UNBOUNDED
from codeloop.tools.builtin.fileio import Opened, checked_paths, open_checked, run_cancellable
from codeloop.tools.builtin.linewindow import (
    MAX_LINE_CHARS,
    continuation_note,
    os_read_capped,
    read_window,
    undecodable_note,
)

DEFAULT_LIMIT = 2000
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


def resolve_file_path(ctx: ToolContext, file_path: str, tool: str = "Read") -> Path:
    """The absolute, `..`-free path used as the read_files key, after the path guard.

    Symlinks are deliberately not resolved here: the key must match what the model passes.
    Tools doing I/O use `fileio.checked_paths`, which also returns the realpath to open.
    """
    path = Path(os.path.normpath(ctx.resolve(file_path)))
    if ctx.path_guard is not None:
        ctx.path_guard(tool, path)
    return path


def record(st: os.stat_result, digest: str | None, *, partial: bool) -> FileReadRecord:
    """What a tool saw of a file: its stat (from the fd it used) and, when seen whole, its hash."""
    return FileReadRecord(mtime_ns=st.st_mtime_ns, size=st.st_size,
                          sha256=None if partial else digest, partial=partial)


def snapshot(path: Path, data: bytes | None, *, partial: bool) -> FileReadRecord:
    """What we know about `path` right now; `data` is the whole content when it was seen whole."""
    digest = hashlib.sha256(data).hexdigest() if data is not None and not partial else None
    return record(path.stat(), digest, partial=partial)


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
    input_model: ClassVar[Any] = LazyModel("codeloop.tools.builtin.read_input", "ReadInput")
    interruptible: ClassVar[bool] = True  # read-only: cancelling it when the user types loses nothing

    def is_read_only(self, inp: Any) -> bool:
        return True

    def is_concurrency_safe(self, inp: Any) -> bool:
        return True

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        path, real = checked_paths(ctx, inp.file_path, "Read")
        if path.suffix.lower() in (".pdf", ".ipynb"):  # PDFs, notebooks: read_formats.py
            return await run_cancellable(ctx, lambda stop: self._read_document(path, real, inp, ctx), "Read")
        return await run_cancellable(ctx, lambda stop: self._read(path, real, inp, ctx, stop), "Read")

    def _read_document(self, path: Path, real: str, inp: Any, ctx: ToolContext) -> ToolResult:
        from codeloop.tools.builtin.read_formats import read_document

        data = self._document_bytes(path, real, ctx)
        result = read_document(path, data, inp.pages, ctx)
        ctx.read_files[str(path)] = snapshot(path, data, partial=inp.pages is not None)
        return result

    @staticmethod
    def _document_bytes(path: Path, real: str, ctx: ToolContext) -> bytes:
        """A PDF's or notebook's bytes from the checked, no-follow descriptor (bounded by the PDF cap)."""
        from codeloop.tools.builtin.read_pdf import MAX_PDF_BYTES

        opened = open_checked(ctx, "Read", path, real)
        try:
            if opened.st.st_size > MAX_PDF_BYTES:
                kind = "PDF" if path.suffix.lower() == ".pdf" else "Notebook"
                raise ToolError(f"{kind} too large to read ({opened.st.st_size // (1024 * 1024)} MB; the limit "
                                f"is {MAX_PDF_BYTES // (1024 * 1024)} MB).")
            return os.pread(opened.fd, opened.st.st_size, 0)
        except OSError as e:
            raise ToolError(f"Cannot read {path}: {e.strerror or e}") from e
        finally:
            os.close(opened.fd)

    def _read(self, path: Path, real: str, inp: Any, ctx: ToolContext, stop: threading.Event) -> ToolResult:
        opened = open_checked(ctx, "Read", path, real)
        try:
            media_type = IMAGE_TYPES.get(path.suffix.lower())
            if media_type is not None:
                return self._read_image(path, opened, media_type, ctx)
            return self._read_text(path, opened, inp, ctx, stop)
        finally:
            os.close(opened.fd)

    def _read_text(self, path: Path, opened: Opened, inp: Any, ctx: ToolContext,
                   stop: threading.Event) -> ToolResult:
        if looks_binary(os.pread(opened.fd, BINARY_SNIFF_BYTES, 0)):
            raise ToolError(
                f"Cannot read {path}: it appears to be a binary file. "
                "Use Bash with a suitable tool (e.g. xxd, file) to inspect it."
            )
        start = max(inp.offset or 1, 1)
        try:
            w = read_window(opened.fd, opened.st.st_size, start, inp.limit or DEFAULT_LIMIT, stop)
        except OSError as e:
            raise ToolError(f"Cannot read {path}: {e.strerror or e}") from e
        end = start - 1 + len(w.lines)
        partial = start > 1 or not w.whole or (w.total is not None and end < w.total)
        ctx.read_files[str(path)] = record(opened.st, w.digest, partial=partial)

        data_out: dict[str, Any] = {
            "filePath": str(path),
            "numLines": len(w.lines),
            "startLine": start,
            "totalLines": w.total,
        }
        if w.total == 0:
            note = "<system-reminder>Warning: the file exists but is empty.</system-reminder>"
            return ToolResult(note, data=data_out)
        if not w.lines:
            note = (
                f"<system-reminder>Warning: the file exists but is shorter than the provided offset "
                f"({start}). The file has {w.total} lines.</system-reminder>"
            )
            return ToolResult(note, data=data_out)
        body = number_lines(w.lines, start)
        body += continuation_note(w, start, opened.st.st_size) + undecodable_note(w)
        return ToolResult(body, data=data_out)

    def _read_image(self, path: Path, opened: Opened, media_type: str, ctx: ToolContext) -> ToolResult:
        size = opened.st.st_size
        if size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"Image {path} is {size} bytes, over the {MAX_IMAGE_BYTES // (1024 * 1024)} MB "
                "limit for images; resize or compress it first (e.g. with Bash)."
            )
        data = os_read_capped(opened.fd, MAX_IMAGE_BYTES + 1)
        ctx.read_files[str(path)] = record(opened.st, hashlib.sha256(data).hexdigest(), partial=False)
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
