"""In-process hook callbacks (the Agent SDK's) run next to shell hooks, and their answers are read
like a command's JSON: continue/decision/additionalContext/PermissionRequest decisions, failures
(non-blocking, or blocking with onFailure block), timeouts, and the common payload fields."""

import asyncio

from hooklab import group

from codeloop.hooks import HookEvent, StopHookAdapter
from codeloop.hooks.events import CallbackSource, HookCallback, OnFailure
from codeloop.messages import Message

GUARD_S = 30


class Source(CallbackSource):
    def __init__(self, **by_event):
        self.by_event = by_event
        self.inputs: list[dict] = []

    def callbacks_for(self, event, match_value):
        out = []
        for answer, kw in self.by_event.get(event.value, []):
            async def call(data, answer=answer):
                self.inputs.append(data)
                if isinstance(answer, BaseException):
                    raise answer
                if answer == "hang":
                    await asyncio.sleep(60)
                return answer
            out.append(HookCallback("cb", call, **kw))
        return out


async def run(runner, event, payload):
    return await asyncio.wait_for(runner.run(event, payload), GUARD_S)


async def test_callbacks_and_commands_aggregate(lab):
    cmd = lab.script("cat >/dev/null; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", "
                     "\"additionalContext\": \"from shell\"}}'")
    runner = lab.runner({"PostToolUse": [group(cmd)]})
    runner.callbacks = Source(PostToolUse=[({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                                    "additionalContext": "from sdk"}}, {})])
    runner.prompt_id = "p-1"
    out = await run(runner, HookEvent.POST_TOOL_USE, {"tool_name": "Read", "duration_ms": 12})
    assert out.additional_context == ["from shell", "from sdk"] and out.hooks_run == 2
    [data] = runner.callbacks.inputs
    assert data["prompt_id"] == "p-1" and data["duration_ms"] == 12 and data["hook_event_name"] == "PostToolUse"
    assert data["session_id"] == "sess-1" and data["cwd"] == str(lab.cwd)


async def test_callback_failures_block_only_when_asked(lab):
    runner = lab.runner({})
    runner.callbacks = Source(PreToolUse=[(RuntimeError("down"), {})])
    out = await run(runner, HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"})
    assert not out.blocked and out.permission_decision is None and "down" in out.errors[0]
    runner.callbacks = Source(PreToolUse=[(RuntimeError("down"), {"on_failure": OnFailure.BLOCK})])
    out = await run(runner, HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"})
    assert out.blocked and out.permission_decision == "deny" and "down" in out.block_reasons[0]
    runner.callbacks = Source(PreToolUse=[("hang", {"timeout": 0.05, "on_failure": OnFailure.BLOCK})])
    out = await run(runner, HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"})
    assert out.blocked and "timed out" in out.block_reasons[0]
    runner.callbacks = Source(Notification=[(RuntimeError("down"), {"on_failure": OnFailure.BLOCK})])
    out = await run(runner, HookEvent.NOTIFICATION, {"message": "m"})
    assert not out.blocked and out.errors  # an event that cannot block only reports


async def test_permission_request_decisions_deny_wins(lab):
    allow = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                    "decision": {"behavior": "allow", "updatedInput": {"x": 1}}}}
    deny = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                   "decision": {"behavior": "deny", "message": "not today"}}}
    runner = lab.runner({})
    runner.callbacks = Source(PermissionRequest=[(allow, {})])
    out = await run(runner, HookEvent.PERMISSION_REQUEST, {"tool_name": "Write"})
    assert out.permission_request == {"behavior": "allow", "updatedInput": {"x": 1}}
    runner.callbacks = Source(PermissionRequest=[(allow, {}), (deny, {}), (allow, {})])
    out = await run(runner, HookEvent.PERMISSION_REQUEST, {"tool_name": "Write"})
    assert out.permission_request["behavior"] == "deny" and out.permission_request["message"] == "not today"
    runner.callbacks = Source(PermissionRequest=[({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest", "decision": "yes please"}}, {})])
    out = await run(runner, HookEvent.PERMISSION_REQUEST, {"tool_name": "Write"})
    assert out.permission_request is None and "decision must be" in out.errors[0]


async def test_pre_tool_defer_and_continue_false(lab):
    runner = lab.runner({})
    runner.callbacks = Source(PreToolUse=[({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                                   "permissionDecision": "defer"}}, {})])
    out = await run(runner, HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"})
    assert out.permission_decision is None and out.errors == []
    runner.callbacks = Source(PreToolUse=[({"continue": False, "stopReason": "halt"}, {})])
    out = await run(runner, HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"})
    assert out.prevent_continuation and out.stop_reason == "halt"


async def test_stop_adapter_payload_binding_and_context(lab):
    log = lab.root / "stop.json"
    cmd = lab.script(f"cat > {log}; echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"SubagentStop\", "
                     f"\"additionalContext\": \"check the tests\"}}}}'")
    runner = lab.runner({"SubagentStop": [group(cmd, matcher="reviewer")]})
    adapter = StopHookAdapter(runner, event=HookEvent.SUBAGENT_STOP)
    bound = adapter.bind(agent_id="a1", agent_type="reviewer", agent_transcript_path="/t/agent-a1.jsonl")
    msgs = [Message("assistant", [{"type": "text", "text": "first"}]),
            Message("assistant", [{"type": "text", "text": "all done"}])]
    outcome = await asyncio.wait_for(bound.run(msgs, stop_hook_active=False), GUARD_S)
    data = lab.read_json("stop.json")
    assert (data["agent_id"], data["agent_type"], data["agent_transcript_path"]) == (
        "a1", "reviewer", "/t/agent-a1.jsonl")
    assert data["last_assistant_message"] == "all done" and data["stop_hook_active"] is False
    assert "check the tests" in outcome.blocking_messages[0].text  # context keeps the agent working
    other = adapter.bind(agent_id="a2", agent_type="writer", agent_transcript_path="/t/agent-a2.jsonl")
    outcome = await asyncio.wait_for(other.run(msgs, stop_hook_active=False), GUARD_S)
    assert outcome.blocking_messages == [] and not outcome.prevent_continuation  # matcher: reviewer only
