"""How codeloop's own process learns that a child process (a Bash call, a hook, a stdio server) ended.

On Python 3.11 asyncio's default child watcher starts a thread for every subprocess and waits
until that thread is running: a tenth of a millisecond on an idle machine, milliseconds on a busy
one, at every Bash call. Linux (5.3+) offers a pidfd instead, a descriptor that becomes readable
when the process exits; the running loop watches it like a socket, with no thread. Python 3.12+
does this itself, so `install` only acts on 3.11, and only in codeloop's own process (a host
program calling `main(argv)` keeps its policy). A pidfd that cannot be opened (an old kernel, a
seccomp filter, no descriptors left) falls back to the thread for that child: never worse than
the default.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def install() -> bool:
    """Use pidfds for this process's asyncio subprocesses where that helps; True when installed."""
    if sys.version_info >= (3, 12) or not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    import asyncio
    import warnings

    class PidfdWatcher(asyncio.ThreadedChildWatcher):
        """The threaded watcher, except that a child with a pidfd is watched by its own loop."""

        def add_child_handler(self, pid: int, callback: Any, *args: Any) -> None:  # type: ignore[override]  # typeshed's TypeVarTuple form
            loop = asyncio.get_running_loop()
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                super().add_child_handler(pid, callback, *args)
                return
            loop.add_reader(pidfd, _reap, loop, pidfd, pid, callback, args)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.get_event_loop_policy().set_child_watcher(PidfdWatcher())
    return True


def _reap(loop: Any, pidfd: int, pid: int, callback: Any, args: tuple[Any, ...]) -> None:
    loop.remove_reader(pidfd)
    os.close(pidfd)
    try:
        _, status = os.waitpid(pid, 0)   # readable: the child has exited, so this does not block
        returncode = os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        returncode = 255   # reaped elsewhere, as asyncio's own watchers report it
    callback(pid, returncode, *args)
