"""Hooks answering with JSON on stdout (exit 0), and the aggregate over several hooks."""

from __future__ import annotations

import asyncio
import json

import pytest
from hooklab import group

from codeloop.hooks import HookEvent


def say(lab, obj, *, delay: float = 0) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj)
    pause = f"sleep {delay}\n" if delay else ""
    return lab.script(f"{pause}cat <<'JSON'\n{text}\nJSON")


async def run_one(lab, event, obj, payload=None):
    runner = lab.runner({event.value: [group(say(lab, obj))]})
    return await asyncio.wait_for(runner.run(event, payload or {"tool_name": "Bash"}), 30)


async def test_continue_false_stops_with_reason(lab):
    out = await run_one(lab, HookEvent.POST_TOOL_USE, {"continue": False, "stopReason": "build broke"})
    assert out.prevent_continuation and out.stop_reason == "build broke" and not out.blocked


async def test_suppress_output_and_system_message(lab):
    out = await run_one(lab, HookEvent.NOTIFICATION, {"suppressOutput": True, "systemMessage": "heads up"})
    assert out.suppress_output and out.system_messages == ["heads up"]
    assert out.output == []   # JSON is consumed, not displayed


@pytest.mark.parametrize("event", [HookEvent.POST_TOOL_USE, HookEvent.STOP, HookEvent.SUBAGENT_STOP,
                                   HookEvent.USER_PROMPT_SUBMIT])
async def test_decision_block_with_reason(lab, event):
    out = await run_one(lab, event, {"decision": "block", "reason": "tests fail"})
    assert out.blocked and out.block_reasons == ["tests fail"]


async def test_decision_block_without_reason_gets_a_default(lab):
    out = await run_one(lab, HookEvent.STOP, {"decision": "block"})
    assert out.blocked and "blocked with no reason given" in out.block_reasons[0]


@pytest.mark.parametrize("event", [HookEvent.NOTIFICATION, HookEvent.SESSION_END, HookEvent.PRE_COMPACT])
async def test_decision_block_is_ignored_where_nothing_can_be_blocked(lab, event):
    out = await run_one(lab, event, {"decision": "block", "reason": "nope"})
    assert not out.blocked and out.block_reasons == []


async def test_legacy_pre_tool_use_decisions(lab):
    out = await run_one(lab, HookEvent.PRE_TOOL_USE, {"decision": "approve", "reason": "safe"})
    assert (out.permission_decision, out.permission_reason, out.blocked) == ("allow", "safe", False)
    out = await run_one(lab, HookEvent.PRE_TOOL_USE, {"decision": "block", "reason": "unsafe"})
    assert (out.permission_decision, out.permission_reason, out.blocked) == ("deny", "unsafe", True)
    assert out.block_reasons == ["unsafe"]


@pytest.mark.parametrize("decision", ["allow", "deny", "ask"])
async def test_permission_decision_and_reason(lab, decision):
    out = await run_one(lab, HookEvent.PRE_TOOL_USE, {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": "policy"}})
    assert (out.permission_decision, out.permission_reason) == (decision, "policy")
    # A JSON deny is a permission decision, not an exit-2 block.
    assert out.blocked is False


async def test_updated_input_and_additional_context(lab):
    out = await run_one(lab, HookEvent.PRE_TOOL_USE, {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {"command": "ls -la"}, "additionalContext": "ran through the wrapper"}})
    assert out.updated_input == {"command": "ls -la"}
    assert out.additional_context == ["ran through the wrapper"]


@pytest.mark.parametrize("event", [HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START, HookEvent.POST_TOOL_USE])
async def test_additional_context_for_context_events(lab, event):
    out = await run_one(lab, event, {"hookSpecificOutput": {"hookEventName": event.value,
                                                            "additionalContext": "today is Tuesday"}})
    assert out.additional_context == ["today is Tuesday"]


async def test_hook_specific_output_for_another_event_is_rejected(lab):
    out = await run_one(lab, HookEvent.PRE_TOOL_USE, {"hookSpecificOutput": {
        "hookEventName": "PostToolUse", "permissionDecision": "deny"}})
    assert out.permission_decision is None
    assert len(out.errors) == 1 and "'PostToolUse', not 'PreToolUse'" in out.errors[0]


async def test_unknown_permission_decision_and_bad_updated_input_are_reported(lab):
    out = await run_one(lab, HookEvent.PRE_TOOL_USE, {"hookSpecificOutput": {
        "permissionDecision": "maybe", "updatedInput": "rm -rf /"}})
    assert out.permission_decision is None and out.updated_input is None
    assert len(out.errors) == 2


async def test_updated_input_is_ignored_outside_pre_tool_use(lab):
    out = await run_one(lab, HookEvent.POST_TOOL_USE, {"hookSpecificOutput": {
        "hookEventName": "PostToolUse", "updatedInput": {"x": 1}, "permissionDecision": "deny"}})
    assert out.updated_input is None and out.permission_decision is None


async def test_non_object_json_stdout_is_plain_output(lab):
    out = await run_one(lab, HookEvent.USER_PROMPT_SUBMIT, '["not", "an", "object"]')
    assert out.additional_context == ['["not", "an", "object"]']


async def test_aggregate_deny_beats_ask_beats_allow(lab):
    def spec(d, why):
        return say(lab, {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": d,
                                                "permissionDecisionReason": why}})
    allow, ask, deny = spec("allow", "fine"), spec("ask", "check"), spec("deny", "no")
    runner = lab.runner({"PreToolUse": [group(allow, ask)]})
    out = await asyncio.wait_for(runner.run(HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"}), 30)
    assert (out.permission_decision, out.permission_reason) == ("ask", "check")
    runner = lab.runner({"PreToolUse": [group(allow, ask, deny)]})
    out = await asyncio.wait_for(runner.run(HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"}), 30)
    assert (out.permission_decision, out.permission_reason) == ("deny", "no")


async def test_aggregate_concatenates_and_any_continue_false_wins(lab):
    a = say(lab, {"continue": False, "stopReason": "first", "systemMessage": "m1"})
    b = say(lab, {"continue": True, "systemMessage": "m2",
                  "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "c2"}})
    c = lab.script("echo plain context")
    d = lab.script("echo 'bad' >&2; exit 2")
    e = lab.script("echo 'worse' >&2; exit 2")
    runner = lab.runner({"UserPromptSubmit": [group(a, b), group(c, d, e)]})
    out = await asyncio.wait_for(runner.run(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "p"}), 30)
    assert out.prevent_continuation and out.stop_reason == "first"
    assert out.system_messages == ["m1", "m2"]
    assert out.additional_context == ["c2", "plain context"]
    assert out.blocked and out.block_reasons == ["bad", "worse"]
    assert out.hooks_run == 5


async def test_last_updated_input_in_configuration_order_wins(lab):
    # The first hook finishes last; configuration order, not completion order, decides.
    first = say(lab, {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"v": 1}}}, delay=0.5)
    second = say(lab, {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"v": 2}}})
    runner = lab.runner({"PreToolUse": [group(first), group(second)]})
    out = await asyncio.wait_for(runner.run(HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"}), 30)
    assert out.updated_input == {"v": 2}
