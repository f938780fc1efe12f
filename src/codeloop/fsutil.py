"""Durable file replacement shared by everything that rewrites a whole file.

`atomic_write` writes beside the target, fsyncs, then renames over it, so a reader (or a crash)
never sees a half-written file; the folder is fsynced too so the rename itself survives a crash.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write(path: Path, data: bytes, *, mode: int | None = None, dir_mode: int = 0o777) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
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
