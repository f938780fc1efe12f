"""CronCreate, CronDelete, CronList and ScheduleWakeup: prompts scheduled inside the running session.

Names, input schemas and result texts follow Claude Code's (2.1.x). The jobs live in the
session's `tools.scheduler.PromptScheduler` (`ctx.scheduler`, given by the session; the tools are
hidden without one, in subagents, and when CLAUDE_CODE_DISABLE_CRON is set). A due prompt is
queued for the session and runs as a new turn once it is idle. Jobs are session-only: `durable`
is accepted for Claude Code's schema, and the result says "Session-only" as Claude Code's does
when it cannot save a job. Like Claude Code, the Cron tools are deferred and ScheduleWakeup is not.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.scheduler import (RECURRING_MAX_AGE_S, WAKEUP_MAX_S, WAKEUP_MIN_S, Job, JobKind,
                                      PromptScheduler, ScheduleError, human_schedule, scheduling_enabled)

SESSION_ONLY = "Session-only (not written to disk, dies when the session exits)"
# Seconds; lowers ScheduleWakeup's 60 s floor (tests, demos). Unset: Claude Code's [60, 3600].
MIN_DELAY_ENV = "CODELOOP_WAKEUP_MIN_DELAY_S"


def _when(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _scheduler(ctx: ToolContext) -> PromptScheduler:
    if ctx.scheduler is None:
        raise ToolError("Scheduling is not available in this session.")
    return ctx.scheduler


class _ScheduleTool(Tool):
    should_defer: ClassVar[bool] = True

    def is_enabled(self, ctx: ToolContext) -> bool:
        return scheduling_enabled(ctx)

    async def check_permissions(self, inp: Any, ctx: ToolContext) -> PermissionDecision:
        # A scheduled prompt runs later as an ordinary turn, under the same rules: nothing to ask now.
        return PermissionDecision(PermissionBehavior.ALLOW)


class CronCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cron: str = Field(description='Standard 5-field cron expression in local time: "M H DoM Mon DoW" '
                                  '(e.g. "*/5 * * * *" = every 5 minutes, "30 14 28 2 *" = Feb 28 at 2:30pm).')
    prompt: str = Field(description="The prompt to enqueue at each fire time.")
    recurring: bool | None = Field(None, description="true (default) = fire on every match until deleted or "
                                                     "expired after 30 days; false = fire once at the next "
                                                     "match, then delete itself.")
    durable: bool | None = Field(None, description="Asks for the job to survive restarts. Not available here: "
                                                   "every job is session-only and ends with this session.")


class CronCreateTool(_ScheduleTool):
    name: ClassVar[str] = "CronCreate"
    description: ClassVar[str] = (
        "Schedule a prompt to run later inside this session: recurring on a 5-field cron schedule in local time "
        "(recurring: true, the default; e.g. \"*/5 * * * *\", \"7 * * * *\", \"0 9 * * 1-5\") or once at the next "
        "match (recurring: false, with minute/hour/day/month pinned, for \"remind me at X\"). The prompt is queued "
        "when due and runs once the session is idle; jobs end with the session and recurring ones expire after "
        "30 days. When the time asked for is approximate, prefer a minute other than :00 or :30. Returns a job id "
        "for CronDelete; CronList shows the jobs and their next run.")
    input_model: ClassVar[type[BaseModel]] = CronCreateInput

    async def call(self, inp: CronCreateInput, ctx: ToolContext) -> ToolResult:
        if not inp.prompt.strip():
            raise ToolError("The prompt is empty: give the prompt to run at each fire time.")
        recurring = inp.recurring is not False
        try:
            job = _scheduler(ctx).add_cron(inp.cron, inp.prompt, recurring=recurring)
        except ScheduleError as e:
            raise ToolError(str(e)) from e
        data: dict[str, Any] = {"id": job.id, "humanSchedule": human_schedule(job), "recurring": recurring,
                                "durable": False, "nextFireAt": int(job.next_fire * 1000)}
        if recurring:
            data["maxAgeMs"] = RECURRING_MAX_AGE_S * 1000
            text = (f"Scheduled recurring job {job.id} ({data['humanSchedule']}). Next run: {_when(job.next_fire)}. "
                    f"{SESSION_ONLY}. Auto-expires after 30 days. Use CronDelete to cancel sooner.")
        else:
            text = (f"Scheduled one-shot task {job.id} ({data['humanSchedule']}). Next run: {_when(job.next_fire)}. "
                    f"{SESSION_ONLY}. It will fire once then auto-delete.")
        return ToolResult(text, data=data)


class CronDeleteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Job ID returned by CronCreate.")


class CronDeleteTool(_ScheduleTool):
    name: ClassVar[str] = "CronDelete"
    description: ClassVar[str] = (
        "Cancel a job scheduled with CronCreate (or a pending ScheduleWakeup) in this session, by the id the "
        "scheduling call returned. CronList shows the ids.")
    input_model: ClassVar[type[BaseModel]] = CronDeleteInput

    async def call(self, inp: CronDeleteInput, ctx: ToolContext) -> ToolResult:
        sched = _scheduler(ctx)
        job = sched.get(inp.id)
        if job is None:
            raise ToolError(f"No scheduled job with id '{inp.id}'")
        sched.delete(inp.id)
        data: dict[str, Any] = {"id": inp.id}
        if job.kind is JobKind.WAKEUP:
            data["endedLoopWakeup"] = True
        return ToolResult(f"Cancelled job {inp.id}.", data=data)


class CronListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _row(job: Job) -> dict[str, Any]:
    return {"id": job.id, "cron": job.cron or "", "humanSchedule": human_schedule(job), "prompt": job.prompt,
            **({"recurring": True} if job.recurring else {}), "durable": False,
            "nextFireAt": int(job.next_fire * 1000)}


class CronListTool(_ScheduleTool):
    name: ClassVar[str] = "CronList"
    description: ClassVar[str] = (
        "List the prompts scheduled in this session (CronCreate jobs and a pending ScheduleWakeup): id, "
        "schedule, whether it recurs, its next run and the prompt. Use it before saying what is scheduled or when "
        "it runs next.")
    input_model: ClassVar[type[BaseModel]] = CronListInput

    def is_read_only(self, inp: Any) -> bool:
        return True

    async def call(self, inp: CronListInput, ctx: ToolContext) -> ToolResult:
        jobs = _scheduler(ctx).jobs()
        rows = [_row(j) for j in jobs]
        if not rows:
            return ToolResult("No scheduled jobs.", data={"jobs": []})
        lines = []
        for job in jobs:
            prompt = job.prompt if len(job.prompt) <= 80 else job.prompt[:79] + "…"
            kind = " (recurring)" if job.recurring else " (one-shot)"
            lines.append(f"{job.id} — {human_schedule(job)}{kind} [session-only], next run "
                         f"{_when(job.next_fire)}: {prompt}")
        return ToolResult("\n".join(lines), data={"jobs": rows})


class ScheduleWakeupInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    delaySeconds: float | None = Field(None, description="Seconds from now to wake up. Clamped to [60, 3600]. "
                                                         "Required unless `stop` is true.")
    reason: str | None = Field(None, description="One short, specific sentence on why this delay; shown to the "
                                                 "user. Required unless `stop` is true.")
    prompt: str | None = Field(None, description="The prompt to run on wake-up (pass the same loop input each "
                                                 "time so the loop goes on). Required unless `stop` is true.")
    stop: bool | None = Field(None, description="true ends the loop now: pending wakeups are cancelled and the "
                                                "other fields are ignored.")
    noop: bool | None = Field(None, description="true = this pass changed nothing worth reporting; false = "
                                                "something happened. Required unless `stop` is true.")


def _min_delay() -> float:
    raw = os.environ.get(MIN_DELAY_ENV)
    try:
        return max(0.0, float(raw)) if raw else WAKEUP_MIN_S
    except ValueError:
        return WAKEUP_MIN_S


class ScheduleWakeupTool(_ScheduleTool):
    name: ClassVar[str] = "ScheduleWakeup"
    should_defer: ClassVar[bool] = False   # Claude Code sends its schema in every request
    description: ClassVar[str] = (
        "Pace a self-driven loop: schedule when this session wakes up to run `prompt` again, `delaySeconds` from "
        "now (clamped to 60–3600 s). Do not poll work the harness tracks (background tasks announce themselves "
        "when they end); use a long fallback (1200 s or more) for those, and a delay matched to how fast the "
        "watched state changes for external work (a CI run, a deploy). Under 300 s keeps the prompt cache warm; "
        "past it, prefer 1200–1800 s for idle checks. Give a specific one-sentence `reason`, and `noop` true when "
        "nothing changed this pass. Only one wakeup is pending at a time: a new call replaces it. Call it with "
        "`stop: true` (and nothing else) to end the loop.")
    input_model: ClassVar[type[BaseModel]] = ScheduleWakeupInput

    async def call(self, inp: ScheduleWakeupInput, ctx: ToolContext) -> ToolResult:
        sched = _scheduler(ctx)
        if inp.stop:
            n = sched.stop_wakeups()
            return ToolResult(f"Loop ended: cancelled {n} pending wakeup(s); no further wakeups scheduled.",
                              data={"stopped": True, "cancelledWakeups": n})
        if inp.delaySeconds is None or not (inp.reason or "").strip():
            raise ToolError("`delaySeconds` and `reason` are required when `stop` is not true.")
        if not (inp.prompt or "").strip():
            raise ToolError("`prompt` is required when `stop` is not true.")
        low = _min_delay()
        delay = min(max(inp.delaySeconds, low), WAKEUP_MAX_S)
        clamped = delay != inp.delaySeconds
        try:
            job = sched.add_wakeup(delay, inp.prompt or "", inp.reason or "")
        except ScheduleError as e:
            raise ToolError(str(e)) from e
        text = f"Next wakeup scheduled for {_when(job.next_fire)} (in {delay:g}s)"
        if clamped:
            text += f" (clamped to {delay:g}s from your requested value)"
        data = {"scheduledFor": int(job.next_fire * 1000), "clampedDelaySeconds": delay, "wasClamped": clamped}
        return ToolResult(text + ".", data=data)
