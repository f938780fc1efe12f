"""The results file of a batch: outcomes, durable appends, re-run decisions, SWE-bench predictions.

One JSON line per finished task attempt, appended with a single write and fsynced before the
next task's result is accepted, so a crash or kill -9 loses at most the line being written.
A torn last line (a kill in the middle of that write) is skipped with a warning when read and
never glued to the next line. The latest line of an id is that task's result.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.cli.commands.batch.budget import StopCause


class Outcome(str, Enum):
    SUCCESS = "success"
    FAILED = "failed"                # the loop ended with an error (API error, structured output…)
    MAX_TURNS = "max_turns"
    OVER_BUDGET = "over_budget"      # the task's own max_budget_usd, or the batch's (stopped_by)
    CRASHED = "crashed"              # codeloop died without a result line
    SETUP_FAILED = "setup_failed"    # workspace or setup command
    TIMED_OUT = "timed_out"          # --task-timeout
    INTERRUPTED = "interrupted"      # stopped by the batch (second Ctrl+C) or a signal


# An interrupted task never reached its end: a re-run always runs it again. The others are
# failures that only --rerun-failed retries.
FAILURES = frozenset({Outcome.FAILED, Outcome.MAX_TURNS, Outcome.OVER_BUDGET, Outcome.CRASHED,
                      Outcome.SETUP_FAILED, Outcome.TIMED_OUT})


def outcome_of(record: dict[str, Any]) -> Outcome | None:
    try:
        return Outcome(record.get("outcome"))
    except ValueError:
        return None


def should_run(previous: dict[str, Any] | None, rerun_failed: bool) -> bool:
    """Whether a task runs, given its latest result line (None: never ran)."""
    if previous is None:
        return True
    outcome = outcome_of(previous)
    if outcome is Outcome.SUCCESS:
        return False
    if outcome is Outcome.OVER_BUDGET and previous.get("stopped_by") == StopCause.BATCH_BUDGET.value:
        return True  # stopped by the batch's --max-total-usd before its end: it goes on, like interrupted
    if outcome in FAILURES:
        return rerun_failed
    return True  # interrupted, or a line this version does not know


def read_records(path: Path, warn=None) -> list[dict[str, Any]]:
    """Every valid result line, in order; unreadable lines are reported through `warn`."""
    records: list[dict[str, Any]] = []
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return records
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError:
                obj = None
            if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
                if warn is not None:
                    warn(f"{path}:{lineno}: not a result line (torn by a crash?); ignored")
                continue
            records.append(obj)
    return records


def latest_by_id(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for rec in records:
        latest[rec["id"]] = rec
    return latest


class ResultsBusy(Exception):
    """Another batch holds the results file."""


class ResultsFile:
    """Appends result lines durably; safe to call from several threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:  # two batches appending to one file would interleave retries and skips: refuse the second
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise ResultsBusy(f"another codeloop batch is writing {path}; wait for it or choose another --out") \
                from None
        self._needs_newline = self._ends_torn()

    def _ends_torn(self) -> bool:
        size = os.fstat(self._fd).st_size
        if size == 0:
            return False
        with open(self.path, "rb") as fh:
            fh.seek(size - 1)
            return fh.read(1) != b"\n"

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        data = line.encode("utf-8")
        with self._lock:
            if self._needs_newline:  # never continue a torn line: start a fresh one
                data = b"\n" + data
                self._needs_newline = False
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def predictions_path(results: Path) -> Path:
    name = results.name[:-len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(f"{name}.predictions.jsonl")


def write_predictions(records: Iterable[dict[str, Any]], path: Path, default_model: str) -> int:
    """The SWE-bench harness's predictions file (JSONL: instance_id, model_name_or_path,
    model_patch) for every SWE-bench task that has a result; written atomically."""
    lines = []
    for rec in latest_by_id(records).values():
        if rec.get("kind") != "swebench":
            continue
        lines.append(json.dumps({"instance_id": rec["id"],
                                 "model_name_or_path": f"codeloop/{rec.get('model') or default_model}",
                                 "model_patch": rec.get("diff") or ""}, ensure_ascii=False))
    if not lines:
        return 0
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return len(lines)
