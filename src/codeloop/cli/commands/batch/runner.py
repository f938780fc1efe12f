"""One batch task, start to finish: workspace, the real headless loop, result line.

Both backends call `run_task` (the local pool in a thread, Ray in a remote task), so what a task
is and what its result line holds is decided here and only here. The loop runs as its own
process, `python -m codeloop -p --output-format stream-json`, in the task's workspace with its
own session id (hence its own transcript). Stream-json rather than json: the `api_retry` lines
tell the batch about 429/529 answers while the task still runs, for the shared backoff; the
last line is the same result object `--output-format json` prints.

The child gets a session of its own, so a terminal Ctrl+C reaches the batch only; the batch
decides whether to interrupt it. It also dies with its worker (PR_SET_PDEATHSIG on Linux), so
a killed batch leaves no loop running behind it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codeloop.cli.commands.batch.results import Outcome
from codeloop.cli.commands.batch.tasks import TaskSpec
from codeloop.cli.commands.batch.workspace import WorkspaceError, diff, folder_name, prepare

RATE_LIMIT_ERRORS = ("rate_limit", "overloaded")
INTERRUPT_GRACE_S = 20.0
_POLL_S = 0.2
# Lifted from the loop's json result to the top of a result line, for jq and the report.
RESULT_KEYS = ("subtype", "stop_reason", "num_turns", "total_cost_usd", "usage", "duration_ms", "duration_api_ms")
_STDERR_TAIL = 800
_SUBTYPE_OUTCOME = {"success": Outcome.SUCCESS, "error_max_turns": Outcome.MAX_TURNS,
                    "error_max_budget_usd": Outcome.OVER_BUDGET}


class Control(Protocol):
    """What a running task shares with the batch: the interrupt flag and the rate-limit backoff."""

    def interrupted(self) -> bool: ...
    def backoff(self, seconds: float) -> None: ...


@dataclass
class RunContext:
    """Batch-wide settings a task needs; plain data so it travels to Ray workers."""
    batch_dir: str
    python: str = field(default_factory=lambda: sys.executable)
    env: dict[str, str] = field(default_factory=dict)  # added to the worker's environment
    setup_timeout_s: float = 900.0
    task_timeout_s: float | None = None


def command(spec: TaskSpec, python: str, session_id: str) -> list[str]:
    """The codeloop command line for a task; the prompt goes on stdin (no argv length limit)."""
    cmd = [python, "-m", "codeloop", "-p", "--output-format", "stream-json", "--verbose",
           "--session-id", session_id]
    if spec.model:
        cmd += ["--model", spec.model]
    if spec.max_turns:
        cmd += ["--max-turns", str(spec.max_turns)]
    if spec.max_budget_usd:
        cmd += ["--max-budget-usd", repr(spec.max_budget_usd)]
    if spec.permission_mode:
        cmd += ["--permission-mode", spec.permission_mode]
    if spec.allowed_tools:
        cmd += ["--allowedTools", ",".join(spec.allowed_tools)]
    if spec.disallowed_tools:
        cmd += ["--disallowedTools", ",".join(spec.disallowed_tools)]
    if spec.json_schema:
        cmd += ["--json-schema", spec.json_schema]
    return cmd


def _die_with_parent():
    """preexec_fn: the loop is SIGKILLed when the thread that started it goes (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    prctl = libc.prctl  # looked up before fork: the child only makes the call

    def hook() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    return hook


def transcript_path(ws: Path, session_id: str, env: dict[str, str]) -> Path:
    from codeloop.session import store
    cfg = env.get("CODELOOP_CONFIG_DIR")
    root = Path(cfg).expanduser() if cfg else Path(env.get("HOME") or Path.home()) / ".codeloop"
    return root / "projects" / store.project_key(ws) / f"{session_id}.jsonl"


class _Watch:
    """Reads the loop's stream-json lines while watching the interrupt flag and the deadline."""

    def __init__(self, proc: subprocess.Popen, control: Control, timeout_s: float | None) -> None:
        self.proc, self.control = proc, control
        self.deadline = time.monotonic() + timeout_s if timeout_s else None
        self.result: dict[str, Any] | None = None
        self.rate_limited = 0
        self.stopped: Outcome | None = None  # INTERRUPTED or TIMED_OUT when the batch stopped it
        self._signalled_at: float | None = None
        self._buf = b""

    def _line(self, raw: bytes) -> None:
        try:
            obj = json.loads(raw)
        except ValueError:
            return
        if not isinstance(obj, dict):
            return
        if obj.get("type") == "result":
            self.result = obj
        elif obj.get("type") == "system" and obj.get("subtype") == "api_retry" \
                and obj.get("error") in RATE_LIMIT_ERRORS:
            self.rate_limited += 1
            self.control.backoff(max(1.0, (obj.get("retry_delay_ms") or 0) / 1000))

    def _check_stop(self) -> None:
        now = time.monotonic()
        if self._signalled_at is None:
            if self.control.interrupted():
                self.stopped = Outcome.INTERRUPTED
            elif self.deadline is not None and now >= self.deadline:
                self.stopped = Outcome.TIMED_OUT
            if self.stopped is not None:
                self._signalled_at = now
                self._signal(signal.SIGINT)  # the loop aborts cleanly and still prints its result
        elif now - self._signalled_at > INTERRUPT_GRACE_S:
            self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        try:
            self.proc.send_signal(signum)
        except ProcessLookupError:
            pass

    def run(self) -> None:
        assert self.proc.stdout is not None  # run_task opens it as a pipe
        fd = self.proc.stdout.fileno()
        while True:
            ready, _, _ = select.select([fd], [], [], _POLL_S)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self._buf += chunk
                *lines, self._buf = self._buf.split(b"\n")
                for raw in lines:
                    if raw.strip():
                        self._line(raw)
            self._check_stop()
        if self._buf.strip():
            self._line(self._buf)
        while True:
            try:
                self.proc.wait(timeout=_POLL_S)
                return
            except subprocess.TimeoutExpired:
                self._check_stop()


def base_record(spec: TaskSpec) -> dict[str, Any]:
    """Every result line has every key (None when unknown), whatever the outcome."""
    rec: dict[str, Any] = {"id": spec.id, "kind": spec.kind.value, "outcome": None, "model": spec.model,
                           "started_at": time.time(), "host": socket.gethostname()}
    rec.update(dict.fromkeys(RESULT_KEYS + ("exit_code", "rate_limited", "error", "diff", "workspace",
                                            "diff_error", "transcript", "session_id", "stderr_log", "result",
                                            "timings_ms")))
    return rec


def _stderr_tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-_STDERR_TAIL:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


def run_task(spec: TaskSpec, ctx: RunContext, control: Control) -> dict[str, Any]:
    """Run one task to its result line. Never raises: every failure is an outcome."""
    t0 = time.monotonic()
    rec = base_record(spec)
    try:
        _run(spec, ctx, control, rec)
    except WorkspaceError as exc:
        rec.update(outcome=Outcome.SETUP_FAILED.value, error=str(exc))
    except Exception as exc:  # a bug or an OS failure in the batch itself: still one result line
        rec.update(outcome=Outcome.CRASHED.value, error=f"batch worker error: {type(exc).__name__}: {exc}")
    rec["wall_ms"] = int((time.monotonic() - t0) * 1000)
    rec["finished_at"] = time.time()
    return rec


def _run(spec: TaskSpec, ctx: RunContext, control: Control, rec: dict[str, Any]) -> None:
    from codeloop.session.store import new_session_id

    batch_dir = Path(ctx.batch_dir)
    # A task queued on a busy cluster may start only after the batch was interrupted: do nothing then.
    if control.interrupted():
        rec.update(outcome=Outcome.INTERRUPTED.value, error="interrupted before the task started")
        return
    t0 = time.monotonic()
    ws, baseline = prepare(spec, batch_dir, setup_timeout=ctx.setup_timeout_s)
    ws = ws.resolve()
    timings = rec["timings_ms"] = {"workspace": _ms_since(t0)}
    rec["workspace"] = str(ws)
    if control.interrupted():
        rec.update(outcome=Outcome.INTERRUPTED.value, error="interrupted before the loop started")
        return
    sid = new_session_id()
    env = {**os.environ, **ctx.env}
    logs = batch_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    err_path = logs / f"{folder_name(spec.id)}.stderr.log"
    rec.update(session_id=sid, stderr_log=str(err_path))
    t0 = time.monotonic()
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(command(spec, ctx.python, sid), cwd=ws, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, start_new_session=True,
                                preexec_fn=_die_with_parent())
        assert proc.stdin is not None and proc.stdout is not None  # both pipes, just above
        try:
            proc.stdin.write(spec.prompt.encode("utf-8"))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        watch = _Watch(proc, control, ctx.task_timeout_s)
        try:
            watch.run()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
    timings["loop_process"] = _ms_since(t0)
    _fill(rec, watch, proc.returncode, err_path)
    transcript = transcript_path(ws, sid, env)
    rec["transcript"] = str(transcript) if transcript.exists() else None
    t0 = time.monotonic()
    try:
        rec["diff"] = diff(ws, baseline)
    except WorkspaceError as exc:  # e.g. the agent removed .git: the loop's outcome still stands
        rec["diff_error"] = str(exc)
    timings["diff"] = _ms_since(t0)


def _ms_since(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


def _signame(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _fill(rec: dict[str, Any], watch: _Watch, code: int, err_path: Path) -> None:
    res = watch.result
    rec["exit_code"] = code
    rec["rate_limited"] = watch.rate_limited
    if res is not None:
        rec["result"] = res
        for key in RESULT_KEYS:
            rec[key] = res.get(key)
        if not rec.get("model") and res.get("modelUsage"):
            rec["model"] = next(iter(res["modelUsage"]))
    if watch.stopped is not None:
        outcome = watch.stopped
    elif res is None:
        outcome = Outcome.CRASHED
    elif code in (130, 143) or res.get("terminal_reason", "").startswith("aborted"):
        outcome = Outcome.INTERRUPTED
    else:
        outcome = _SUBTYPE_OUTCOME.get(res.get("subtype", ""), Outcome.FAILED)
        if outcome is Outcome.SUCCESS and res.get("is_error"):   # an API error: subtype "success", is_error
            outcome = Outcome.FAILED
    rec["outcome"] = outcome.value
    if outcome is Outcome.SUCCESS:
        rec["error"] = None
        return
    if res is not None and (res.get("errors") or res.get("is_error") and res.get("result")):
        rec["error"] = "; ".join(str(e) for e in res.get("errors") or [res["result"]])
    elif code < 0:
        rec["error"] = f"codeloop was killed by {_signame(-code)} before it printed a result"
    else:
        rec["error"] = f"codeloop exited with status {code} without a result"
    if watch.stopped is Outcome.TIMED_OUT:
        rec["error"] = f"timed out; {rec['error']}"
    tail = _stderr_tail(err_path)
    if tail and outcome in (Outcome.CRASHED, Outcome.FAILED):
        rec["error"] += f"\n--- stderr (tail) ---\n{tail}"
