"""Finding and running ripgrep for Grep and Glob: streamed records, early stop, no strays.

Owns which `rg` is used (the one installed beside this Python by the `ripgrep` dependency,
then PATH) and `run_rg`, which starts rg on a directory opened without following links
(through /proc/self/fd, so rg walks exactly the folder that was checked) or on an already
opened file fed as stdin, hands each NUL/newline-separated record to a callback that may stop
it early, and kills rg on abort, cancellation or early stop.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from codeloop.tools.base import ToolContext
from codeloop.tools.builtin.fileio import run_cancellable

MAX_RECORD_BYTES = 4 * 1024 * 1024  # one output record (a path or a line) is never held past this
_CHUNK = 1 << 16


@lru_cache(maxsize=1)
def env_rg() -> str | None:
    """The rg installed into this Python's environment (pip's `ripgrep` wheel), if any."""
    dirs = [sysconfig.get_path("scripts")]
    try:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))  # pip install --user
    except KeyError:
        pass
    for scripts in dirs:
        candidate = os.path.join(scripts or "", "rg.exe" if sys.platform == "win32" else "rg")
        if scripts and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def find_rg() -> str | None:
    """The rg of this Python's environment, else the first on PATH (absolute entries only: never
    an rg planted in the project)."""
    from codeloop.shellpath import find_program

    return env_rg() or find_program("rg")


def _proc_fd_dir(fd: int) -> str | None:
    path = f"/proc/self/fd/{fd}"
    return path if os.path.isdir("/proc/self/fd") else None


@dataclass
class RgRun:
    """How an rg run ended: return code, stderr and whether it was stopped early."""
    returncode: int | None
    stderr: str
    stopped_early: bool


async def run_rg(ctx: ToolContext, args: list[str], *, dir_fd: int | None, dir_path: str | None,
                 stdin_fd: int | None, sep: bytes, handle: Callable[[Any], bool], what: str,
                 batched: bool = False) -> RgRun:
    """Run rg (args[0]) and feed `handle` each record; `handle` returning False stops rg.

    `dir_fd` (with its realpath `dir_path` as fallback) becomes rg's working directory;
    `stdin_fd` is searched as stdin. Blocking pipe reads happen in a daemon thread. `batched`:
    `handle` takes the list of records each read brought instead (one call per read rather than
    per record: Glob's ~20,000 paths).
    """
    cwd = None
    pass_fds: tuple[int, ...] = ()
    if dir_fd is not None:
        cwd = _proc_fd_dir(dir_fd) or dir_path
        pass_fds = (dir_fd,)
    err = tempfile.TemporaryFile()  # rg's messages; a file never fills up and blocks rg
    try:
        proc = subprocess.Popen(args, cwd=cwd, pass_fds=pass_fds,
                                stdin=stdin_fd if stdin_fd is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err)
    except OSError:
        err.close()
        raise
    stopped = threading.Event()

    def kill() -> None:
        stopped.set()
        try:
            proc.kill()
        except OSError:
            pass

    def pump(stop: threading.Event) -> None:
        assert proc.stdout is not None
        # A pipe with the default buffering is a BufferedReader, whose read1 returns what is there.
        stdout = cast(io.BufferedReader, proc.stdout)
        buf = b""
        while not stop.is_set():
            chunk = stdout.read1(_CHUNK)
            if not chunk:
                break
            buf += chunk
            *records, buf = buf.split(sep)
            if batched:
                if records and (stop.is_set() or not handle(records)):
                    kill()
                    return
            else:
                for record in records:
                    if stop.is_set() or not handle(record):
                        kill()
                        return
            if len(buf) > MAX_RECORD_BYTES:
                buf = buf[:MAX_RECORD_BYTES]  # keep the head of an endless record, drop the rest
        if buf and not stop.is_set() and not handle([buf] if batched else buf):
            kill()

    try:
        await run_cancellable(ctx, pump, what, on_stop=kill)
        returncode = proc.wait()
        err.seek(0)
        message = err.read(64 * 1024).decode("utf-8", errors="replace").strip()
        return RgRun(returncode, message, stopped.is_set())
    finally:
        if proc.poll() is None:
            kill()
            try:
                proc.wait(timeout=5)  # SIGKILLed: reaped at once, so no zombie outlives the call
            except subprocess.TimeoutExpired:
                pass
        if proc.stdout is not None:
            proc.stdout.close()
        err.close()
