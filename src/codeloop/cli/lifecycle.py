"""Signals always win: how a headless run ends when SIGINT/SIGTERM arrive, whatever is running.

Two things could keep a signalled process alive: a tool's worker thread stuck in a blocking call
(asyncio's default executor threads are joined at loop close and at interpreter exit), and an
orderly shutdown that waits on that tool. So:

- `DaemonExecutor` (`codeloop.daemon`) replaces the loop's default executor (what `asyncio.to_thread` uses): each
  call runs on a daemon thread that nothing ever joins.
- `ExitGuard` arms a watchdog when a signal arrives. If the orderly path (tool results, the
  transcript synced, the result line) has not finished within `GRACE_S`, the watchdog writes the
  result line itself, flushes, and ends the process with `os._exit`. A second signal fires it
  at once. The transcript stays intact either way: each record is one whole-line write.
- `hard_exit` is also the normal end of a print-mode process (`cli.main`): once the run has
  returned, the transcript is synced and closed, tool processes reaped and the result written,
  so the interpreter's teardown of some 40 k objects (100-260 ms) buys nothing.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from codeloop.daemon import DaemonExecutor

GRACE_S = 1.5


def install_daemon_executor(loop: Any) -> None:
    loop.set_default_executor(DaemonExecutor())


class ExitGuard:
    """Exactly one result line, and an exit no thread can block, once a signal has arrived."""

    def __init__(self, fallback: Callable[[int], None], grace_s: float = GRACE_S) -> None:
        self._fallback = fallback          # writes the result line for this signal number
        self._grace_s = grace_s
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._settled = False
        self.signum: int | None = None

    def signalled(self, signum: int) -> None:
        """A signal arrived: arm the watchdog (a second signal fires it now)."""
        with self._lock:
            if self._settled:
                return
            if self.signum is not None:
                second = True
            else:
                second, self.signum = False, signum
                self._timer = threading.Timer(self._grace_s, self._fire)
                self._timer.daemon = True
                self._timer.start()
        if second:
            self._fire()

    def settle(self) -> bool:
        """The orderly path is about to write its result line: True if it still may."""
        with self._lock:
            if self._settled:
                return False
            self._settled = True
            if self._timer is not None:
                self._timer.cancel()
            return True

    def _fire(self) -> None:
        with self._lock:
            if self._settled:
                return
            self._settled = True
        signum = self.signum or 15
        try:
            self._fallback(signum)
        except Exception:  # noqa: BLE001 — nothing may stop the exit now
            pass
        hard_exit(128 + signum)


def hard_exit(code: int) -> None:
    """Flush what was written and end now, without waiting for any thread."""
    from codeloop.cli.startup import save_caches

    save_caches()   # atexit handlers do not run after os._exit
    if (groups := sys.modules.get("codeloop.tools.process_groups")) is not None:
        groups.kill_all()  # no command of the model outlives codeloop (their atexit sweep is skipped too)
    if (reports := sys.modules.get("codeloop.tools.builtin.cwd_report")) is not None:
        reports.remove_all()   # Bash's reusable cwd report files
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)
