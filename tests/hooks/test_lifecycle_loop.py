"""Issue 26: PostToolBatch, StopFailure and PermissionDenied hooks, fired by real Conversations
through the real loop against the scripted fake API, each a real shell script that saves its stdin."""

from __future__ import annotations

import json

from fakeapi import ScriptedAPI, error, sse, text, tool_use
from hookrec import calls, conv_for, recorder, submit

from codeloop.events import Terminal
from codeloop.loop.state import TerminalReason
from codeloop.permissions.policy import PermissionMode


def project(tmp_path):
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "a.txt").write_text("alpha\n")
    (cwd / "b.txt").write_text("beta\n")
    return cwd


async def test_post_tool_batch_fires_once_after_two_parallel_calls_and_its_context_reaches_the_model(tmp_path):
    cwd = project(tmp_path)
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolBatch",
                                                "additionalContext": "both files were read"}})
    hooks = {"PostToolBatch": [recorder(tmp_path, "batch.log", answer)],
             "PostToolUse": [{"matcher": "Read", **recorder(tmp_path, "post.log")}]}
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(cwd / "a.txt")}, id="t_a"),
                          tool_use("Read", {"file_path": str(cwd / "b.txt")}, id="t_b"), stop="tool_use"),
                      sse(text("done")))
    events = await submit(conv_for(api, cwd, hooks))
    assert [e.reason for e in events if isinstance(e, Terminal)] == [TerminalReason.COMPLETED]
    [batch] = calls(tmp_path, "batch.log")          # once for the batch, not once per call
    assert len(calls(tmp_path, "post.log")) == 2     # PostToolUse per call, both before the batch hook
    assert batch["hook_event_name"] == "PostToolBatch" and batch["cwd"] == str(cwd)
    assert [c["tool_use_id"] for c in batch["tool_calls"]] == ["t_a", "t_b"]
    assert [c["tool_name"] for c in batch["tool_calls"]] == ["Read", "Read"]
    assert batch["tool_calls"][0]["tool_input"] == {"file_path": str(cwd / "a.txt")}
    assert "alpha" in json.dumps(batch["tool_calls"][0]["tool_response"])
    assert "beta" in json.dumps(batch["tool_calls"][1]["tool_response"])
    sent = json.dumps(api.requests[1].body["messages"])
    assert "PostToolBatch hook additional context" in sent and "both files were read" in sent


async def test_post_tool_batch_exit_2_stops_the_loop_before_the_next_request(tmp_path):
    cwd = project(tmp_path)
    hooks = {"PostToolBatch": [recorder(tmp_path, "batch.log", code=2)]}
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(cwd / "a.txt")}, id="t_a"), stop="tool_use"),
                      sse(text("never")))
    events = await submit(conv_for(api, cwd, hooks))
    [done] = [e for e in events if isinstance(e, Terminal)]
    assert done.reason is TerminalReason.HOOK_STOPPED and done.error == "refused"
    assert len(api.requests) == 1 and len(calls(tmp_path, "batch.log")) == 1


async def test_a_turn_without_tool_calls_fires_no_post_tool_batch(tmp_path):
    cwd = project(tmp_path)
    api = ScriptedAPI(sse(text("just text")))
    await submit(conv_for(api, cwd, {"PostToolBatch": [recorder(tmp_path, "batch.log")]}))
    assert calls(tmp_path, "batch.log") == []


async def test_stop_failure_fires_instead_of_stop_with_the_error_type_as_matcher(tmp_path):
    cwd = project(tmp_path)
    hooks = {"StopFailure": [{"matcher": "invalid_request", **recorder(tmp_path, "fail.log")},
                             {"matcher": "rate_limit", **recorder(tmp_path, "wrong.log")}],
             "Stop": [recorder(tmp_path, "stop.log")]}
    api = ScriptedAPI(error(400, "invalid_request_error", "slow down and fix the request"))
    events = await submit(conv_for(api, cwd, hooks))
    assert [e.reason for e in events if isinstance(e, Terminal)] == [TerminalReason.API_ERROR]
    [fail] = calls(tmp_path, "fail.log")
    assert fail["hook_event_name"] == "StopFailure" and fail["error"] == "invalid_request"
    assert "slow down" in fail["error_details"]
    assert calls(tmp_path, "wrong.log") == [] and calls(tmp_path, "stop.log") == []


async def test_permission_denied_fires_for_a_rule_denial_and_retry_reaches_the_model(tmp_path):
    cwd = project(tmp_path)
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}})
    hooks = {"PermissionDenied": [{"matcher": "Read", **recorder(tmp_path, "denied.log", answer)},
                                  {"matcher": "Bash", **recorder(tmp_path, "bash.log")}],
             "PermissionRequest": [recorder(tmp_path, "request.log")]}
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(cwd / "a.txt")}, id="t_a"), stop="tool_use"),
                      sse(text("ok")))
    conv = conv_for(api, cwd, hooks, mode=PermissionMode.DEFAULT, deny=["Read(./a.txt)"])
    await submit(conv)
    [denied] = calls(tmp_path, "denied.log")
    assert denied["hook_event_name"] == "PermissionDenied" and denied["tool_name"] == "Read"
    assert denied["tool_use_id"] == "t_a" and denied["tool_input"] == {"file_path": str(cwd / "a.txt")}
    assert denied["reason"]
    assert calls(tmp_path, "bash.log") == [] and calls(tmp_path, "request.log") == []   # nobody was asked
    sent = json.dumps(api.requests[1].body["messages"])
    assert "may try this call again" in sent
