"""Durable file replacement shared by everything that rewrites a whole file.

`atomic_write` writes beside the target, fsyncs, then renames over it, so a reader (or a crash)
never sees a half-written file; the folder is fsynced too so the rename itself survives a crash.
`atomic_write_at` does the same inside an already opened directory (no path is resolved again).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def atomic_write(path: Path, data: bytes | Iterable[bytes], *, mode: int | None = None, dir_mode: int = 0o777,
                 durable: bool = True) -> None:
    """Replace `path` with data: bytes, or chunks written as they come (a large file is never whole
    in memory; an exception from the chunks leaves the old file). The temporary file is made
    0600 (`mode` sets the final bits). `durable=False` (a cache) skips the fsyncs."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in ([data] if isinstance(data, bytes) else data):
                f.write(chunk)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if not durable:
        return
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the data itself is already durable
    finally:
        os.close(dfd)


def atomic_write_json(path: Path, obj: Any, *, dir_mode: int = 0o777, **dumps: Any) -> None:
    text = json.dumps(obj, **dumps)
    atomic_write(path, (text if text.endswith("\n") else text + "\n").encode("utf-8"), dir_mode=dir_mode)


def atomic_write_at(dir_fd: int, name: str, data: bytes, *, mode: int) -> None:
    """`atomic_write` of `name` inside the open directory `dir_fd`.

    Temp file and rename are both relative to the fd, so a folder swapped for a symlink after the
    caller checked it is never followed, and the rename replaces the *name*: a symlink planted
    there meanwhile is replaced, not written through.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = f".{name[:200]}.{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the data itself is already durable
