"""The batch driver: decides what runs, schedules it on a backend, records every result.

Scheduling stops for any of: no task left, the global budget (--max-total-usd) reached (the
backend's ledger counts running tasks' live cost; the tasks themselves stop as it is crossed),
the first Ctrl+C (running tasks finish), a second Ctrl+C or SIGTERM (running tasks are
interrupted and still write their result lines). New starts also wait while the shared
rate-limit backoff is in force. A task whose last run was stopped before its end gets a resume
plan (resume.py). Results are appended and fsynced one by one as tasks finish, on either
backend; the files a result carries back (transcript, remote stderr log) are written under the
batch folder first, so a result line never points at a file that is not there.
"""

from __future__ import annotations

import signal
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.cli.commands.batch.progress import Progress
from codeloop.cli.commands.batch.report import render, summarize
from codeloop.cli.commands.batch.results import (ResultsBusy, ResultsFile, latest_by_id, predictions_path, read_records,
                                                 should_run, write_predictions)
from codeloop.cli.commands.batch.resume import plan_for
from codeloop.cli.commands.batch.runner import FILES_KEY, NOT_STARTED_KEY, RunContext
from codeloop.cli.commands.batch.tasks import TaskDefaults, TaskKind, load_tasks
from codeloop.cli.commands.batch.workspace import KeepWorkspaces, disk_usage

EXIT_OK, EXIT_ERROR, EXIT_SIGINT = 0, 1, 130
_POLL_S = 0.25


class BackendKind(str, Enum):
    LOCAL = "local"
    RAY = "ray"


class BatchError(Exception):
    """A user-facing failure of the whole batch (unreadable tasks file, backend unavailable)."""


@dataclass
class BatchOptions:
    """How one batch run is set up: tasks file, output, worker count and backend."""
    tasks: Path
    out: Path
    workers: int = 4
    backend: BackendKind = BackendKind.LOCAL
    ray_address: str | None = None
    ray_task_cpus: float = 1.0
    ray_task_memory_mb: int = 1024
    ray_max_retries: int = 2
    max_total_usd: float | None = None
    rerun_failed: bool = False
    batch_dir: Path | None = None
    predictions: Path | None = None
    task_timeout_s: float | None = None
    setup_timeout_s: float = 900.0
    defaults: TaskDefaults = field(default_factory=TaskDefaults)
    keep_workspaces: KeepWorkspaces = KeepWorkspaces.FAILED
    shared_dir: Path | None = None
    resume: bool = True


class _Stops:
    """Counts stop requests: 1 = stop scheduling, 2+ = interrupt running tasks too."""

    def __init__(self) -> None:
        self.level = 0
        self.noted = 0  # the highest level already announced
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._old[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame) -> None:
        # SIGTERM means "stop now": it goes straight to interrupting running tasks.
        self.level = max(self.level + 1, 2 if signum == signal.SIGTERM else 1)

    def restore(self) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)


def _backend(o: BatchOptions, ctx: RunContext):
    if o.backend is BackendKind.RAY:
        from codeloop.cli.commands.batch.ray_backend import RayBackend, RayMissing
        try:
            return RayBackend(ctx, o.workers, address=o.ray_address, task_cpus=o.ray_task_cpus,
                              task_memory_mb=o.ray_task_memory_mb, max_retries=o.ray_max_retries,
                              max_total_usd=o.max_total_usd,
                              shared_dir=str(o.shared_dir.resolve()) if o.shared_dir else None)
        except RayMissing as exc:
            raise BatchError(str(exc)) from None
        except Exception as exc:  # Ray could not start or reach the cluster
            raise BatchError(f"could not start Ray: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}") \
                from None
    from codeloop.cli.commands.batch.local import LocalBackend
    return LocalBackend(ctx, o.workers, o.max_total_usd)


def default_batch_dir(out: Path) -> Path:
    name = out.name[:-len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(f"{name}.batch")


def run_batch(o: BatchOptions, *, err=None, out=None) -> int:
    err = err or sys.stderr
    out = out or sys.stdout

    def say(text: str) -> None:
        err.write(f"codeloop batch: {text}\n")
        err.flush()

    try:
        tasks, bad = load_tasks(o.tasks, o.defaults)
    except OSError as exc:
        raise BatchError(f"cannot read tasks file {o.tasks}: {exc.strerror or exc}") from None
    for line in bad:
        say(line)
    try:
        previous = read_records(o.out, warn=say)
    except OSError as exc:
        raise BatchError(f"cannot read results file {o.out}: {exc.strerror or exc}") from None
    latest = latest_by_id(previous)
    attempts = Counter(r["id"] for r in previous)
    todo = deque(t for t in tasks if should_run(latest.get(t.id), o.rerun_failed))
    skipped = len(tasks) - len(todo)
    say(f"{len(tasks)} tasks ({len(bad)} bad lines): {len(todo)} to run, {skipped} already have a result"
        + ("" if o.rerun_failed else " (--rerun-failed retries failures)") + f"; backend {o.backend.value}, "
        f"{o.workers} workers")
    batch_dir = (o.batch_dir or default_batch_dir(o.out)).resolve()
    ctx = RunContext(batch_dir=str(batch_dir), setup_timeout_s=o.setup_timeout_s, task_timeout_s=o.task_timeout_s,
                     work_dir=str(batch_dir), keep=o.keep_workspaces.value)
    stops = _Stops()
    plans = {t.id: plan_for(latest.get(t.id), enabled=o.resume, batch_dir=batch_dir) for t in todo}
    stopped_by = _schedule(o, ctx, todo, attempts, stops, say, plans) if todo else None
    final = read_records(o.out)
    if final or not todo:
        out.write(render(summarize(final)) + "\n")
        out.write(f"batch folder: {_mb(disk_usage(batch_dir))} on disk ({batch_dir})\n")
    if stopped_by:
        out.write(f"not started: {len(todo)} tasks ({stopped_by}); run the same command again to go on\n")
    if any(t.kind is TaskKind.SWEBENCH for t in tasks):
        pred = o.predictions or predictions_path(o.out)
        n = write_predictions(final, pred, o.defaults.model or "default")
        out.write(f"SWE-bench predictions: {pred} ({n} instances)\n")
    out.flush()
    if stops.level:
        return EXIT_SIGINT
    done = latest_by_id(final)
    all_ok = all((done.get(t.id) or {}).get("outcome") == "success" for t in tasks)
    return EXIT_OK if all_ok and not bad else EXIT_ERROR


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def _write_files(rec: dict[str, Any], batch_dir: Path) -> None:
    """The files a result carried back, under the driver's batch folder (never outside it)."""
    for rel, text in (rec.pop(FILES_KEY, None) or {}).items():
        path = (batch_dir / rel).resolve()
        if not path.is_relative_to(batch_dir):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


def _schedule(o: BatchOptions, ctx: RunContext, todo: deque, attempts: Counter, stops: _Stops, say,
              plans: dict) -> str | None:
    """Runs tasks until done or stopped; returns why scheduling stopped early (None: it did not)."""
    existed = o.out.exists()
    try:
        results = ResultsFile(o.out)
    except ResultsBusy as exc:
        raise BatchError(str(exc)) from None
    except OSError as exc:
        raise BatchError(f"cannot write results file {o.out}: {exc.strerror or exc}") from None
    try:
        backend = _backend(o, ctx)
    except BaseException:
        results.close()
        if not existed and o.out.stat().st_size == 0:  # leave no empty file behind a batch that never ran
            o.out.unlink()
        raise
    progress = Progress(len(todo))
    stops.install()  # after the backend: Ray installs handlers of its own at start-up
    budget_hit, interrupted, waiting_until = False, False, 0.0
    try:
        while True:
            if stops.level >= 2 and not interrupted:
                interrupted = True
                progress.note("interrupting running tasks (they still write their result lines)")
                backend.interrupt()
            elif stops.level == 1 and not stops.noted:
                stops.noted = 1
                progress.note(f"stopping: no new tasks; waiting for {backend.running()} running "
                              "(Ctrl+C again interrupts them)")
            reached, spent = backend.budget() if o.max_total_usd is not None else (False, 0.0)
            if reached and not budget_hit:
                budget_hit = True
                progress.note(f"budget reached: ${spent:.4f} of ${o.max_total_usd:.4f}; no new tasks; "
                              f"stopping {backend.running()} running")
            if not stops.level and not budget_hit and todo and backend.running() < o.workers:
                until = backend.backoff_until()
                if until > time.time():
                    if until > waiting_until + 0.5:
                        waiting_until = until
                        progress.note(f"rate limited (429/529): new tasks wait {until - time.time():.1f}s")
                else:
                    while todo and backend.running() < o.workers:
                        spec = todo.popleft()
                        backend.submit(spec, plans.get(spec.id))
                        progress.started_task(spec.id)
            if not backend.running() and (not todo or stops.level or budget_hit):
                break
            for spec, rec in backend.poll(_POLL_S):
                if rec.pop(NOT_STARTED_KEY, False):
                    # submitted as the budget was reached, and it did nothing: not started, no line
                    if not budget_hit:
                        budget_hit = True
                        progress.note("budget reached: no new tasks")
                    todo.appendleft(spec)
                    progress.unstarted(spec.id)
                    continue
                rec["attempt"] = attempts[spec.id] + 1
                rec["backend"] = backend.name
                try:
                    _write_files(rec, Path(ctx.batch_dir))
                except OSError as exc:
                    rec["error"] = (rec.get("error") or "") + f"\ncould not write its files to the batch folder: {exc}"
                results.append(rec)
                progress.finished(rec)
            progress.tick()
    finally:
        progress.close()
        results.close()
        stops.restore()
        backend.close()
    if todo:
        return "stopped by Ctrl+C" if stops.level else "budget reached" if budget_hit else "stopped"
    return None
