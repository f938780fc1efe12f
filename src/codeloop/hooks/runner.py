"""Running hooks: pick the commands that match an event, run them in parallel, read their answers.

Each command runs through the shell (bash when available, as Claude Code documents hook commands
as bash) in its own process group, with the event JSON on stdin, cwd = the project, and
`CLAUDE_PROJECT_DIR` / `CODELOOP_PROJECT_DIR` in the environment. A hook that outlives its
timeout (default 60 s) is killed together with everything it started and reported as a
non-blocking error; a cancelled `run()` (user interrupt) kills its hooks the same way.
In-process callbacks (`callbacks`, a `CallbackSource` such as the SDK's registrations) run
alongside the commands, each bounded by its own timeout. Every payload carries the common fields
(session, transcript, cwd, permission mode) and, once a prompt was submitted, its `prompt_id`.
An `observer` (`--include-hook-events`) is told when each hook starts and what it answered.
What the answers mean is `outcome.py`'s business.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.hooks.events import (CallbackSource, HookCallback, HookCommand, HookEvent, build_input,
                                   matching_commands)
from codeloop.hooks.events import match_value as event_match_value
from codeloop.hooks.outcome import HookOutcome, HookProcessResult, aggregate

# After a kill, how long to wait for the pipes to close. Only a grandchild that escaped the
# process group (setsid) can hold them longer, and it must not hang the harness.
_DRAIN_AFTER_KILL_S = 5.0


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        if hasattr(os, "killpg"):
            # The hook leads its own session, so its pid is the group id: this reaches
            # `sleep`s and pipelines the shell started, not just the shell.
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - non-POSIX
            proc.kill()
    except ProcessLookupError:
        pass


async def _drain(comm: asyncio.Future[tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
    try:
        return await asyncio.wait_for(comm, _DRAIN_AFTER_KILL_S)
    except (TimeoutError, OSError):
        comm.cancel()
        return b"", b""


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    # asyncio closes a subprocess transport only once every pipe callback has run; when the loop
    # stops first (end of a test, a short-lived print-mode run) the transport's __del__ then
    # touches a closed loop. Closing it here is idempotent and kills nothing that has exited.
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


def _decode(b: bytes | None) -> str:
    return (b or b"").decode("utf-8", errors="replace")


class HookRunner:
    """Runs the configured hooks for one session.

    `config` is either the merged settings dict or just its `hooks` value;
    `permission_mode_getter` is read at each run, so mode changes mid-session are reported.
    """

    def __init__(self, config: dict[str, Any], *, session_id: str, transcript_path: str | Path,
                 cwd: str | Path, permission_mode_getter: Callable[[], Any],
                 env: dict[str, str] | None = None) -> None:
        self.config = config or {}
        self.session_id = session_id
        self.transcript_path = str(transcript_path)
        self.cwd = os.path.abspath(cwd)
        self._mode = permission_mode_getter
        self._extra_env = dict(env or {})
        self.callbacks: CallbackSource = CallbackSource()
        self.prompt_id: str | None = None   # the prompt being processed (set by the conversation)
        # hook_started / hook_response records (Claude Code's --include-hook-events shapes)
        self.observer: Callable[[dict[str, Any]], None] | None = None

    def commands_for(self, event: HookEvent | str, match_value: str | None = None) -> list[HookCommand]:
        return matching_commands(self.config, HookEvent(event), match_value)

    def has_hooks(self, event: HookEvent | str, match_value: str | None = None) -> bool:
        event = HookEvent(event)
        return bool(self.commands_for(event, match_value) or self.callbacks.callbacks_for(event, match_value))

    async def run(self, event: HookEvent | str, payload: dict[str, Any] | None = None, *,
                  match_value: str | None = None) -> HookOutcome:
        event = HookEvent(event)
        payload = dict(payload or {})
        if match_value is None:
            match_value = event_match_value(event, payload)
        hooks = matching_commands(self.config, event, match_value)
        callbacks = self.callbacks.callbacks_for(event, match_value)
        if not hooks and not callbacks:
            return HookOutcome()
        mode = self._mode()
        data = build_input(event, payload, session_id=self.session_id, transcript_path=self.transcript_path,
                           cwd=self.cwd, permission_mode=str(getattr(mode, "value", mode)))
        if self.prompt_id:
            data.setdefault("prompt_id", self.prompt_id)
        stdin = json.dumps(data, default=str).encode("utf-8")
        jobs = [*(self._run_one(h, stdin) for h in hooks), *(self._call_one(cb, data) for cb in callbacks)]
        if self.observer is not None:
            name = f"{event.value}:{match_value}" if match_value else event.value
            jobs = [self._observed(job, event, name) for job in jobs]
        done: list[Any] = await asyncio.gather(*jobs)  # commands' results, then callbacks' (two types)
        return aggregate(event, list(done[:len(hooks)]), list(done[len(hooks):]))

    async def _observed(self, job: Any, event: HookEvent, name: str) -> Any:
        import uuid

        hook_id = str(uuid.uuid4())
        base = {"hook_id": hook_id, "hook_name": name, "hook_event": event.value}
        self._tell({"subtype": "hook_started", **base})
        result = await job
        if isinstance(result, tuple):  # a callback: (hook, output, error)
            out, err = result[1], result[2]
            self._tell({"subtype": "hook_response", **base, "output": json.dumps(out or {}), "stdout": "",
                        "stderr": err or "", "exit_code": 0 if err is None else 1,
                        "outcome": "success" if err is None else "error"})
        else:
            self._tell({"subtype": "hook_response", **base, "output": result.stdout, "stdout": result.stdout,
                        "stderr": result.stderr, "exit_code": result.exit_code,
                        "outcome": "success" if result.exit_code == 0 else "error"})
        return result

    def _tell(self, record: dict[str, Any]) -> None:
        try:
            self.observer(record)  # type: ignore[misc]
        except Exception:  # noqa: BLE001 — a front end's failure must not change what the hook decided
            pass

    @staticmethod
    async def _call_one(cb: HookCallback, data: dict[str, Any]) -> tuple[HookCallback, dict | None, str | None]:
        try:
            out = await asyncio.wait_for(cb.call(dict(data)), cb.timeout)
        except TimeoutError:
            return cb, None, f"timed out after {cb.timeout:g}s"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 — whatever the callback raised is its failure
            return cb, None, str(exc) or type(exc).__name__
        if out is not None and not isinstance(out, dict):
            return cb, None, f"answered {type(out).__name__}, not a JSON object"
        return cb, out, None

    def _env(self) -> dict[str, str]:
        env = {**os.environ, **self._extra_env}
        env["CLAUDE_PROJECT_DIR"] = self.cwd
        env["CODELOOP_PROJECT_DIR"] = self.cwd
        return env

    def _shell_path(self) -> str | None:
        from codeloop.shellpath import bash_path

        return bash_path()   # None: /bin/sh

    async def _run_one(self, hook: HookCommand, stdin: bytes) -> HookProcessResult:
        try:
            proc = await asyncio.create_subprocess_shell(
                hook.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.cwd, env=self._env(),
                start_new_session=True, executable=self._shell_path())
        except OSError as e:
            return HookProcessResult(hook, None, start_error=str(e))
        comm = asyncio.ensure_future(proc.communicate(stdin))
        try:
            # shield: on timeout we still want what the hook wrote, after the kill closes its pipes.
            out, err = await asyncio.wait_for(asyncio.shield(comm), hook.timeout)
        except TimeoutError:
            _kill_group(proc)
            out, err = await _drain(comm)
            return HookProcessResult(hook, None, _decode(out), _decode(err), timed_out=True)
        except asyncio.CancelledError:
            _kill_group(proc)
            comm.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(proc.wait()), _DRAIN_AFTER_KILL_S)
            raise
        finally:
            _close_transport(proc)
        return HookProcessResult(hook, proc.returncode, _decode(out), _decode(err))
