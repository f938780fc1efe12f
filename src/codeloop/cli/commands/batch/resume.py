"""Resuming an interrupted task: which previous result lines qualify, and the checks on the node.

A task the batch stopped before its end (`interrupted`, or `over_budget` because the batch's
`--max-total-usd` was reached) runs again on the next `codeloop batch`. When its workspace was
kept, its post-setup snapshot is known and its transcript is intact (every line readable, at
least one message), the loop continues that session (`codeloop -p --resume ID`) in that
workspace, so the diff covers both runs; otherwise the task starts over from a fresh workspace.
The result line's `start` says which (`fresh` | `resumed` | `restarted`, with `restart_reason`).
A transcript missing on the node that runs the task again (another node, a shared --shared-dir)
is restored from the copy in the driver's batch folder before it is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.cli.commands.batch.budget import StopCause
from codeloop.cli.commands.batch.results import Outcome

CONTINUE_PROMPT = ("The previous run of this task was interrupted before it was done. Continue the task "
                   "from where it stopped.")


class Start(str, Enum):
    FRESH = "fresh"            # the task's first run
    RESUMED = "resumed"        # continued its interrupted session in its kept workspace
    RESTARTED = "restarted"    # had an interrupted run, but started over (restart_reason says why)


@dataclass
class ResumePlan:
    """What the runner needs to continue a session; plain data, so it travels to a Ray worker."""
    session_id: str | None
    workspace: str | None
    baseline: str | None
    transcript: str | None = None        # where the session's transcript was, on the node that ran it
    transcript_copy: str | None = None   # the driver's copy (text), to restore a missing transcript
    refused: str | None = None           # known on the driver already: why it cannot resume


def stopped_before_end(rec: dict[str, Any] | None) -> bool:
    if rec is None:
        return False
    outcome = rec.get("outcome")
    return outcome == Outcome.INTERRUPTED.value or (
        outcome == Outcome.OVER_BUDGET.value and rec.get("stopped_by") == StopCause.BATCH_BUDGET.value)


def plan_for(prev: dict[str, Any] | None, *, enabled: bool, batch_dir: Path) -> ResumePlan | None:
    """The resume plan for a task about to run again (None: its previous run did not stop early)."""
    if not stopped_before_end(prev):
        return None
    assert prev is not None  # stopped_before_end says so
    plan = ResumePlan(session_id=prev.get("session_id"), workspace=prev.get("workspace"),
                      baseline=prev.get("baseline"), transcript=prev.get("session_transcript"))
    if not enabled:
        plan.refused = "--no-resume"
    elif not plan.session_id or not plan.baseline:
        plan.refused = "the interrupted run never started its loop"
    elif not prev.get("workspace_kept"):
        plan.refused = "its workspace was not kept (--keep-workspaces)"
    else:
        copy = prev.get("transcript")
        if copy and Path(copy).is_relative_to(batch_dir) and Path(copy).is_file():
            try:
                plan.transcript_copy = Path(copy).read_text(encoding="utf-8", errors="replace")
            except OSError:
                pass
    return plan


def transcript_problem(path: Path) -> str | None:
    """Why a transcript cannot be resumed (None: it is intact)."""
    from codeloop.session.transcript import load_transcript

    if not path.is_file():
        return "its transcript is missing"
    try:
        loaded = load_transcript(path)
    except (OSError, ValueError) as exc:
        return f"its transcript cannot be read: {exc}"
    if loaded.warnings:
        return f"its transcript is damaged ({loaded.warnings[0]})"
    if not loaded.messages:
        return "its transcript holds no messages"
    return None


def workspace_problem(plan: ResumePlan, private_git: Path) -> str | None:
    ws = Path(plan.workspace or "")
    if not plan.workspace or not ws.is_dir():
        return "its workspace is not on this node" if plan.workspace else "no workspace was recorded"
    if not (ws / ".git").is_dir() or not (private_git / "HEAD").is_file():
        return "its workspace is no longer a git repository"
    return None


def restore_transcript(plan: ResumePlan, path: Path) -> None:
    """Put the driver's copy where the loop looks for the session, when it is not there."""
    if path.exists() or not plan.transcript_copy:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".restore")
    tmp.write_text(plan.transcript_copy, encoding="utf-8")
    tmp.replace(path)
