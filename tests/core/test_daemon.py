"""codeloop.daemon: calls on daemon threads nothing joins, and what happens to a result nobody takes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest

from codeloop.daemon import DaemonExecutor, on_daemon_thread


async def test_the_outcome_lands_in_the_future_from_a_daemon_thread():
    seen: list[threading.Thread] = []

    def work(a: int, b: int) -> int:
        seen.append(threading.current_thread())
        return a + b

    assert await on_daemon_thread(work, 2, 3, name="codeloop-test") == 5
    assert seen[0].daemon and seen[0].name == "codeloop-test" and seen[0] is not threading.main_thread()

    def fail() -> None:
        raise OSError("unreachable")

    with pytest.raises(OSError, match="unreachable"):
        await on_daemon_thread(fail)


async def test_a_result_after_the_future_was_cancelled_goes_to_orphan():
    release, orphaned = threading.Event(), asyncio.Event()
    got: list[object] = []
    loop = asyncio.get_running_loop()

    def orphan(value: object) -> None:
        got.append(value)
        loop.call_soon_threadsafe(orphaned.set)

    def slow() -> str:
        release.wait(30)
        return "connection"

    future = on_daemon_thread(slow, orphan=orphan)
    future.cancel()
    release.set()
    await asyncio.wait_for(orphaned.wait(), 30)
    assert got == ["connection"]


async def test_a_failure_after_the_future_was_cancelled_is_not_an_orphan():
    release = threading.Event()
    threads: list[threading.Thread] = []
    got: list[object] = []

    def slow() -> None:
        threads.append(threading.current_thread())
        release.wait(30)
        raise OSError("refused")

    future = on_daemon_thread(slow, orphan=got.append)
    future.cancel()
    release.set()
    while not threads:
        await asyncio.sleep(0.01)
    await asyncio.to_thread(threads[0].join, 30)   # it has handed its outcome to the loop
    await asyncio.sleep(0)                         # … which settles it before this task resumes
    assert not threads[0].is_alive() and got == []


def test_a_result_after_the_loop_closed_goes_to_orphan():
    release, orphaned = threading.Event(), threading.Event()
    got: list[object] = []

    def orphan(value: object) -> None:
        got.append(value)
        orphaned.set()

    async def begin() -> None:
        on_daemon_thread(lambda: release.wait(30) and "socket", orphan=orphan)

    asyncio.run(begin())   # returns without waiting for the thread; its loop is closed
    release.set()
    assert orphaned.wait(30) and got == ["socket"]


def test_a_blocked_call_on_the_daemon_executor_does_not_hold_the_program_at_exit(tmp_path):
    # asyncio.run joins its executor's threads; with DaemonExecutor the blocked read never ends and
    # the program exits anyway (a FIFO nobody writes: open() blocks for good)
    fifo = tmp_path / "fifo"
    code = ("import asyncio, os, sys\n"
            "from codeloop.daemon import DaemonExecutor\n"
            "async def main():\n"
            "    asyncio.get_running_loop().set_default_executor(DaemonExecutor())\n"
            f"    os.mkfifo({str(fifo)!r})\n"
            f"    asyncio.get_running_loop().run_in_executor(None, open, {str(fifo)!r})\n"
            "    await asyncio.sleep(0)\n"
            "asyncio.run(main())\n"
            "print('exited')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "exited", r.stderr


def test_the_daemon_executor_runs_each_call_on_its_own_daemon_thread():
    ex = DaemonExecutor()
    names = [ex.submit(lambda: (threading.current_thread().daemon, threading.current_thread().ident)).result(30)
             for _ in range(2)]
    assert all(daemon for daemon, _ in names)
    assert ex.shutdown(wait=True) is None
