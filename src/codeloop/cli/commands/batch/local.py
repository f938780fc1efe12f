"""The local backend: a bounded pool of loop processes on this machine.

Each slot is a thread that owns one `codeloop -p` process at a time (`runner.run_task`); the
processes do the work, the threads only wait on them. The driver never submits more tasks than
there are slots, so `--workers` is the number of loops running at once.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from codeloop.cli.commands.batch.budget import Ledger
from codeloop.cli.commands.batch.results import Outcome
from codeloop.cli.commands.batch.resume import ResumePlan
from codeloop.cli.commands.batch.runner import RunContext, base_record, run_task
from codeloop.cli.commands.batch.tasks import TaskSpec


class LocalControl:
    """The interrupt flag, the shared rate-limit backoff and the spend ledger, for tasks running
    in this process: a task's live cost is checked against the limit as it arrives."""

    def __init__(self, max_total_usd: float | None = None) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._until = 0.0
        self._ledger = Ledger(max_total_usd)

    def spend(self, key: str, usd: float) -> None:
        with self._lock:
            self._ledger.spend(key, usd)

    def over_budget(self) -> bool:
        return self._ledger.reached

    def spent(self) -> float:
        with self._lock:
            return self._ledger.total()

    def interrupted(self) -> bool:
        return self._stop.is_set()

    def interrupt(self) -> None:
        self._stop.set()

    def backoff(self, seconds: float) -> None:
        with self._lock:
            self._until = max(self._until, time.time() + seconds)

    def backoff_until(self) -> float:
        with self._lock:
            return self._until


def lost_record(spec: TaskSpec, error: str) -> dict[str, Any]:
    """The result line of a task whose worker vanished (so run_task could not write one)."""
    rec = base_record(spec)
    rec.update(outcome=Outcome.CRASHED.value, started_at=None, finished_at=time.time(), error=error)
    return rec


class LocalBackend:
    name = "local"

    def __init__(self, ctx: RunContext, workers: int, max_total_usd: float | None = None) -> None:
        self.ctx = ctx
        self.control = LocalControl(max_total_usd)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="codeloop-batch")
        self._futures: dict[Future, TaskSpec] = {}

    def submit(self, spec: TaskSpec, resume: ResumePlan | None = None) -> None:
        self._futures[self._pool.submit(run_task, spec, self.ctx, self.control, resume)] = spec

    def running(self) -> int:
        return len(self._futures)

    def poll(self, timeout: float) -> list[tuple[TaskSpec, dict[str, Any]]]:
        if not self._futures:
            time.sleep(timeout)
            return []
        done, _ = wait(list(self._futures), timeout=timeout, return_when=FIRST_COMPLETED)
        out = []
        for fut in done:
            spec = self._futures.pop(fut)
            try:
                out.append((spec, fut.result()))
            except Exception as exc:  # run_task never raises; this is the last safety net
                out.append((spec, lost_record(spec, f"batch worker error: {type(exc).__name__}: {exc}")))
        return out

    def interrupt(self) -> None:
        self.control.interrupt()

    def backoff_until(self) -> float:
        return self.control.backoff_until()

    def budget(self) -> tuple[bool, float]:
        """Whether the batch's budget is reached, and what this run has spent so far."""
        return self.control.over_budget(), self.control.spent()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
