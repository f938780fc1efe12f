"""The real stdin as an async stream of lines, for stream-json sessions (and anything else that
reads JSONL from stdin). A daemon thread reads, so a pipe, a file or a tty all work and a blocked
read never holds up exit.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

_EOF = object()


async def stdin_lines() -> AsyncIterator[str]:
    """Lines of the real stdin. A daemon thread reads, so a pipe, a file or a tty all work and a
    blocked read never holds up exit."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def pump() -> None:
        try:
            for raw in sys.stdin.buffer:
                loop.call_soon_threadsafe(queue.put_nowait, raw.decode("utf-8", "replace"))
        except (OSError, ValueError):
            pass
        finally:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, _EOF)
            except RuntimeError:  # the loop is already closed: nobody is listening
                pass

    threading.Thread(target=pump, name="codeloop-stdin", daemon=True).start()
    while (line := await queue.get()) is not _EOF:
        yield line
