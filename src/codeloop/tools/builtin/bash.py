"""The Bash tool: one shell command per call, in a working directory that persists.

Owns the process lifecycle: the command runs in its own session (process group) with stdin
from /dev/null; timeout, abort and cancellation kill the whole group; a background child that
keeps the output pipes open cannot hang the call; the shell's final directory (`pwd -P`,
written by an EXIT trap so `exit N` still reports it) becomes the next call's cwd.

When the session has a sandbox (`ctx.sandbox`, a `codeloop.sandbox.runtime.Sandbox`)
the shell runs inside bubblewrap; a sandbox that is enabled but cannot start refuses the call
(fail closed) unless the settings allow the unsandboxed fallback. A call with
`dangerouslyDisableSandbox` (allowed by the permission check) runs outside it; a sandboxed command
that failed for want of network gets a note telling the model so. Every command gets codeloop's
environment without its secrets (`shell_env`), and codeloop's own /proc files are made
unreadable to it before the first one runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
from contextlib import ExitStack
from pathlib import Path
from collections.abc import Callable
from typing import Any, ClassVar

from codeloop.tools import process_groups
from codeloop.tools.base import CURRENT_TOOL_USE_ID, LazyModel, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin import cwd_report
from codeloop.tools.builtin.bash_detach import Detach
from codeloop.tools.builtin.bash_sandbox import _disable, _sandboxed, network_hint
from codeloop.tools.builtin.shell_env import command_environment, protect_process, shell_path

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
# Bytes kept in memory per stream (head and tail each); the rest is counted, not stored.
KEEP_BYTES = 256 * 1024
KILL_GRACE_S = 2.0
# How long pipes may stay open after the shell exits before we assume a background child holds them.
PIPE_DRAIN_S = 1.0
POLL_S = 0.02

DESCRIPTION = f"""\
Executes a given bash command and returns its output (stdout, then stderr).

The working directory persists between commands (a `cd` carries over to the next call), but \
shell state such as variables and functions does not. The shell is non-interactive: stdin is \
/dev/null, so never run commands that wait for input (use flags like -y, --no-edit, or pass \
input via files/heredocs). A non-zero exit status is reported as an error with its exit code.

Usage notes:
- Always quote file paths that contain spaces with double quotes.
- Prefer absolute paths and avoid needless `cd`.
- Optional timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}; larger \
values are clamped to the max). On timeout the command and all its child processes are killed.
- Output longer than {MAX_OUTPUT_CHARS} characters is truncated in the middle.
- Do NOT use Bash for what dedicated tools do better: use Glob (not find/ls) to find files, Grep \
(not grep/rg) to search contents, Read (not cat/head/tail) to read files, Edit (not sed/awk) to \
edit and Write (not echo/cat heredocs) to create files.
- To run several independent commands, make several Bash calls in one response; for dependent \
commands chain them with `&&` (or `;` when later ones should run even if earlier ones fail).
- Write a clear, concise description (5-10 words) of what the command does.
- Set `run_in_background` to run a long command (a server, a watcher, a long build) in the \
background: the call returns a task id at once, the output goes to a file, and you are told \
when it ends. Read its output with TaskOutput and stop it with TaskStop. No `&` is needed.
- When the session sandboxes commands, a command that fails only because of the sandbox (no \
network, a read-only path) may be run again with `dangerouslyDisableSandbox: true`: the user is \
asked before it runs outside the sandbox. Do not set it otherwise.
- Never use git commands with -i (interactive) flags, and never push, reset --hard or otherwise \
make destructive changes unless the user explicitly asked for it."""


class _Capture:
    """Drains one pipe, keeping a bounded head and tail so huge output can't exhaust memory."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.sink: int | None = None   # once the command is moved to the background: its output file

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            if self.sink is not None:
                try:
                    os.write(self.sink, chunk)
                except OSError:   # disk full: the task goes on, its file stops growing
                    self.sink = None
            self.total += len(chunk)
            room = KEEP_BYTES - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > KEEP_BYTES:
                    del self.tail[: len(self.tail) - KEEP_BYTES]

    def spill(self, fd: int) -> None:
        """Write what was kept to `fd`, and everything that follows (Ctrl+B: bash_detach)."""
        dropped = self.total - len(self.head) - len(self.tail)
        gap = f"\n... [{dropped} bytes not kept] ...\n".encode() if dropped > 0 else b""
        os.write(fd, bytes(self.head) + gap + bytes(self.tail))
        self.sink = fd

    def recent(self, n: int = 4096) -> bytes:
        return bytes((self.head + self.tail)[-n:]) if self.tail else bytes(self.head[-n:])

    def text(self) -> tuple[str, int]:
        """Decoded output and how many bytes were dropped from its middle.

        The kept head and tail are each far longer than the truncation limit, so the gap always
        falls inside the part `truncate` cuts out anyway.
        """
        dropped = self.total - len(self.head) - len(self.tail)
        return (self.head + self.tail).decode("utf-8", errors="replace"), max(dropped, 0)


def truncate(text: str, dropped: int = 0, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Keep head and tail of long output with a marker saying how much was cut."""
    if len(text) <= limit and not dropped:
        return text
    keep = min(limit, len(text)) // 2
    head, tail = text[:keep], text[len(text) - keep :]
    cut = len(text) - 2 * keep + dropped
    return f"{head}\n\n... [{cut} characters truncated] ...\n\n{tail}"


def _kill_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def _terminate_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, give it a moment, then SIGKILL whatever is left."""
    pgid = proc.pid  # start_new_session makes the shell its group leader
    if not _kill_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + KILL_GRACE_S
    while proc.returncode is None and loop.time() < deadline:
        await asyncio.sleep(POLL_S)
    # Children may ignore SIGTERM or outlive the shell; the group id stays theirs until they exit.
    _kill_group(pgid, signal.SIGKILL)


async def _reaped(proc: asyncio.subprocess.Process) -> None:
    """Wait (briefly) for a SIGKILLed shell to be reaped, so no zombie outlives the call."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + KILL_GRACE_S
    while proc.returncode is None and loop.time() < deadline:
        await asyncio.sleep(POLL_S)


def _script(command: str, cwd_file: str) -> str:
    # An EXIT trap runs on normal completion, `exit N` and `set -e` failures alike, and leaves
    # the shell's exit status untouched.
    return f"{cwd_report.script_line(cwd_file)}trap __codeloop_cwd EXIT\n{command}\n"


class BashTool(Tool):
    name: ClassVar[str] = "Bash"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[Any] = LazyModel("codeloop.tools.builtin.bash_input", "BashInput")

    def is_read_only(self, inp: Any) -> bool:
        # Only commands the shell scanner proves read-only (`ls`, `git status`…): plan mode may run
        # them, and they may run beside other read-only tools.
        from codeloop.permissions.bash import is_read_only

        command = getattr(inp, "command", None)
        return is_read_only(command) if command else False

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        protect_process()   # before the model's first command: codeloop's /proc files out of its reach
        if inp.run_in_background:
            return await self._background(inp, ctx)
        timeout_ms = min(inp.timeout or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
        notes: list[str] = []
        cwd = ctx.cwd
        if not cwd.is_dir():
            notes.append(f"(Working directory {cwd} no longer exists; ran in {ctx.project_dir}.)")
            cwd = ctx.cwd = ctx.project_dir

        lease = cwd_report.take(ctx.session_dir if ctx.session_dir and ctx.session_dir.is_dir() else None)
        lease.spent = True   # until the shell is known to have ended normally
        with ExitStack() as held:   # what the command needs while it runs (moved on with it by Ctrl+B)
            held.callback(lease.release)
            prefix, env, fds, undone, release = held.enter_context(
                _sandboxed(inp.command, cwd, lease.path, ctx.sandbox, _disable(inp), gated=True))
            rc, out, err, outcome = await self._run(inp.command, cwd, lease.path, timeout_ms, ctx, prefix, env, fds,
                                                    release)
            if isinstance(outcome, Detach):   # Ctrl+B: it goes on in the background, holding what it needs
                return outcome.adopt(inp.command, inp.description or "", held.pop_all(), undone, ctx)
            sandboxed = bool(prefix)
            lease.spent = outcome not in (None, "orphans")   # orphans: the shell itself exited
            new_cwd = lease.read()
        notes += undone
        if new_cwd and Path(new_cwd).is_dir():
            ctx.cwd = Path(new_cwd)

        (stdout, out_dropped), (stderr, err_dropped) = out, err
        stdout, stderr = stdout.rstrip("\n"), stderr.rstrip("\n")
        combined = "\n".join(p for p in (stdout, stderr) if p)
        text = truncate(combined, out_dropped + err_dropped)
        if outcome == "timeout":
            notes.append(f"Command timed out after {timeout_ms / 1000:g}s")
        elif outcome == "abort":
            notes.append("Command was aborted")
        elif outcome == "orphans":
            notes.append(
                "(The command exited but a background process kept its output open; its process "
                "group was killed. Redirect background output, e.g. `cmd > log 2>&1 &`.)"
            )
        killed = outcome in ("timeout", "abort")
        if rc != 0 and not killed:
            notes.append(f"Exit code {rc}")
            if sandboxed and (hint := network_hint(ctx.sandbox, combined)):
                notes.append(hint)
        if notes:
            text = "\n".join([text, *notes]) if text else "\n".join(notes)
        return ToolResult(
            text or "(no output)",
            is_error=killed or rc != 0,
            data={
                "stdout": truncate(stdout, out_dropped),
                "stderr": truncate(stderr, err_dropped),
                "exitCode": rc,
                "interrupted": killed,
                "cwd": str(ctx.cwd),
            },
        )

    async def _background(self, inp: Any, ctx: ToolContext) -> ToolResult:
        """Start the command as a background task; under the sandbox, bwrap is that task."""
        from codeloop.tools.base import CURRENT_TOOL_USE_ID
        from codeloop.tools.builtin.bash_background import registry

        cwd = ctx.cwd if ctx.cwd.is_dir() else ctx.project_dir
        guard = _sandboxed(inp.command, cwd, None, ctx.sandbox, _disable(inp))
        prefix, env, fds, undone, _ = guard.__enter__()  # the sandbox's layout stays up until the task ends
        output: list[Path] = []

        def cleanup() -> None:
            guard.__exit__(None, None, None)
            if undone and output:               # what the sandbox undid, where TaskOutput reads
                try:
                    with open(output[0], "a", encoding="utf-8") as fh:
                        fh.write("\n" + "\n".join(undone) + "\n")
                except OSError:
                    pass
        try:
            task = await registry(ctx).start_shell(
                inp.command, [*prefix, shell_path(), "-c", inp.command], cwd=cwd,
                env={**command_environment(ctx.env_pass), **env},
                description=inp.description or "", tool_use_id=CURRENT_TOOL_USE_ID.get(), cleanup=cleanup,
                pass_fds=fds)
        except OSError as e:
            cleanup()
            raise ToolError(f"Could not start the shell in {cwd}: {e.strerror or e}") from e
        except BaseException:
            cleanup()
            raise
        output.append(task.output_file)
        return ToolResult(f"Command running in background with ID: {task.id}. Output is being written to: "
                          f"{task.output_file}", data={"backgroundTaskId": task.id, "stdout": "", "stderr": "",
                                                       "interrupted": False, "cwd": str(ctx.cwd)})

    async def _run(
        self, command: str, cwd: Path, cwd_file: str, timeout_ms: int, ctx: ToolContext,
        prefix: list[str] | None = None, env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = (),
        release: Callable[[], None] | None = None,
    ) -> tuple[int, tuple[str, int], tuple[str, int], str | Detach | None]:
        """Returns (exit code, stdout, stderr, outcome) with outcome None|timeout|abort|orphans, or
        the `Detach` holding the still running command when the user moved it to the background.
        `release`: a gated sandbox's go-ahead, given as soon as the process exists (bwrap sets the
        sandbox up meanwhile); when it refuses, the waiting process is killed and the call refused."""
        try:
            proc = await asyncio.create_subprocess_exec(
                *(prefix or []),
                shell_path(),
                "-c",
                _script(command, cwd_file),
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={**command_environment(ctx.env_pass), **(env or {})},
                pass_fds=pass_fds,
            )
        except OSError as e:
            raise ToolError(f"Could not start the shell in {cwd}: {e.strerror or e}") from e
        process_groups.add(proc.pid)   # killed at codeloop's exit if this call has not ended it by then
        if release is not None:
            try:
                release()
            except ToolError:
                _kill_group(proc.pid, signal.SIGKILL)   # still waiting at the gate: nothing of it ran
                await proc.wait()
                process_groups.discard(proc.pid)
                raise
        cap_out, cap_err = _Capture(), _Capture()
        assert proc.stdout is not None and proc.stderr is not None
        readers = asyncio.gather(cap_out.drain(proc.stdout), cap_err.drain(proc.stderr))
        live_id = CURRENT_TOOL_USE_ID.get()   # progress for the front end while the command runs
        if live_id:
            ctx.live_output[live_id] = lambda: (cap_out.recent() + cap_err.recent()).decode("utf-8", "replace")
        abort_wait = asyncio.ensure_future(ctx.abort.wait())
        outcome: str | None = None
        detach = Detach(ctx, live_id)   # Ctrl+B may move it to the background while it runs
        moved = None
        try:
            outcome = await self._wait_exit(proc, timeout_ms / 1000, abort_wait, readers, detach.requested)
            if outcome == "background":
                moved = detach.hold(proc, [cap_out, cap_err], readers)
                return -1, ("", 0), ("", 0), moved
            if outcome is not None:
                await _terminate_group(proc)
            try:
                await asyncio.wait_for(asyncio.shield(readers), PIPE_DRAIN_S)
            except TimeoutError:
                if outcome is None:
                    outcome = "orphans"
                await _terminate_group(proc)
                try:
                    await asyncio.wait_for(asyncio.shield(readers), KILL_GRACE_S)
                except TimeoutError:
                    pass  # a grandchild escaped the group (setsid); stop listening to it
        except asyncio.CancelledError:
            _kill_group(proc.pid, signal.SIGKILL)
            await _reaped(proc)
            raise
        finally:
            ctx.live_output.pop(live_id or "", None)
            abort_wait.cancel()
            detach.close()
            if moved is None and not readers.done():
                readers.cancel()
                transport = getattr(proc, "_transport", None)
                if transport is not None:
                    transport.close()
            # Whatever went wrong above, the shell must not outlive the call (unless it was moved on).
            if moved is None and proc.returncode is None:
                _kill_group(proc.pid, signal.SIGKILL)
            if moved is None:
                process_groups.discard(proc.pid)
        rc = proc.returncode if proc.returncode is not None else -1
        return rc, cap_out.text(), cap_err.text(), outcome

    @staticmethod
    async def _wait_exit(
        proc: asyncio.subprocess.Process,
        timeout_s: float,
        abort_wait: asyncio.Future,
        readers: asyncio.Future,
        detach: asyncio.Future | None = None,
    ) -> str | None:
        # proc.wait() also waits for the pipes to close, which a background child can hold open
        # forever: until they close, returncode (set as soon as the shell itself is reaped) is
        # polled, waking on the pipes closing; once they are closed, wait() is waited on.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        woken = {abort_wait} if detach is None else {abort_wait, detach}
        exited: asyncio.Future | None = None
        try:
            while proc.returncode is None:
                if abort_wait.done():
                    return "abort"
                if detach is not None and detach.done():
                    return "background"
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return "timeout"
                if readers.done():
                    # the pipes are closed, so nothing can hold wait() any more: it wakes when the
                    # shell is reaped (a timed poll ended on a timer tick, ~4 ms, after every command)
                    exited = exited or asyncio.ensure_future(proc.wait())
                    await asyncio.wait({*woken, exited}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                else:
                    await asyncio.wait({*woken, readers}, timeout=min(POLL_S, remaining),
                                       return_when=asyncio.FIRST_COMPLETED)
        finally:
            if exited is not None and not exited.done():
                exited.cancel()
        return None
