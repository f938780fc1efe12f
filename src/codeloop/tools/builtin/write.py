"""The Write tool, plus the safe-write machinery Edit shares with it.

Owns: the read-before-write / changed-since-read check (`ensure_fresh_read`), the mode a
replaced file keeps (`new_file_mode`), and the unified diff the REPL renders (`unified_diff`).
The write itself goes through `fileio.WriteTarget`: the symlink-free realpath is replaced
atomically inside its folder opened without following links (a symlink the model names keeps
pointing at the file it names; one swapped in after the check is replaced, never written through).
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from codeloop.tools.base import LazyModel, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.fileio import WriteTarget, checked_paths
from codeloop.tools.builtin.read import record

NOT_READ_MESSAGE = "File has not been read yet. Read it first before writing to it."
MODIFIED_MESSAGE = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)

MAX_DIFF_BYTES = 8 * 1024 * 1024  # an overwritten file larger than this gets no diff

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


def ensure_fresh_read(path: Path, ctx: ToolContext, st: os.stat_result | None = None,
                      current: Callable[[], bytes] | None = None) -> None:
    """Refuse to overwrite `path` unless the model has seen its current content.

    `st` and `current` come from the fd the tool opened (so the file judged is the file
    replaced); without them the path is stat'ed and read.
    """
    record = ctx.read_files.get(str(path))
    if record is None:
        raise ToolError(NOT_READ_MESSAGE)
    st = st if st is not None else path.stat()
    if st.st_mtime_ns == record.mtime_ns:
        return
    # A touched-but-identical file (git checkout, formatter no-op) is still what the model saw.
    if not record.partial and record.sha256 is not None:
        data = current() if current is not None else path.read_bytes()
        if hashlib.sha256(data).hexdigest() == record.sha256:
            return
    raise ToolError(MODIFIED_MESSAGE)


def new_file_mode(existing: os.stat_result | None) -> int:
    """An existing file keeps its permission bits; a new one gets 0666 less the umask."""
    return existing.st_mode & 0o7777 if existing is not None else 0o666 & ~_current_umask()


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
    input_model: ClassVar[Any] = LazyModel("codeloop.tools.builtin.write_input", "WriteInput")

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        path, real = checked_paths(ctx, inp.file_path, "Write")
        # A write is short and touches only a regular file; it is let finish rather than abandoned.
        return await asyncio.to_thread(self._write, path, real, inp.content, ctx)

    def _write(self, path: Path, real: str, content: str, ctx: ToolContext) -> ToolResult:
        target = WriteTarget(ctx, "Write", path, real)
        data = content.encode("utf-8")
        try:
            existing = target.existing
            old: str | None = ""
            if existing is not None:
                ensure_fresh_read(path, ctx, existing.st, target.read_existing)
                # the diff is for display; a huge old file is not loaded just to show it
                old = (target.read_existing().decode("utf-8", errors="replace")
                       if existing.st.st_size <= MAX_DIFF_BYTES else None)
            new_st = target.replace(data, new_file_mode(existing.st if existing else None))
        finally:
            target.close()
        ctx.read_files[str(path)] = record(new_st, hashlib.sha256(data).hexdigest(), partial=False)

        exists = existing is not None
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
                "structuredPatch": unified_diff(old, content, path) if old is not None else "",
            },
        )
