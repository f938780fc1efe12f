"""One batch task, start to finish: workspace, the real headless loop, result line.

Both backends call `run_task` (the local pool in a thread, Ray in a remote task), so what a task
is and what its result line holds is decided here and only here. The loop runs as its own
process, `python -m codeloop -p --output-format stream-json`, in the task's workspace with its
own session id (hence its own transcript), or `--resume`s the session of its interrupted run
(`resume.py`). Stream-json rather than json: the lines tell the batch, while the task still
runs, about 429/529 answers (the shared backoff) and each model call's usage (the live cost
behind --max-total-usd; `watch.py`); the last line is the result `--output-format json` prints.

Where a task runs, its workspace goes under the context's work folder (the batch folder on this
machine or a --shared-dir; a node-local temp folder on a Ray cluster), and what the driver keeps
(the transcript, the stderr log when not already on the driver's disk) travels back inside the
result as `_files`, which the driver writes under its batch folder. The workspace is then kept
or removed (--keep-workspaces) and its size is on the result line.

The child gets a session of its own, so a terminal Ctrl+C reaches the batch only; the batch
decides whether to interrupt it. It also dies with its worker (PR_SET_PDEATHSIG on Linux), so
a killed batch or a lost node leaves no loop running behind it.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.cli.commands.batch.budget import StopCause
from codeloop.cli.commands.batch.results import Outcome
from codeloop.cli.commands.batch.resume import (CONTINUE_PROMPT, ResumePlan, Start, restore_transcript,
                                                transcript_problem, workspace_problem)
from codeloop.cli.commands.batch.tasks import TaskSpec
from codeloop.cli.commands.batch.watch import Control, Watch
from codeloop.cli.commands.batch.workspace import (KeepWorkspaces, WorkspaceError, diff, disk_usage, folder_name,
                                                   prepare, private_git, remove)

# Lifted from the loop's json result to the top of a result line, for jq and the report.
RESULT_KEYS = ("subtype", "stop_reason", "num_turns", "total_cost_usd", "usage", "duration_ms", "duration_api_ms")
_STDERR_TAIL = 800
_SUBTYPE_OUTCOME = {"success": Outcome.SUCCESS, "error_max_turns": Outcome.MAX_TURNS,
                    "error_max_budget_usd": Outcome.OVER_BUDGET}
_STOP_OUTCOME = {StopCause.INTERRUPT: Outcome.INTERRUPTED, StopCause.TIMEOUT: Outcome.TIMED_OUT,
                 StopCause.BATCH_BUDGET: Outcome.OVER_BUDGET}
FILES_KEY = "_files"  # {path relative to the driver's batch folder: text}; popped by the driver
NOT_STARTED_KEY = "_not_started"  # the batch's budget was reached before this task did anything


@dataclass
class RunContext:
    """Batch-wide settings a task needs; plain data so it travels to Ray workers."""
    batch_dir: str                     # the driver's batch folder
    python: str = field(default_factory=lambda: sys.executable)
    env: dict[str, str] = field(default_factory=dict)  # added to the worker's environment
    setup_timeout_s: float = 900.0
    task_timeout_s: float | None = None
    work_dir: str | None = None        # workspaces, clone cache, logs; None: a node-local temp folder
    keep: str = KeepWorkspaces.FAILED.value

    def work_root(self) -> Path:
        if self.work_dir:
            return Path(self.work_dir)
        key = hashlib.sha1(self.batch_dir.encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / "codeloop-batch" / key


def command(spec: TaskSpec, python: str, session_id: str, *, resume: bool = False) -> list[str]:
    """The codeloop command line for a task; the prompt goes on stdin (no argv length limit)."""
    cmd = [python, "-m", "codeloop", "-p", "--output-format", "stream-json", "--verbose",
           "--resume" if resume else "--session-id", session_id]
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
    """preexec_fn: the loop is SIGKILLed when the thread that started it goes, and hears SIGINT
    even when its worker blocks or ignores it (a Ray worker blocks it; the mask and an ignored
    disposition survive exec, and the loop's clean interrupt is its SIGINT handler). Linux only."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    prctl, set_handler = libc.prctl, libc.signal  # looked up before fork: the child only makes the calls

    def hook() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        set_handler(signal.SIGINT, 0)  # SIG_DFL: Python installs its own handler at start-up
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    return hook


def transcript_path(ws: Path, session_id: str, env: dict[str, str]) -> Path:
    from codeloop.session import store
    cfg = env.get("CODELOOP_CONFIG_DIR")
    root = Path(cfg).expanduser() if cfg else Path(env.get("HOME") or Path.home()) / ".codeloop"
    return root / "projects" / store.project_key(ws) / f"{session_id}.jsonl"


def base_record(spec: TaskSpec) -> dict[str, Any]:
    """Every result line has every key (None when unknown), whatever the outcome."""
    rec: dict[str, Any] = {"id": spec.id, "kind": spec.kind.value, "outcome": None, "model": spec.model,
                           "started_at": time.time(), "host": socket.gethostname(), "start": Start.FRESH.value}
    rec.update(dict.fromkeys(RESULT_KEYS + ("exit_code", "rate_limited", "error", "diff", "workspace",
                                            "diff_error", "transcript", "session_id", "stderr_log", "result",
                                            "timings_ms", "stopped_by", "restart_reason", "baseline",
                                            "session_transcript", "workspace_kept", "workspace_bytes", "node")))
    return rec


def _stderr_tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-_STDERR_TAIL:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


def run_task(spec: TaskSpec, ctx: RunContext, control: Control, resume: ResumePlan | None = None,
             node: str | None = None) -> dict[str, Any]:
    """Run one task to its result line. Never raises: every failure is an outcome."""
    t0 = time.monotonic()
    rec = base_record(spec)
    rec["node"] = node
    key = uuid.uuid4().hex  # this attempt's entry in the batch's ledger
    try:
        _run(spec, ctx, control, rec, resume, key)
    except WorkspaceError as exc:
        rec.update(outcome=Outcome.SETUP_FAILED.value, error=str(exc))
    except Exception as exc:  # a bug or an OS failure in the batch itself: still one result line
        rec.update(outcome=Outcome.CRASHED.value, error=f"batch worker error: {type(exc).__name__}: {exc}")
    if isinstance(rec.get("total_cost_usd"), (int, float)):
        control.spend(key, float(rec["total_cost_usd"]))  # the loop's own total is the final word
    try:
        _finish_workspace(rec, KeepWorkspaces(ctx.keep))
    except OSError as exc:
        rec["error"] = (rec.get("error") or "") + f"\nworkspace cleanup failed: {exc}"
    rec["wall_ms"] = int((time.monotonic() - t0) * 1000)
    rec["finished_at"] = time.time()
    return rec


def _finish_workspace(rec: dict[str, Any], keep: KeepWorkspaces) -> None:
    if not rec.get("workspace"):
        return
    t0 = time.monotonic()
    ws = Path(rec["workspace"])
    rec["workspace_bytes"] = disk_usage(ws) + disk_usage(private_git(ws))
    rec["workspace_kept"] = keep.keeps(rec.get("outcome") == Outcome.SUCCESS.value)
    if not rec["workspace_kept"]:
        remove(ws)
    if rec.get("timings_ms") is not None:
        rec["timings_ms"]["cleanup"] = _ms_since(t0)


def _start(spec: TaskSpec, ctx: RunContext, rec: dict[str, Any], resume: ResumePlan | None,
           env: dict[str, str]) -> tuple[Path, str, str, bool]:
    """The workspace, baseline, session id, and whether the session is resumed."""
    from codeloop.session.store import new_session_id

    if resume is not None:
        reason = resume.refused or workspace_problem(resume, private_git(Path(resume.workspace or ".")))
        if reason is None:
            assert resume.workspace and resume.session_id and resume.baseline  # checked on the driver
            ws = Path(resume.workspace)
            path = transcript_path(ws, resume.session_id, env)
            restore_transcript(resume, path)
            reason = transcript_problem(path)
            if reason is None:
                rec["start"] = Start.RESUMED.value
                return ws, resume.baseline, resume.session_id, True
        rec.update(start=Start.RESTARTED.value, restart_reason=reason)
    t0 = time.monotonic()
    ws, baseline = prepare(spec, ctx.work_root(), setup_timeout=ctx.setup_timeout_s)
    rec["timings_ms"]["workspace"] = _ms_since(t0)
    return ws.resolve(), baseline, new_session_id(), False


def _run(spec: TaskSpec, ctx: RunContext, control: Control, rec: dict[str, Any], resume: ResumePlan | None,
         key: str) -> None:
    # A task queued on a busy cluster may start only after the batch was stopped: do nothing then.
    if control.interrupted() or control.over_budget():
        _not_started(rec, control, "before the task started")
        rec[NOT_STARTED_KEY] = not control.interrupted()  # the budget's doing: the driver holds it back
        return
    env = {**os.environ, **ctx.env}
    timings = rec["timings_ms"] = {}
    ws, baseline, sid, resumed = _start(spec, ctx, rec, resume, env)
    rec.update(workspace=str(ws), baseline=baseline, session_id=sid)
    if control.interrupted() or control.over_budget():
        _not_started(rec, control, "before the loop started")
        return
    logs = ctx.work_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    err_path = logs / f"{folder_name(spec.id)}.stderr.log"
    rec["stderr_log"] = str(err_path)
    t0 = time.monotonic()
    with open(err_path, "ab" if resumed else "wb") as err:
        proc = subprocess.Popen(command(spec, ctx.python, sid, resume=resumed), cwd=ws, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, start_new_session=True,
                                preexec_fn=_die_with_parent())
        assert proc.stdin is not None and proc.stdout is not None  # both pipes, just above
        try:
            proc.stdin.write((CONTINUE_PROMPT if resumed else spec.prompt).encode("utf-8"))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        watch = Watch(proc, control, ctx.task_timeout_s, key)
        try:
            watch.run()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
    timings["loop_process"] = _ms_since(t0)
    _fill(rec, watch, proc.returncode, err_path)
    _collect_files(rec, ctx, transcript_path(ws, sid, env), err_path)
    t0 = time.monotonic()
    try:
        rec["diff"] = diff(ws, baseline)
    except WorkspaceError as exc:  # e.g. the agent removed .git: the loop's outcome still stands
        rec["diff_error"] = str(exc)
    timings["diff"] = _ms_since(t0)


def _not_started(rec: dict[str, Any], control: Control, when: str) -> None:
    if control.interrupted():
        rec.update(outcome=Outcome.INTERRUPTED.value, stopped_by=StopCause.INTERRUPT.value,
                   error=f"interrupted {when}")
    else:
        rec.update(outcome=Outcome.OVER_BUDGET.value, stopped_by=StopCause.BATCH_BUDGET.value,
                   error=f"the batch's --max-total-usd was reached {when}")


def _collect_files(rec: dict[str, Any], ctx: RunContext, transcript: Path, err_path: Path) -> None:
    """What the driver keeps in its batch folder, sent back inside the result (whatever the node)."""
    files: dict[str, str] = {}
    if transcript.is_file():
        rec["session_transcript"] = str(transcript)
        name = f"transcripts/{folder_name(rec['id'])}-{rec['session_id']}.jsonl"
        files[name] = transcript.read_text(encoding="utf-8", errors="replace")
        rec["transcript"] = str(Path(ctx.batch_dir) / name)
    if ctx.work_root().resolve() != Path(ctx.batch_dir).resolve():
        name = f"logs/{err_path.name}"
        files[name] = err_path.read_text(encoding="utf-8", errors="replace") if err_path.is_file() else ""
        rec["stderr_log"] = str(Path(ctx.batch_dir) / name)
        err_path.unlink(missing_ok=True)  # it travels with the result: nothing left behind on the node
    rec[FILES_KEY] = files


def _ms_since(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


def _signame(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _fill(rec: dict[str, Any], watch: Watch, code: int, err_path: Path) -> None:
    res = watch.result
    rec["exit_code"] = code
    rec["rate_limited"] = watch.rate_limited
    if res is not None:
        rec["result"] = res
        for key in RESULT_KEYS:
            rec[key] = res.get(key)
        if not rec.get("model") and res.get("modelUsage"):
            rec["model"] = next(iter(res["modelUsage"]))
    live = round(watch.cost.total(), 8)
    if live > (rec.get("total_cost_usd") or 0.0):
        # no result line, or one written before the loop had counted its last call: what its calls cost
        rec["total_cost_usd"] = live
    stopped = watch.stopped
    if stopped is StopCause.BATCH_BUDGET and res is not None and res.get("subtype") == "success" \
            and not res.get("is_error") and res.get("terminal_reason") == "completed":
        stopped = None  # it had finished before the stop reached it: its result stands
    if stopped is not None:
        outcome = _STOP_OUTCOME[stopped]
        rec["stopped_by"] = stopped.value
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
    if stopped is StopCause.TIMEOUT:
        rec["error"] = f"timed out; {rec['error']}"
    elif stopped is StopCause.BATCH_BUDGET:
        rec["error"] = f"stopped: the batch's --max-total-usd was reached; {rec['error']}"
    tail = _stderr_tail(err_path)
    if tail and outcome in (Outcome.CRASHED, Outcome.FAILED):
        rec["error"] += f"\n--- stderr (tail) ---\n{tail}"
