"""Where a Bash call's shell reports the directory it ended in: small files reused from call to call.

Every call used to create a temporary file for the shell's EXIT trap to write `pwd -P` into and
delete it afterwards; on ext4 the allocation and the freeing cost about 2 ms a call, more than the
rest of a `true` command's set-up. A file is now taken from a per-process pool and given back:
the shell writes the directory and a NUL over the start of it (`1<>`: no truncation, no new
block), and codeloop clears the first byte before each use, so a shell whose trap never ran
(killed, `exec`-ed away) reports nothing rather than an earlier call's directory.

A pooled file is written to only while it is still the very file codeloop made (same device and
inode, a single link, a regular file of this user, opened without following a symlink): an
unsandboxed command that replaced it with a link to another file gets a fresh one, and codeloop
never writes through the link. A command moved to the background (Ctrl+B) keeps its file until
it ends, which then deletes it, as does a call whose shell was killed. Files left at exit are
deleted; a forked process starts its own pool.
"""

from __future__ import annotations

import atexit
import os
import stat
from contextlib import suppress
from pathlib import Path

_KEEP_BYTES = 65536   # more than any directory name; the read takes no more than this


class _Pool:
    """This process's report files: the spare ones per directory (as `take` was given it) and the
    (device, inode) of every file made."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.free: dict[str, list[str]] = {}
        self.made: dict[str, tuple[int, int]] = {}


_pool: _Pool | None = None


def _state() -> _Pool:
    global _pool
    if _pool is None or _pool.pid != os.getpid():   # first use, or a forked child: the parent's files are not ours
        _pool = _Pool()
        atexit.register(remove_all)
    return _pool


class CwdLease:
    """One call's report file: `path` for the shell, `read()` after it ended, `release()` at the end."""

    def __init__(self, where: str, path: str) -> None:
        self.where, self.path = where, path
        # Not reused once the shell may outlive the call (moved to the background, killed on a
        # timeout or abort): a late EXIT trap must not write into a later call's report.
        self.spent = False

    def read(self) -> str:
        """The directory the shell reported ("" when none)."""
        # Non-blocking and regular files only: a command that swapped the file for a FIFO must not
        # hang codeloop on the read.
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return ""
        try:
            data = os.read(fd, _KEEP_BYTES) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        except OSError:
            return ""
        finally:
            os.close(fd)
        return data.split(b"\0", 1)[0].decode(errors="replace").strip()

    def release(self) -> None:
        pool = _state()
        if self.spent or self.path not in pool.made:
            pool.made.pop(self.path, None)
            with suppress(OSError):
                os.unlink(self.path)
        else:
            pool.free.setdefault(self.where, []).append(self.path)


def take(directory: Path | None) -> CwdLease:
    """A cleared report file in `directory` (None: the temporary directory)."""
    pool = _state()
    where = os.fspath(directory) if directory is not None else _temp_dir()
    spare = pool.free.get(where) or []
    while spare:
        path = spare.pop()
        if _clear(path, pool.made[path]):
            return CwdLease(where, path)
        pool.made.pop(path, None)   # replaced or gone: forget it (and never write through it)
    fd, path = _create(where)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    pool.made[path] = (st.st_dev, st.st_ino)
    return CwdLease(where, path)


def _create(where: str) -> tuple[int, str]:
    # What tempfile.mkstemp does (a new name, O_EXCL, 0600), without importing tempfile, random and
    # shutil at the first Bash call.
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = os.path.join(where, f"codeloop-cwd-{os.urandom(6).hex()}.txt")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free name for a cwd report file in {where}")


def _temp_dir() -> str:
    for name in ("TMPDIR", "TEMP", "TMP"):
        if (value := os.environ.get(name)) and os.path.isdir(value):
            return value
    if os.path.isdir("/tmp"):
        return "/tmp"
    import tempfile

    return tempfile.gettempdir()


def _clear(path: str, identity: tuple[int, int]) -> bool:
    """Zero the first byte of the file made at `path`, if that is still the file there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if ((st.st_dev, st.st_ino) != identity or st.st_nlink != 1 or not stat.S_ISREG(st.st_mode)
                or st.st_uid != os.getuid()):
            return False
        if st.st_size > _KEEP_BYTES:   # a command filled it: do not hold that space for the session
            os.ftruncate(fd, 0)
        os.pwrite(fd, b"\0", 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def script_line(path: str) -> str:
    """The shell function the EXIT trap calls: the directory, a newline and a NUL, over the start."""
    import shlex

    return f"__codeloop_cwd() {{ {{ pwd -P; printf '\\0'; }} 1<> {shlex.quote(path)} 2>/dev/null; }}\n"


def remove_all() -> None:
    """Delete this process's report files (at exit; the CLI's fast exit calls it, as atexit does not run)."""
    if _pool is None or _pool.pid != os.getpid():
        return
    for path in _pool.made:
        with suppress(OSError):
            os.unlink(path)
    _pool.made.clear()
    _pool.free.clear()   # a spare not in `made` would be looked up there
