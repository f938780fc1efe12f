"""Issue 26: the event vocabulary (all 30 of Claude Code's events) and the firing functions kept for
features codeloop lacks yet (MCP elicitation, settings reloaded mid-session), with real hook scripts."""

from __future__ import annotations

import asyncio
import json

from hooklab import group

from codeloop.hooks.events import EVENT_FIELDS, MATCH_FIELD, HookEvent, match_value
from codeloop.hooks.lifecycle import LifecycleHooks, stop_failure_error

CLAUDE_CODE_EVENTS = {
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
    "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
    "PreCompact", "PostCompact", "PermissionRequest", "PermissionDenied", "Setup", "TeammateIdle", "TaskCreated",
    "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange", "WorktreeCreate", "WorktreeRemove",
    "InstructionsLoaded", "CwdChanged", "FileChanged", "MessageDisplay"}


def test_every_event_is_named_with_its_payload_fields():
    assert {e.value for e in HookEvent} == CLAUDE_CODE_EVENTS and len(CLAUDE_CODE_EVENTS) == 30
    assert set(EVENT_FIELDS) == set(HookEvent)
    assert all(MATCH_FIELD[e] in EVENT_FIELDS[e] for e in MATCH_FIELD)


def test_file_changed_matches_the_base_name_and_events_without_matchers_match_nothing():
    assert match_value(HookEvent.FILE_CHANGED, {"file_path": "/work/p/.envrc"}) == ".envrc"
    assert match_value(HookEvent.STOP_FAILURE, {"error": "rate_limit"}) == "rate_limit"
    assert match_value(HookEvent.POST_TOOL_BATCH, {"tool_calls": []}) is None


def test_stop_failure_error_types():
    class Err(Exception):
        def __init__(self, status, error_type="api_error"):
            self.status, self.error_type = status, error_type

    assert [stop_failure_error(Err(s, t)) for s, t in [(429, "rate_limit_error"), (529, "overloaded_error"),
                                                         (401, "authentication_error"), (404, "not_found_error"),
                                                         (400, "invalid_request_error"), (502, "api_error")]] == [
        "rate_limit", "overloaded", "authentication_failed", "model_not_found", "invalid_request", "server_error"]
    assert stop_failure_error(OSError("connection reset")) == "unknown"


def lifecycle(lab, hooks):
    runner = lab.runner(hooks)
    shown: list = []
    return LifecycleHooks(lambda: runner, shown.extend), shown


async def test_an_elicitation_hook_answers_for_the_user_and_exit_2_declines(lab):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                                "content": {"token": "abc"}}})
    accept = lab.script(f"cat > {lab.root}/elicit.json; echo '{answer}'")
    decline = lab.script("echo 'not this server' >&2; exit 2")
    hooks, _ = lifecycle(lab, {"Elicitation": [group(accept, matcher="github"), group(decline, matcher="evil")]})
    got = await asyncio.wait_for(hooks.elicitation("github", "Your token?", {"type": "object"}), 30)
    assert got == {"action": "accept", "content": {"token": "abc"}}
    seen = lab.read_json("elicit.json")
    assert seen["mcp_server_name"] == "github" and seen["message"] == "Your token?"
    assert seen["requested_schema"] == {"type": "object"} and seen["mode"] == "form"
    assert await asyncio.wait_for(hooks.elicitation("evil", "?", {}), 30) == {"action": "decline"}
    assert await asyncio.wait_for(hooks.elicitation("other", "?", {}), 30) is None   # nobody answered: ask


async def test_elicitation_result_keeps_the_answer_unless_a_hook_overrides_it(lab):
    seen = lab.script(f"cat > {lab.root}/result.json")
    hooks, _ = lifecycle(lab, {"ElicitationResult": [group(seen)]})
    got = await asyncio.wait_for(hooks.elicitation_result("github", "accept", {"a": 1}, elicitation_id="e1"), 30)
    assert got == {"action": "accept", "content": {"a": 1}}
    assert lab.read_json("result.json")["elicitation_id"] == "e1"


async def test_config_change_can_block_except_for_policy_settings(lab):
    block = lab.script(f"cat > {lab.root}/change.json; echo 'frozen' >&2; exit 2")
    hooks, shown = lifecycle(lab, {"ConfigChange": [group(block, matcher="project_settings|policy_settings")]})
    assert await asyncio.wait_for(hooks.config_change("project_settings", "/p/.claude/settings.json"), 30)
    assert lab.read_json("change.json")["file_path"] == "/p/.claude/settings.json"
    assert not await asyncio.wait_for(hooks.config_change("policy_settings", "/etc/x.json"), 30)
    assert not await asyncio.wait_for(hooks.config_change("user_settings", "/u.json"), 30)   # matcher: source
