"""Calls on daemon threads that nothing joins: work that may block past the program's end.

`asyncio.run` joins the loop's executor threads before it returns, and the interpreter joins every
non-daemon thread at exit, so one call stuck in a blocking read (a FIFO, a hung network mount) or
a connect to a black-holed address holds the whole program. Daemon threads are never joined.

Owns `DaemonExecutor` (a loop's default executor whose every call gets its own daemon thread: the
CLI installs it, `cli.lifecycle`) and `on_daemon_thread` (one call started now, its outcome in an
asyncio future; a result nobody can take any more, the future cancelled or its loop closed, is
handed to `orphan`, so a connection made for it is closed rather than leaked).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any


def start(target: Callable[[], None], name: str) -> None:
    """`target()` on a new daemon thread."""
    threading.Thread(target=target, name=name, daemon=True).start()


class DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs each submitted call on its own daemon thread; shutting down never waits.

    A ThreadPoolExecutor only in type (asyncio insists on one): its pool threads, which are
    joined at exit, are never started."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 — handed to whoever awaits the future
                future.set_exception(exc)

        start(run, "codeloop-worker")
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


def on_daemon_thread(fn: Callable[..., Any], *args: Any, name: str = "codeloop-worker",
                     orphan: Callable[[Any], None] | None = None) -> asyncio.Future[Any]:
    """`fn(*args)` on a daemon thread started now; its outcome lands in the returned future (of
    the running loop). A result that arrives after the future was cancelled, or after its loop
    closed, goes to `orphan` (if given) instead."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def abandon(value: Any) -> None:
        if orphan is not None:
            orphan(value)

    def settle(ok: bool, value: Any) -> None:
        if future.cancelled():
            if ok:
                abandon(value)
        elif ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def run() -> None:
        try:
            ok, value = True, fn(*args)
        except BaseException as exc:  # noqa: BLE001 — handed to whoever awaits the future
            ok, value = False, exc
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:   # the loop is closed
            if ok:
                abandon(value)

    start(run, name)
    return future
