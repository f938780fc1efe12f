"""The Write tool, plus the safe-write machinery Edit shares with it.

Owns: the read-before-write / changed-since-read check (`ensure_fresh_read`), atomic
replacement of a file that keeps its mode and follows symlinks (`atomic_write`), and the
unified diff the REPL renders (`unified_diff`).
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import os
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.read import resolve_file_path, snapshot

NOT_READ_MESSAGE = "File has not been read yet. Read it first before writing to it."
MODIFIED_MESSAGE = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)

DESCRIPTION = """\
Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. \
This tool will fail if you did not read the file first, or if it changed on disk since.
- The file_path parameter must be an absolute path. Missing parent directories are created.
- ALWAYS prefer editing existing files in the codebase with the Edit tool. NEVER write new files \
unless explicitly required.
- NEVER proactively create documentation files (*.md) or README files. Only create documentation \
files if explicitly requested by the User.
- Only use emojis if the user explicitly requests it. Avoid writing emojis to files unless asked."""


class WriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file_path: str = Field(
        description="The absolute path to the file to write (must be absolute, not relative)"
    )
    content: str = Field(description="The content to write to the file")


def ensure_fresh_read(path: Path, ctx: ToolContext) -> None:
    """Refuse to overwrite `path` unless the model has seen its current content."""
    record = ctx.read_files.get(str(path))
    if record is None:
        raise ToolError(NOT_READ_MESSAGE)
    st = path.stat()
    if st.st_mtime_ns == record.mtime_ns:
        return
    # A touched-but-identical file (git checkout, formatter no-op) is still what the model saw.
    if not record.partial and record.sha256 is not None:
        if hashlib.sha256(path.read_bytes()).hexdigest() == record.sha256:
            return
    raise ToolError(MODIFIED_MESSAGE)


_umask: int | None = None


def _current_umask() -> int:
    global _umask
    if _umask is None:
        # os.umask can only be read by setting it; do that once rather than on every write.
        _umask = os.umask(0o022)
        os.umask(_umask)
    return _umask


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so readers never see a half-written file.

    An existing file keeps its permission bits, and a symlink keeps pointing at the file it names.
    """
    from codeloop.fsutil import atomic_write as replace_file

    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    replace_file(target, data, mode=mode)


def unified_diff(old: str, new: str, path: Path) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=str(path),
            tofile=str(path),
            n=3,
        )
    )


class WriteTool(Tool):
    name: ClassVar[str] = "Write"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = WriteInput

    async def call(self, inp: WriteInput, ctx: ToolContext) -> ToolResult:
        path = resolve_file_path(ctx, inp.file_path, "Write")
        return await asyncio.to_thread(self._write, path, inp.content, ctx)

    def _write(self, path: Path, content: str, ctx: ToolContext) -> ToolResult:
        if path.is_dir():
            raise ToolError(f"{path} is a directory; Write needs a file path.")
        exists = path.exists()
        old = ""
        if exists:
            ensure_fresh_read(path, ctx)
            old = path.read_bytes().decode("utf-8", errors="replace")
        data = content.encode("utf-8")
        try:
            atomic_write(path, data)
        except OSError as e:
            raise ToolError(f"Cannot write {path}: {e.strerror or e}") from e
        ctx.read_files[str(path)] = snapshot(path, data, partial=False)

        kind = "update" if exists else "create"
        text = (
            f"The file {path} has been updated successfully."
            if exists
            else f"File created successfully at: {path}"
        )
        return ToolResult(
            text,
            data={
                "type": kind,
                "filePath": str(path),
                "content": content,
                "structuredPatch": unified_diff(old, content, path),
            },
        )
