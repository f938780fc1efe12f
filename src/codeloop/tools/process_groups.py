"""The process groups of the model's commands still running in this process (foreground Bash
calls and background tasks), so that none outlives codeloop however it ends: an orderly exit runs
the atexit sweep; a signal's hard exit (`os._exit`, which skips atexit) calls `kill_all` first.

A foreground command that ignores SIGTERM is killed by its call's SIGKILL after a grace period;
when the process ends inside that grace (a signal's orderly exit writes its result and leaves at
once), only this registry still knows the group.
"""

from __future__ import annotations

import os
import signal

_live: set[int] = set()
_registered = False


def add(pgid: int) -> None:
    global _registered
    _live.add(pgid)
    if not _registered:
        import atexit

        atexit.register(kill_all)
        _registered = True


def discard(pgid: int) -> None:
    _live.discard(pgid)


def kill_all() -> None:
    """SIGKILL every group still registered (idempotent; safe from any exit path)."""
    for pgid in list(_live):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _live.clear()
