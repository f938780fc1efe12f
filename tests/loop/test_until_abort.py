"""The model stream's abort watch: an abort ends a pending read at once, another cancellation stays
a cancellation, the consumer's own code between items is never cancelled, and reading an item
makes no task of its own."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from codeloop.abort import AbortController
from codeloop.loop.model_call import Aborted, _until_abort


class Stream:
    """Items 0, 1, …; item 2 never comes (a model that stalls). Records how it ended."""

    def __init__(self) -> None:
        self.tasks_while_reading: list[int] = []
        self.closed = False
        self.stalled = asyncio.Event()

    async def gen(self):
        try:
            for i in range(2):
                self.tasks_while_reading.append(len(asyncio.all_tasks()))
                yield {"n": i}
            self.stalled.set()
            await asyncio.Event().wait()
            yield {"n": "never"}
        finally:
            self.closed = True


def ctx() -> SimpleNamespace:
    return SimpleNamespace(abort=AbortController())


async def test_an_abort_ends_a_pending_read_and_closes_the_stream():
    c, s = ctx(), Stream()
    got: list = []

    async def consume():
        async for item in _until_abort(s.gen(), c):
            got.append(item["n"])

    before = len(asyncio.all_tasks())
    task = asyncio.create_task(consume())
    async with asyncio.timeout(30):     # (no wait_for: it would add a task of its own to the count)
        while not s.stalled.is_set():
            await asyncio.sleep(0.005)
    c.abort.abort()
    with pytest.raises(Aborted):
        await asyncio.wait_for(task, 30)
    assert got == [0, 1] and s.closed
    # no task per item: while reading, only the consumer and the one abort watcher exist
    assert s.tasks_while_reading == [before + 2, before + 2]


async def test_another_cancellation_stays_a_cancellation():
    c, s = ctx(), Stream()

    async def consume():
        async for _ in _until_abort(s.gen(), c):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(s.stalled.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert s.closed and not c.abort.aborted


async def test_the_consumers_own_wait_between_items_is_never_cancelled():
    c, s = ctx(), Stream()
    finished_own_work = asyncio.Event()
    release = asyncio.Event()

    async def consume():
        async for item in _until_abort(s.gen(), c):
            if item["n"] == 0:
                c.abort.abort()                 # fires while this code (not a read) runs …
                await release.wait()            # … and this wait must not be cut short
                finished_own_work.set()

    task = asyncio.create_task(consume())
    for _ in range(5):
        await asyncio.sleep(0)                  # let the watcher's callback run
    assert not task.done()
    release.set()
    with pytest.raises(Aborted):                # the next read sees the abort
        await asyncio.wait_for(task, 30)
    assert finished_own_work.is_set() and s.closed
