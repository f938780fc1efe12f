"""Prompts scheduled inside a running session: CronCreate's jobs and ScheduleWakeup's wakeups.

Owns the job record, validation of 5-field cron expressions (croniter, imported on first use),
the session's limits (50 jobs; a recurring job ends after 30 days, firing a last time with a
note), and the timers: each job waits on the running event loop (`loop.call_later`) and, when
due, hands its prompt to `deliver`, a capability the session passes down (it queues the prompt
for the session to run as a new turn once idle). Jobs live in memory only and end with the
session (`close`), as Claude Code's session-only jobs do.

Cron times are the user's local time, as in Claude Code. `clock` is injectable so tests can
place "now" just before a minute boundary instead of waiting for one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

# Re-exported (`as`): the scheduling tools' gate lives apart so that the registry's costs no import.
from codeloop.tools.schedule_gate import scheduling_enabled as scheduling_enabled

log = logging.getLogger(__name__)

MAX_JOBS = 50
RECURRING_MAX_AGE_S = 30 * 86400
WAKEUP_MIN_S, WAKEUP_MAX_S = 60.0, 3600.0
_LOOKAHEAD_S = 366 * 86400   # a cron that matches nothing within a year is refused (e.g. "0 0 31 2 *")


class JobKind(str, Enum):
    CRON = "cron"
    WAKEUP = "wakeup"


class ScheduleError(ValueError):
    """A job that cannot be scheduled; the message is for the model."""


@dataclass
class Job:
    """One scheduled prompt: when it fires next, and whether (and by which cron line) it recurs."""
    id: str
    kind: JobKind
    prompt: str
    created_at: float            # epoch seconds
    next_fire: float             # epoch seconds
    cron: str | None = None
    recurring: bool = False
    reason: str | None = None    # ScheduleWakeup's
    timer: asyncio.TimerHandle | None = None


def cron_next(expr: str, after: float) -> float | None:
    """The first time after `after` (epoch s) that `expr` matches, in local time; None if none within a year.

    Raises ScheduleError for anything but a valid 5-field expression."""
    fields = expr.split()
    if len(fields) != 5:
        raise ScheduleError(f"Invalid cron expression '{expr}'. Expected 5 fields: M H DoM Mon DoW.")
    from datetime import datetime   # lazily, like croniter: every session builds a scheduler

    from croniter import CroniterBadDateError, croniter   # lazily: only sessions that schedule pay for it

    try:
        nxt = croniter(" ".join(fields), datetime.fromtimestamp(after).astimezone()).get_next(float)
    except CroniterBadDateError:   # valid, but no date matches (e.g. "0 0 31 2 *")
        return None
    except (ValueError, KeyError, TypeError) as e:
        raise ScheduleError(f"Invalid cron expression '{expr}'. Expected 5 fields: M H DoM Mon DoW.") from e
    return nxt if nxt - after <= _LOOKAHEAD_S else None


def human_schedule(job: Job) -> str:
    if job.kind is JobKind.WAKEUP:
        return "once at " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.next_fire))
    return f"cron '{job.cron}'" + ("" if job.recurring else ", once")


class PromptScheduler:
    """The scheduled prompts of one session. Call from the session's event loop thread."""

    def __init__(self, deliver: Callable[[str], None], *, clock: Callable[[], float] = time.time) -> None:
        self.deliver, self.clock = deliver, clock
        self._jobs: dict[str, Job] = {}
        self.closed = False

    def jobs(self) -> list[Job]:
        return sorted(self._jobs.values(), key=lambda j: j.next_fire)

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def add_cron(self, cron: str, prompt: str, *, recurring: bool) -> Job:
        self._check_room()
        now = self.clock()
        nxt = cron_next(cron, now)
        if nxt is None:
            raise ScheduleError(f"Cron expression '{cron}' does not match any calendar date in the next year.")
        job = Job(self._new_id(), JobKind.CRON, prompt, now, nxt, cron=" ".join(cron.split()), recurring=recurring)
        return self._arm(job)

    def add_wakeup(self, delay_s: float, prompt: str, reason: str) -> Job:
        """One wakeup at a time, as Claude Code's dynamic loop: a new one replaces the pending one."""
        self.stop_wakeups()
        self._check_room()
        now = self.clock()
        job = Job(self._new_id(), JobKind.WAKEUP, prompt, now, now + delay_s, reason=reason)
        return self._arm(job)

    def stop_wakeups(self) -> int:
        gone = [j.id for j in self._jobs.values() if j.kind is JobKind.WAKEUP]
        for job_id in gone:
            self.delete(job_id)
        return len(gone)

    def delete(self, job_id: str) -> bool:
        job = self._jobs.pop(job_id, None)
        if job is None:
            return False
        if job.timer is not None:
            job.timer.cancel()
        return True

    def close(self) -> None:
        """The session ends: no job outlives it."""
        self.closed = True
        for job_id in list(self._jobs):
            self.delete(job_id)

    # -- timers ----------------------------------------------------------------------------------
    def _check_room(self) -> None:
        if self.closed:
            raise ScheduleError("This session is ending; nothing can be scheduled.")
        if len(self._jobs) >= MAX_JOBS:
            raise ScheduleError(f"Too many scheduled jobs (max {MAX_JOBS}). Cancel one first.")

    def _new_id(self) -> str:
        while (job_id := os.urandom(4).hex()) in self._jobs:
            pass
        return job_id

    def _arm(self, job: Job) -> Job:
        loop = asyncio.get_running_loop()
        delay = max(0.0, job.next_fire - self.clock())
        job.timer = loop.call_later(delay, self._fire, job.id)
        self._jobs[job.id] = job
        return job

    def _fire(self, job_id: str) -> None:
        job = self._jobs.get(job_id)
        if job is None or self.closed:
            return
        now = self.clock()
        if now + 0.001 < job.next_fire:   # the loop's clock ran ahead of ours: wait the rest
            job.timer = asyncio.get_running_loop().call_later(job.next_fire - now, self._fire, job_id)
            return
        prompt = job.prompt
        last = job.recurring and now - job.created_at >= RECURRING_MAX_AGE_S
        if last:
            prompt += ("\n\n(This is the last run of this recurring job: it has reached the 30-day limit "
                       "and is now deleted.)")
        nxt = cron_next(job.cron, now) if job.recurring and job.cron and not last else None
        if nxt is None:
            self._jobs.pop(job_id, None)
        else:
            job.next_fire = nxt
            job.timer = asyncio.get_running_loop().call_later(max(0.0, nxt - self.clock()), self._fire, job_id)
        try:
            self.deliver(prompt)
        except Exception:   # a front end that cannot take it must not kill the event loop's callback
            log.exception("could not deliver scheduled prompt %s", job_id)
