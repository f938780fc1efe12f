"""SIGINT and SIGTERM for the headless modes' event loop: `run` and `handle`, in place of
`asyncio.run`'s own SIGINT handler and `loop.add_signal_handler`.

They behave as those do. `run(main)` is `asyncio.run(main)` with asyncio's SIGINT rule (the first
Ctrl-C cancels the main task and the run ends in KeyboardInterrupt, a second raises it at once)
applied by a handler installed before the loop starts, so asyncio does not install its own.
`handle(callback, signums)` then gives those signals to `callback(signum)`, called from the loop:
the C-level handler writes each signal's number to a socket the loop reads (`set_wakeup_fd`, as
asyncio does), which also wakes a loop blocked in `select` whichever thread the signal reached;
the returned function gives them back (SIGINT to `run`'s rule, the others to the default).

Why not asyncio's: `loop.add_signal_handler` asks `inspect` whether the callback is a coroutine
function, and replacing asyncio.run's handler makes `signal.signal` build, then drop, a repr of
the main task (which asks `inspect` too): together they loaded `inspect`, `ast` and `dis`, ~29 M
instructions of a run's start-up that nothing else in it needs (see cli.startup.deferred).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_state: dict[str, Any] = {"task": None, "loop": None, "interrupts": 0}


def _on_sigint(signum: int, frame: Any) -> None:
    # asyncio.Runner's rule, while no callback has SIGINT
    _state["interrupts"] += 1
    task, loop = _state["task"], _state["loop"]
    if _state["interrupts"] == 1 and task is not None and not task.done():
        task.cancel()
        loop.call_soon_threadsafe(lambda: None)   # wake a loop blocked in select
        return
    raise KeyboardInterrupt()


def _noop(signum: int, frame: Any) -> None:
    pass   # the loop takes the signal from the wakeup socket


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, SIGINT handled by asyncio's rule until `handle` takes it."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return asyncio.run(main)   # where asyncio would not install its handler either

    async def body() -> T:
        _state.update(task=asyncio.current_task(), loop=asyncio.get_running_loop())
        return await main

    _state.update(task=None, loop=None, interrupts=0)
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        return asyncio.run(body())
    except asyncio.CancelledError:
        task = _state["task"]
        if _state["interrupts"] and task is not None and task.uncancel() == 0:
            raise KeyboardInterrupt() from None
        raise
    finally:
        _state.update(task=None, loop=None)
        if signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def handle(callback: Callable[[int], None], signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)
           ) -> Callable[[], None]:
    """Give `signums` to `callback(signum)`, called from the running loop; returns the function
    that gives them back. Main thread only (ValueError otherwise, as `set_wakeup_fd` says)."""
    loop = asyncio.get_running_loop()
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    try:
        previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except ValueError:
        reader.close()
        writer.close()
        raise

    def drain() -> None:
        try:
            data = reader.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        for signum in data:
            if signum in signums:
                callback(signum)

    loop.add_reader(reader.fileno(), drain)
    previous = {signum: signal.signal(signum, _noop) for signum in signums}
    done = False

    def give_back() -> None:
        nonlocal done
        if done:
            return
        done = True
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(previous_fd)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()

    return give_back
