"""CronCreate / CronDelete / CronList / ScheduleWakeup through the real loop with the fake model,
and the scheduler's timers (a clock placed just before a minute boundary, never a sleep)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import pytest
from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, run

from codeloop.tools.base import ToolContext
from codeloop.tools.registry import builtin_tools, find_tool
from codeloop.tools.scheduler import PromptScheduler, ScheduleError, cron_next


def results(api, i):
    out = []
    for b in api.requests[i].messages[-1]["content"]:
        if b.get("type") == "tool_result":
            c = b["content"]
            out.append((b.get("is_error", False), c if isinstance(c, str) else "".join(x.get("text", "") for x in c)))
    return out


def near_minute_clock(before_s: float = 0.3):
    """A clock that reads `before_s` seconds before the next local minute boundary, then runs on."""
    t0, real = time.monotonic(), time.time()
    boundary = (int(real) // 60 + 1) * 60
    start = boundary - before_s
    return lambda: start + (time.monotonic() - t0)


def test_schemas_match_claude_code():
    tools = builtin_tools()
    create = find_tool(tools, "CronCreate").input_schema()
    assert set(create["properties"]) == {"cron", "prompt", "recurring", "durable"}
    assert sorted(create["required"]) == ["cron", "prompt"]
    assert find_tool(tools, "CronDelete").input_schema()["required"] == ["id"]
    assert find_tool(tools, "CronList").input_schema()["properties"] == {}
    wake = find_tool(tools, "ScheduleWakeup").input_schema()
    assert set(wake["properties"]) == {"delaySeconds", "reason", "prompt", "stop", "noop"}
    assert "required" not in wake
    assert [find_tool(tools, n).should_defer for n in ("CronCreate", "CronDelete", "CronList", "ScheduleWakeup")] \
        == [True, True, True, False]


def test_gated_on_a_session_scheduler(tmp_path, monkeypatch):
    tool = find_tool(builtin_tools(), "CronCreate")
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    assert tool.is_enabled(ctx) is False
    ctx.scheduler = PromptScheduler(lambda s: None)
    assert tool.is_enabled(ctx) is True
    ctx.agent_id = "sub"
    assert tool.is_enabled(ctx) is False        # a subagent's turn ends; it has no idle to fire into
    ctx.agent_id = None
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_CRON", "1")
    assert tool.is_enabled(ctx) is False


def test_cron_validation():
    now = time.time()
    with pytest.raises(ScheduleError, match="Expected 5 fields"):
        cron_next("* * * *", now)
    with pytest.raises(ScheduleError, match="Expected 5 fields"):
        cron_next("61 * * * *", now)
    assert cron_next("0 0 31 2 *", now) is None     # never matches
    nxt = cron_next("*/5 * * * *", now)
    assert nxt is not None and 0 < nxt - now <= 300 and datetime.fromtimestamp(nxt).minute % 5 == 0


async def test_cron_job_fires_into_the_session_and_recurs(tmp_path):
    fired: list[str] = []
    got = asyncio.Event()

    def deliver(prompt: str) -> None:
        fired.append(prompt)
        got.set()

    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    ctx.scheduler = PromptScheduler(deliver, clock=near_minute_clock())
    api = ScriptedAPI(
        sse(tool_use("CronCreate", {"cron": "* * * * *", "prompt": "check the build"}, id="c1"),
            tool_use("CronCreate", {"cron": "0 0 31 2 *", "prompt": "never"}, id="c2"),
            tool_use("CronCreate", {"cron": "nonsense", "prompt": "x"}, id="c3"), stop="tool_use"),
        sse(tool_use("CronList", {}, id="l1"), stop="tool_use"),
        sse(text("scheduled")))
    await run(make_params(api, tmp_path, tool_context=ctx))
    (ok, created), (err1, never), (err2, bad) = results(api, 1)
    assert not ok and created.startswith("Scheduled recurring job ") and "Session-only" in created
    assert err1 and "does not match any calendar date" in never
    assert err2 and "Invalid cron expression 'nonsense'" in bad
    [(_, listing)] = results(api, 2)
    job_id = created.split()[3]
    assert listing.startswith(f"{job_id} — cron '* * * * *' (recurring) [session-only], next run ")
    assert listing.endswith(": check the build")
    await asyncio.wait_for(got.wait(), 10)          # the minute boundary is 0.3 s away on its clock
    assert fired == ["check the build"]
    [job] = ctx.scheduler.jobs()
    assert job.id == job_id and job.next_fire > ctx.scheduler.clock()   # re-armed for the next minute
    ctx.scheduler.close()
    assert ctx.scheduler.jobs() == [] and job.timer is not None and job.timer.cancelled()


async def test_one_shot_fires_once_and_delete_cancels(tmp_path):
    fired: list[str] = []
    got = asyncio.Event()
    sched = PromptScheduler(lambda p: (fired.append(p), got.set()), clock=near_minute_clock())
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, scheduler=sched)
    api = ScriptedAPI(
        sse(tool_use("CronCreate", {"cron": "* * * * *", "prompt": "once", "recurring": False}, id="a"),
            tool_use("CronCreate", {"cron": "7 3 * * *", "prompt": "later"}, id="b"), stop="tool_use"),
        sse(text("ok")))
    await run(make_params(api, tmp_path, tool_context=ctx))
    (_, once), (_, later) = results(api, 1)
    assert once.startswith("Scheduled one-shot task ") and once.endswith("It will fire once then auto-delete.")
    later_id = later.split()[3]
    api2 = ScriptedAPI(sse(tool_use("CronDelete", {"id": later_id}, id="d1"),
                           tool_use("CronDelete", {"id": "nope"}, id="d2"), stop="tool_use"), sse(text("ok")))
    await run(make_params(api2, tmp_path, tool_context=ctx))
    (e1, gone), (e2, missing) = results(api2, 1)
    assert not e1 and gone == f"Cancelled job {later_id}."
    assert e2 and "No scheduled job with id 'nope'" in missing
    await asyncio.wait_for(got.wait(), 10)
    assert fired == ["once"] and sched.jobs() == []


async def test_schedule_wakeup_clamps_replaces_and_stops(tmp_path, monkeypatch):
    fired: list[str] = []
    sched = PromptScheduler(fired.append)
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, scheduler=sched)
    api = ScriptedAPI(
        sse(tool_use("ScheduleWakeup", {"delaySeconds": 5, "reason": "watch CI", "prompt": "/loop ci",
                                        "noop": False}, id="w1"), stop="tool_use"),
        sse(tool_use("ScheduleWakeup", {"delaySeconds": 1200, "reason": "idle", "prompt": "/loop ci",
                                        "noop": True}, id="w2"),
            tool_use("ScheduleWakeup", {"reason": "no delay"}, id="w3"), stop="tool_use"),
        sse(tool_use("ScheduleWakeup", {"stop": True}, id="w4"), stop="tool_use"),
        sse(text("ok")))
    await run(make_params(api, tmp_path, tool_context=ctx))
    [(_, first)] = results(api, 1)
    assert "(in 60s) (clamped to 60s from your requested value)" in first
    (_, second), (err, missing) = results(api, 2)
    assert "(in 1200s)" in second and "clamped" not in second
    assert err and "`delaySeconds` and `reason` are required when `stop` is not true." in missing
    [(_, stopped)] = results(api, 3)
    # the second call replaced the first: one wakeup was pending when the loop was stopped
    assert stopped == "Loop ended: cancelled 1 pending wakeup(s); no further wakeups scheduled."
    assert sched.jobs() == [] and fired == []

