"""How the file tools touch the disk: checked no-follow opens and cancellable blocking work.

Owns the check-then-open recipe every file tool follows (Read, Write, Edit, Grep, Glob):
resolve the realpath *before* the permission guard is asked (the check point), guard both the
path as written and that realpath, then open the realpath with no symlink followed at any
component — so a file swapped for a link after the check fails to open instead of reaching
something the check never saw. The opened fd is fstat'ed: devices, FIFOs and sockets are
refused, and a file with more than one link is refused when its inode is a denied file's.

Also owns `run_cancellable`: blocking I/O runs in a *daemon* thread that polls a stop flag, so
an abort or a task cancellation returns at once and no thread can keep the process alive.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from codeloop.permissions.paths import open_dir_no_symlinks, open_no_symlinks, resolve_for_open
from codeloop.tools.base import ToolContext, ToolError

T = TypeVar("T")
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
# errno values an open gives when a component turned into a symlink (FreeBSD says EMLINK)
_LINK_ERRNOS = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}


class Stopped(Exception):
    """Raised inside worker threads when their call was aborted or cancelled."""


def device_path(*paths: str) -> bool:
    """Whether a path lies under /dev, where files are devices (endless, blocking) by nature."""
    return any(p == "/dev" or p.startswith("/dev/") for p in paths)


def checked_paths(ctx: ToolContext, file_path: str, tool: str) -> tuple[Path, str]:
    """(absolute `..`-free path as written, its realpath) after the permission guard.

    The realpath is taken *before* the guard runs: whatever is swapped in at or after the check
    is then met by the no-follow open of this realpath, and refused.
    """
    path = Path(os.path.normpath(ctx.resolve(file_path)))
    try:
        real = resolve_for_open(str(path))
    except ValueError as e:
        raise ToolError(f"Invalid path {file_path!r}: {e}") from e
    if device_path(str(path), real):
        raise ToolError(f"{path} is a device path (/dev); {tool} works only on regular files.")
    if ctx.path_guard is not None:
        ctx.path_guard(tool, path)
        if real != str(path):
            ctx.path_guard(tool, Path(real))
    return path, real


def swapped_error(path: Path | str, tool: str) -> ToolError:
    return ToolError(f"{tool} refused {path}: it changed while being opened (a component is now a "
                     "symbolic link), so it is no longer the file that was checked.")


def became_link(e: OSError, real: str) -> bool:
    """Whether a failed no-follow open of `real` means a component is now a symlink (ENOTDIR
    also comes from a plain file used as a folder: then the realpath is unchanged)."""
    if e.errno not in _LINK_ERRNOS:
        return False
    return e.errno != errno.ENOTDIR or os.path.realpath(real) != real


def open_failure(e: OSError, path: Path | str, tool: str, real: str) -> ToolError:
    """The model-facing error for a failed no-follow open of `real`."""
    if became_link(e, real):
        return swapped_error(path, tool)
    if e.errno == errno.ENXIO:  # what opening a socket (or a device without a driver) says
        return ToolError(f"{path} is not a regular file (device, FIFO or socket); {tool} cannot open it.")
    return ToolError(f"Cannot open {path}: {e.strerror or e}")


class InodeGuard:
    """The hard-link check for one tool call; the denied inodes are listed once, on demand."""

    def __init__(self, ctx: ToolContext, tool: str) -> None:
        self._lister = ctx.denied_inodes
        self._tool = tool
        self._inodes: frozenset[tuple[int, int]] | None = None
        self._listed = False

    def denied(self, st: os.stat_result) -> bool:
        if st.st_nlink <= 1 or self._lister is None:
            return False
        if not self._listed:
            try:
                self._inodes = self._lister(self._tool)
            except OSError:
                self._inodes = None  # could not list them: fail closed for multi-link files
            self._listed = True
        return self._inodes is None or (st.st_dev, st.st_ino) in self._inodes

    def check(self, st: os.stat_result, path: Path | str) -> None:
        if self.denied(st):
            why = ("its inode is a denied file's (a hard link)" if self._inodes is not None
                   else "it has several hard links and the denied files are too many to compare")
            raise ToolError(f"Permission to use {self._tool} on {path} has been denied: {why}.")


@dataclass
class Opened:
    """A file opened for reading: its descriptor and stat."""
    fd: int
    st: os.stat_result


def open_checked(ctx: ToolContext, tool: str, path: Path, real: str) -> Opened:
    """Open `real` (from `checked_paths`) for reading; errors name `path`, as the model wrote it."""
    try:
        fd = open_no_symlinks(real, READ_FLAGS)
    except FileNotFoundError as e:
        raise ToolError(f"File does not exist: {path}. Current working directory: {ctx.cwd}") from e
    except OSError as e:
        raise open_failure(e, path, tool, real) from e
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{path} is a directory, not a file; use Bash ls or Glob to list its contents.")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{path} is not a regular file (device, FIFO or socket); cannot read it.")
        InodeGuard(ctx, tool).check(st, path)
        return Opened(fd, st)
    except BaseException:
        os.close(fd)
        raise


class WriteTarget:
    """The folder (opened no-follow) and name a Write/Edit replaces, plus what is there now."""

    def __init__(self, ctx: ToolContext, tool: str, path: Path, real: str) -> None:
        self.path, self.tool, self.real = path, tool, real
        self.before_write = ctx.before_write
        self.parent, self.name = os.path.split(real)
        self.dir_fd: int | None = None
        self.existing: Opened | None = None
        try:
            self._open(ctx)
        except BaseException:
            self.close()
            raise

    def _open(self, ctx: ToolContext) -> None:
        path, tool = self.path, self.tool
        try:
            self.dir_fd = open_dir_no_symlinks(self.parent)
        except FileNotFoundError:
            return  # a new file in a new folder: the folders are made at replace()
        except OSError as e:
            self._raise(e)
        try:
            fd = os.open(self.name, READ_FLAGS | getattr(os, "O_NOFOLLOW", 0), dir_fd=self.dir_fd)
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno == errno.EISDIR:
                raise ToolError(f"{path} is a directory, not a file.") from e
            self._raise(e)
        st = os.fstat(fd)
        self.existing = Opened(fd, st)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{path} is a directory, not a file.")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{path} is not a regular file (device, FIFO or socket); {tool} refuses it.")
        InodeGuard(ctx, tool).check(st, path)

    def _raise(self, e: OSError) -> None:
        if became_link(e, self.real):
            raise swapped_error(self.path, self.tool) from e
        raise ToolError(f"Cannot write {self.path}: {e.strerror or e}") from e

    def read_existing(self) -> bytes:
        assert self.existing is not None
        os.lseek(self.existing.fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(self.existing.fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)

    def replace(self, data: bytes, mode: int) -> os.stat_result:
        """Atomically put `data` at the name; returns the new file's stat."""
        from codeloop.fsutil import atomic_write_at

        if self.before_write is not None:  # a checkpoint of what is there now (for /rewind)
            self.before_write(self.path, self.read_existing() if self.existing is not None else None)
        try:
            if self.dir_fd is None:
                self.dir_fd = open_dir_no_symlinks(self.parent, create=True)
            atomic_write_at(self.dir_fd, self.name, data, mode=mode)
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except OSError as e:
            self._raise(e)
            raise  # unreachable: _raise always raises

    def close(self) -> None:
        for fd in (self.existing.fd if self.existing else None, self.dir_fd):
            if fd is not None:
                os.close(fd)
        self.existing, self.dir_fd = None, None


def with_own_fd(fd: int, fn: Callable[[int, threading.Event], T]) -> Callable[[threading.Event], T]:
    """`fn` for `run_cancellable`, working on its own duplicate of `fd`, closed when *it* ends.

    An aborted call returns (and closes its fd) while the thread may still be reading; were the
    thread using that fd, the number could be reused by another open meanwhile and read from.
    """
    own = os.dup(fd)

    def work(stop: threading.Event) -> T:
        try:
            return fn(own, stop)
        finally:
            os.close(own)
    return work


def _settle(fut: asyncio.Future[T], result: T | None, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)  # type: ignore[arg-type]


async def run_cancellable(ctx: ToolContext, fn: Callable[[threading.Event], T], what: str,
                          on_stop: Callable[[], None] | None = None) -> T:
    """Run blocking `fn(stop)` in a daemon thread; an abort or cancellation returns at once.

    `fn` should check `stop` between chunks and raise `Stopped`; even if it cannot (a read
    stuck in the kernel), the thread is a daemon and never holds up the process's exit.
    `on_stop` runs on abort/cancel too (e.g. to kill a child process the thread reads from).
    """
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()
    stop = threading.Event()

    def work() -> None:
        result, exc = None, None
        try:
            result = fn(stop)
        except BaseException as e:  # handed to the awaiting task, never lost in the thread
            exc = e
        try:
            loop.call_soon_threadsafe(_settle, fut, result, exc)
        except RuntimeError:
            pass  # the loop is gone: nobody is waiting any more

    threading.Thread(target=work, name=f"codeloop-{what}", daemon=True).start()
    abort = asyncio.ensure_future(ctx.abort.wait())
    try:
        waiting: set[asyncio.Future[Any]] = {fut, abort}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        _stop(stop, on_stop)
        raise
    finally:
        abort.cancel()
    if fut.done():
        return fut.result()
    _stop(stop, on_stop)
    fut.cancel()
    raise ToolError(f"{what} was aborted")


def _stop(stop: threading.Event, on_stop: Callable[[], None] | None) -> None:
    stop.set()
    if on_stop is not None:
        on_stop()
