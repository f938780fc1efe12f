"""Background tasks: `Bash` with `run_in_background` and `Agent` with `run_in_background`.

Owns the session's registry of background work (`BackgroundTasks`, kept in
`ctx.background`): starting a shell whose stdout and stderr go to a file under the
session folder (`<session_dir>/tasks/<id>.output`), tracking a background subagent, waiting,
stopping, the `/bashes` listing and killing everything on exit. When a task ends the registry
emits `system/task_notification` (the shape claude-agent-sdk parses) and calls its `listeners`;
the session turns each finished task into a task-notification queue entry for the model
(`loop.continuation.task_notification`), so this module never imports the loop.

A background shell runs in its own session (process group), so stopping it kills its children.
Under the bubblewrap sandbox the bwrap process *is* the background process: the command lives in
bwrap's PID namespace, which dies with it, so killing bwrap's group stops everything inside.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.messages import new_uuid
from codeloop.tools import process_groups

TAIL_CHARS = 2_000                  # output tail carried by a notification
READ_BYTES = 256 * 1024             # head and tail read from a big output file
KILL_GRACE_S = 2.0


class TaskKind(str, Enum):
    """Claude Code's task_type values for the two kinds codeloop runs."""
    BASH = "local_bash"
    AGENT = "local_agent"


class TaskStatus(str, Enum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    KILLED = "killed"

    @property
    def sdk_status(self) -> str:
        """task_notification's vocabulary: completed | failed | stopped."""
        return "stopped" if self is TaskStatus.KILLED else self.value


@dataclass
class BackgroundTask:
    """A task running in the background: its command, output file and status."""
    id: str
    kind: TaskKind
    description: str
    output_file: Path
    command: str = ""
    tool_use_id: str | None = None
    status: TaskStatus = TaskStatus.RUNNING
    exit_code: int | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    pgid: int | None = None
    runner: asyncio.Task | None = None          # the watcher (shell) or the subagent run
    stop_hook: Callable[[], None] | None = None  # an agent's abort
    done: asyncio.Event = field(default_factory=asyncio.Event)
    announced: bool = False

    def output(self) -> str:
        """The output so far; a huge file is read as its head and tail only (it may be gigabytes)."""
        try:
            with open(self.output_file, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size <= 2 * READ_BYTES:
                    return f.read().decode("utf-8", errors="replace")
                head = f.read(READ_BYTES)
                f.seek(size - READ_BYTES)
                tail = f.read(READ_BYTES)
        except OSError:
            return ""
        cut = size - 2 * READ_BYTES
        return (head.decode("utf-8", errors="replace") + f"\n\n... [{cut} bytes not read] ...\n\n"
                + tail.decode("utf-8", errors="replace"))

    def tail(self, limit: int = TAIL_CHARS) -> str:
        text = self.output().rstrip("\n")
        return text if len(text) <= limit else "…" + text[-limit:]

    def summary(self) -> str:
        what = f'command "{self.command}"' if self.kind is TaskKind.BASH else f'agent "{self.description}"'
        if self.status is TaskStatus.RUNNING:
            return f"Background {what} is running"
        if self.status is TaskStatus.KILLED:
            return f"Background {what} was stopped"
        code = f" (exit code {self.exit_code})" if self.exit_code is not None else ""
        return f"Background {what} {self.status.value}{code}"


def notification_text(task: BackgroundTask) -> str:
    """What the model reads when a task ends: Claude Code's <task-notification> block."""
    return (f"<task-notification>\n<task-id>{task.id}</task-id>\n<task-type>{task.kind.value}</task-type>\n"
            f"<output-file>{task.output_file}</output-file>\n<status>{task.status.value}</status>\n"
            f"<summary>{task.summary()}</summary>\n<output-tail>\n{task.tail()}\n</output-tail>\n"
            f"</task-notification>\nRead the output file (or call TaskOutput with this task id) for the whole output.")


def registry(ctx: Any) -> BackgroundTasks:
    """The session's registry, created on first use (the session creates it at start)."""
    if ctx.background is None:
        ctx.background = BackgroundTasks(ctx.session_dir, emit=ctx.emit, foreground=ctx.foreground)
    return ctx.background


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass




class BackgroundTasks:
    def __init__(self, session_dir: Path | None, emit: Callable[[Any], None] | None = None,
                 foreground: dict[str, Callable[[], None]] | None = None) -> None:
        self.session_dir = session_dir
        self.emit = emit
        self.tasks: dict[str, BackgroundTask] = {}
        self.listeners: list[Callable[[BackgroundTask], None]] = []   # called once per finished task
        # SendMessage's addresses: "main" (the main thread) and each running background agent's id →
        # a capability the session registers that queues a message for that conversation's next turn.
        self.inboxes: dict[str, Callable[[str], None]] = {}
        # Foreground Bash commands running now (tool_use id → what moves one to the background):
        # Ctrl+B in the REPL moves them all (`background_foreground`). The session's
        # `ToolContext.foreground`, where the commands register.
        self.foreground: dict[str, Callable[[], None]] = {} if foreground is None else foreground

    # -- starting ------------------------------------------------------------------------------------
    def _output_file(self, task_id: str) -> Path:
        if self.session_dir is None:
            import tempfile
            self.session_dir = Path(tempfile.mkdtemp(prefix="codeloop-tasks-"))
        folder = self.session_dir / "tasks"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{task_id}.output"

    async def start_shell(self, command: str, argv: list[str], *, cwd: Path, env: dict[str, str],
                          description: str = "", tool_use_id: str | None = None,
                          cleanup: Callable[[], None] | None = None,
                          pass_fds: tuple[int, ...] = ()) -> BackgroundTask:
        """Start `argv` (the shell, behind the sandbox prefix if any) with output to a file, in `env`
        (the whole environment: the caller leaves codeloop's secrets out, tools.builtin.shell_env)."""
        task_id, out = self.reserve()
        with open(out, "wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=sink, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True, env=env, pass_fds=pass_fds)
        task = BackgroundTask(task_id, TaskKind.BASH, description or command, out, command=command,
                              tool_use_id=tool_use_id, pgid=proc.pid)
        process_groups.add(proc.pid)    # whatever path codeloop takes to exit, the shell goes with it
        self.tasks[task_id] = task
        task.runner = asyncio.ensure_future(self._watch(task, proc, cleanup))
        self._started(task)
        return task

    async def _watch(self, task: BackgroundTask, proc: asyncio.subprocess.Process,
                     cleanup: Callable[[], None] | None) -> None:
        try:
            rc = await proc.wait()
        except asyncio.CancelledError:  # the event loop is closing: the shell goes with it
            _kill_group(proc.pid, signal.SIGKILL)
            raise
        finally:
            # the group may still hold children the shell left behind; they end with the task
            _kill_group(proc.pid, signal.SIGKILL)
            process_groups.discard(proc.pid)
            if cleanup is not None:
                cleanup()
        if task.status is TaskStatus.RUNNING:
            task.status = TaskStatus.COMPLETED if rc == 0 else TaskStatus.FAILED
        task.exit_code = rc
        self._finished(task)

    def reserve(self) -> tuple[str, Path]:
        """A new shell task's id and output file (a command moved to the background: bash_detach)."""
        task_id = "b" + new_uuid().replace("-", "")[:8]
        return task_id, self._output_file(task_id)

    def adopt_shell(self, task_id: str, out: Path, command: str, pgid: int, wait_end: Callable[[], Any], *,
                    description: str = "", tool_use_id: str | None = None,
                    cleanup: Callable[[], None] | None = None) -> BackgroundTask:
        """A shell already running (in its own process group `pgid`) becomes a background task;
        `wait_end()` (a coroutine function) returns its exit code once it has ended and its output
        is in `out`. It then ends like a started one: the group killed, `cleanup`, the notification."""
        task = BackgroundTask(task_id, TaskKind.BASH, description or command, out, command=command,
                              tool_use_id=tool_use_id, pgid=pgid)
        self.tasks[task_id] = task

        async def watch() -> None:
            try:
                rc = await wait_end()
            except asyncio.CancelledError:
                _kill_group(pgid, signal.SIGKILL)
                raise
            finally:
                _kill_group(pgid, signal.SIGKILL)
                process_groups.discard(pgid)
                if cleanup is not None:
                    try:
                        cleanup()
                    except Exception:  # noqa: BLE001 - a failed teardown must not leave the task running forever
                        pass
            if task.status is TaskStatus.RUNNING:
                task.status = TaskStatus.COMPLETED if rc == 0 else TaskStatus.FAILED
            task.exit_code = rc
            self._finished(task)

        task.runner = asyncio.ensure_future(watch())
        self._started(task)
        return task

    def track_agent(self, agent_id: str, description: str, run: Callable[[], Any], *,
                    stop: Callable[[], None], tool_use_id: str | None = None) -> BackgroundTask:
        """Run `run()` (a coroutine function returning a SubagentOutcome) as a background task.

        The subagent's own lifecycle emits its task_started/task_notification events."""
        task = BackgroundTask(agent_id, TaskKind.AGENT, description, self._output_file(agent_id),
                              tool_use_id=tool_use_id, stop_hook=stop)
        self.tasks[agent_id] = task

        async def go() -> None:
            try:
                outcome = await run()
                text = outcome.text or f"The subagent ended without a final answer ({outcome.terminal_reason})."
                if task.status is TaskStatus.RUNNING:
                    task.status = TaskStatus.COMPLETED if outcome.text else TaskStatus.FAILED
            except asyncio.CancelledError:
                task.status = TaskStatus.KILLED
                text = "The subagent was stopped."
            except Exception as exc:  # a failed background agent is reported, never raised into the loop
                task.status = TaskStatus.FAILED
                text = f"The subagent failed: {exc}"
            try:
                task.output_file.write_text(text)
            except OSError:
                pass
            self._finished(task, emit=False)

        task.runner = asyncio.ensure_future(go())
        return task

    def background_foreground(self) -> int:
        """Move every running foreground command to the background (Ctrl+B); how many there were."""
        moving = list(self.foreground.values())
        self.foreground.clear()
        for move in moving:
            move()
        return len(moving)

    # -- events --------------------------------------------------------------------------------------
    def _emit(self, subtype: str, data: dict[str, Any]) -> None:
        if self.emit is None:
            return
        from codeloop.events import SystemEvent
        try:
            self.emit(SystemEvent(subtype, data=data))
        except Exception:  # a front end's failure must not kill the task's bookkeeping
            pass

    def _started(self, task: BackgroundTask) -> None:
        self._emit("task_started", {"task_id": task.id, "tool_use_id": task.tool_use_id,
                                    "description": task.description, "task_type": task.kind.value})

    def _finished(self, task: BackgroundTask, *, emit: bool = True) -> None:
        task.ended = time.time()
        task.done.set()
        if emit:
            self._emit("task_notification", {
                "task_id": task.id, "tool_use_id": task.tool_use_id, "status": task.status.sdk_status,
                "output_file": str(task.output_file), "summary": task.summary(),
                "usage": {"total_tokens": 0, "tool_uses": 0,
                          "duration_ms": int(((task.ended or time.time()) - task.started) * 1000)}})
        for listener in list(self.listeners):
            listener(task)

    # -- reading and stopping ------------------------------------------------------------------------
    def get(self, task_id: str) -> BackgroundTask | None:
        return self.tasks.get(task_id)

    def running(self) -> list[BackgroundTask]:
        return [t for t in self.tasks.values() if t.status is TaskStatus.RUNNING]

    async def wait(self, task: BackgroundTask, timeout_s: float) -> bool:
        try:
            await asyncio.wait_for(asyncio.shield(task.done.wait()), timeout_s)
        except TimeoutError:
            return False
        return True

    async def stop(self, task: BackgroundTask) -> None:
        if task.status is not TaskStatus.RUNNING:
            return
        task.status = TaskStatus.KILLED
        if task.kind is TaskKind.BASH and task.pgid is not None:
            _kill_group(task.pgid, signal.SIGTERM)
            if not await self.wait(task, KILL_GRACE_S):
                _kill_group(task.pgid, signal.SIGKILL)
        else:
            if task.stop_hook is not None:
                task.stop_hook()
            if not await self.wait(task, KILL_GRACE_S) and task.runner is not None:
                task.runner.cancel()
        await self.wait(task, KILL_GRACE_S)

    def kill_all(self) -> int:
        """Stop every running task now (session end); returns how many there were."""
        live = self.running()
        for task in live:
            task.status = TaskStatus.KILLED
            if task.pgid is not None:
                _kill_group(task.pgid, signal.SIGKILL)
                process_groups.discard(task.pgid)
            elif task.stop_hook is not None:
                task.stop_hook()
            if task.runner is not None and task.kind is TaskKind.AGENT:
                task.runner.cancel()
        return len(live)

    def listing(self) -> list[str]:
        """One line per task for `/bashes`, newest first."""
        lines = []
        for t in sorted(self.tasks.values(), key=lambda t: t.started, reverse=True):
            took = (t.ended or time.time()) - t.started
            code = f", exit {t.exit_code}" if t.exit_code is not None else ""
            lines.append(f"{t.id}  {t.status.value}{code}  {took:.0f}s  {t.kind.value}  "
                         f"{t.command or t.description}")
        return lines
