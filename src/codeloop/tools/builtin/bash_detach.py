"""Moving a running foreground Bash command to the background (Ctrl+B in the REPL, as in Claude Code).

While a foreground command runs, `Detach` offers the session's background registry a way to move
it (`BackgroundTasks.foreground`, keyed by tool_use id). When the user asks, the Bash call stops
waiting and returns at once with the new background task's id and output file (the shape of
`run_in_background`'s result); the command itself goes on untouched: the output captured so far
is written to the task's file and its pipes keep draining into it, and what the call held open
for it — the sandbox's layout (bwrap's mounts, planted configuration), the file its final
directory is written to — is released only when the command ends, as the background path does.
Its end is announced like any background task's (a task notification for the model).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from codeloop.messages import new_uuid

if TYPE_CHECKING:
    from codeloop.tools.base import ToolResult

POLL_S = 0.02
PIPE_DRAIN_S = 1.0


class Detach:
    """One foreground command's way to the background, offered while it runs."""

    def __init__(self, ctx: Any, key: str | None) -> None:
        # registered in the context's plain dict: the background registry (and its module) is
        # needed only if the command is moved, which most never are
        self.ctx, self.foreground = ctx, ctx.foreground
        self.key = key or new_uuid()
        self.tool_use_id = key
        self.requested: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.foreground[self.key] = self._request
        self._running: tuple[asyncio.subprocess.Process, list[Any], asyncio.Future[Any]] | None = None

    def _request(self) -> None:
        if not self.requested.done():
            self.requested.set_result(None)

    def close(self) -> None:
        """The command is no longer in the foreground (it ended, or it was moved)."""
        self.foreground.pop(self.key, None)
        if not self.requested.done():
            self.requested.cancel()

    def hold(self, proc: asyncio.subprocess.Process, captures: list[Any], readers: asyncio.Future[Any]) -> Detach:
        """The running command (its process, output captures and their pipe readers), kept for `adopt`."""
        self._running = (proc, captures, readers)
        return self

    def adopt(self, command: str, description: str, held: ExitStack, undone: list[str], ctx: Any) -> ToolResult:
        """The held command as a background task, and the Bash call's result saying so: what was
        captured goes to the task's output file and the rest follows it there; `held` (the sandbox's
        layout, the cwd file) is released once the command has ended, then what the sandbox undid is
        told in that file. No await: a cancellation cannot leave the command half handed over."""
        from codeloop.tools.base import ToolResult
        from codeloop.tools.builtin.bash_background import registry

        assert self._running is not None, "adopt() follows hold()"
        proc, captures, readers = self._running
        tasks = registry(self.ctx)
        task_id, out = tasks.reserve()
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o600)
        for cap in captures:
            cap.spill(fd)

        async def wait_end() -> int:
            try:
                while proc.returncode is None:   # proc.wait() would also wait for pipes a child holds
                    if readers.done():
                        await proc.wait()   # the pipes are closed: nothing can hold it now
                    else:
                        await asyncio.wait({readers}, timeout=POLL_S)
                try:
                    await asyncio.wait_for(asyncio.shield(readers), PIPE_DRAIN_S)
                except TimeoutError:
                    pass   # a child left behind holds the pipes: the task ends with the shell
            finally:
                if not readers.done():
                    readers.cancel()
                    transport = getattr(proc, "_transport", None)
                    if transport is not None:
                        transport.close()
                for cap in captures:
                    cap.sink = None
                os.close(fd)
            return proc.returncode if proc.returncode is not None else -1

        def release() -> None:
            held.close()
            if undone:
                with contextlib.suppress(OSError), open(out, "a", encoding="utf-8") as fh:
                    fh.write("\n" + "\n".join(undone) + "\n")

        task = tasks.adopt_shell(task_id, out, command, proc.pid, wait_end, description=description,
                                      tool_use_id=self.tool_use_id, cleanup=release)
        self.close()
        return ToolResult(f"Command was manually backgrounded by user with ID: {task.id}. Output is being written "
                          f"to: {task.output_file}", data={"backgroundTaskId": task.id, "backgroundedByUser": True,
                                                           "stdout": "", "stderr": "", "interrupted": False,
                                                           "cwd": str(ctx.cwd)})
