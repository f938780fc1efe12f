"""Streaming tool execution (spec 004 §9.2) against the scripted fake API.

    python bench/bench_streaming.py

A fake model streams three 1-second read-only tool calls in one message (0.1 s apart, as a real
model's blocks arrive). Reports the wall time of the tool phase (first tool start → last tool end;
sequential execution would take 3 s) and how long before the message's end the first tool started.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from pydantic import BaseModel  # noqa: E402

from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402
from loophelpers import make_params  # noqa: E402
from codeloop.events import StreamEvent  # noqa: E402
from codeloop.loop.query import query  # noqa: E402
from codeloop.tools.base import Tool, ToolResult  # noqa: E402

LOG: list[tuple[str, float]] = []


class _In(BaseModel):
    name: str


class SlowRead(Tool):
    name, description, input_model = "SlowRead", "Reads slowly.", _In

    def is_read_only(self, inp):
        return True

    async def call(self, inp, ctx):
        LOG.append(("start", time.monotonic()))
        await asyncio.sleep(1.0)
        LOG.append(("end", time.monotonic()))
        return ToolResult("ok")


async def main() -> None:
    api = ScriptedAPI(sse(*[tool_use("SlowRead", {"name": n}, delay=0.1) for n in "abc"]), sse(text("done")))
    with tempfile.TemporaryDirectory() as tmp:
        params = make_params(api, Path(tmp), tools=[SlowRead()])
        message_end = None
        async for ev in query(params):
            if isinstance(ev, StreamEvent) and ev.raw["type"] == "message_stop" and message_end is None:
                message_end = time.monotonic()
    starts = [t for k, t in LOG if k == "start"]
    ends = [t for k, t in LOG if k == "end"]
    print(f"tool phase (3 × 1 s read-only tools): {max(ends) - min(starts):.2f} s  (sequential: 3 s)")
    print(f"first tool started {message_end - min(starts):.2f} s before the message ended")


if __name__ == "__main__":
    asyncio.run(main())
