"""Acceptance: Python hook callbacks registered through the official `claude-agent-sdk` fire for
every event it can register, with Claude Code's payload fields, and their answers count like a
shell hook's JSON. codeloop runs as the SDK's `cli_path` against the scripted fake API."""

import json
import re

import pytest

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
from claude_agent_sdk import ClaudeSDKClient, HookMatcher, ResultMessage  # noqa: E402

from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402
from test_sdk_interop import _real_cli, options  # noqa: E402

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def sent_text(req) -> str:
    return json.dumps(req.messages)


async def run_client(cli, url, tmp_path, prompts, **kw):
    out = []
    async with ClaudeSDKClient(options=options(cli, url, tmp_path, **kw)) as client:
        for p in prompts:
            await client.query(p)
            out.append([m async for m in client.receive_response()])
    return out


async def test_tool_prompt_permission_and_stop_hooks(tmp_path):
    cli = _real_cli(tmp_path)
    (tmp_path / "notes.txt").write_text("alpha\n")
    seen: dict[str, list] = {}

    def recorder(event, answer):
        async def hook(inp, tool_use_id, ctx):
            seen.setdefault(event, []).append((inp, tool_use_id))
            return answer(inp) if callable(answer) else answer
        return hook

    def stop_answer(inp):  # the first Stop keeps the model working; the second lets it stop
        if inp["stop_hook_active"]:
            return {}
        return {"decision": "block", "reason": "also say BYE"}

    hooks = {
        "UserPromptSubmit": [HookMatcher(hooks=[recorder("UserPromptSubmit", {"hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit", "additionalContext": "CTX-FROM-PROMPT-HOOK"}})])],
        "PostToolUse": [HookMatcher(matcher="Read", hooks=[recorder("PostToolUse", {"hookSpecificOutput": {
            "hookEventName": "PostToolUse", "additionalContext": "CTX-AFTER-READ"}})])],
        "PostToolUseFailure": [HookMatcher(hooks=[recorder("PostToolUseFailure", {"hookSpecificOutput": {
            "hookEventName": "PostToolUseFailure", "additionalContext": "CTX-AFTER-FAILURE"}})])],
        "PermissionRequest": [HookMatcher(matcher="Write", hooks=[recorder("PermissionRequest", {
            "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})])],
        "Stop": [HookMatcher(hooks=[recorder("Stop", stop_answer)])],
    }
    missing, written = tmp_path / "missing.txt", tmp_path / "out.txt"
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}, id="r_ok"),
                          tool_use("Read", {"file_path": str(missing)}, id="r_missing"),
                          tool_use("Write", {"file_path": str(written), "content": "hi"}, id="w1")),
                      sse(text("done")), sse(text("BYE")))
    with api.serve() as url:
        [turn] = await run_client(cli, url, tmp_path, ["read and write"], hooks=hooks)
    result = turn[-1]
    assert isinstance(result, ResultMessage) and not result.is_error and result.result == "BYE"

    # UserPromptSubmit: the prompt and its id; its context reached the model with the prompt
    [(ups, _)] = seen["UserPromptSubmit"]
    assert ups["prompt"] == "read and write" and UUID.fullmatch(ups["prompt_id"])
    assert "CTX-FROM-PROMPT-HOOK" in sent_text(api.requests[0])
    # PostToolUse (matcher Read): only the read that worked, with its duration; context in its result
    [(post, post_id)] = seen["PostToolUse"]
    assert post_id == "r_ok" and post["tool_name"] == "Read" and isinstance(post["duration_ms"], int)
    assert post["prompt_id"] == ups["prompt_id"] and "notes.txt" in json.dumps(post["tool_response"])
    assert "CTX-AFTER-READ" in json.dumps(api.requests[1].tool_result("r_ok"))
    # PostToolUseFailure: the failed read, its error; context joins the error the model sees
    [(fail, fail_id)] = seen["PostToolUseFailure"]
    assert fail_id == "r_missing" and fail["tool_input"] == {"file_path": str(missing)} and fail["error"]
    failed = api.requests[1].tool_result("r_missing")
    assert failed["is_error"] and "CTX-AFTER-FAILURE" in json.dumps(failed)
    # PermissionRequest answered the Write's prompt (default mode would have denied it headless)
    [(perm, _)] = seen["PermissionRequest"]
    assert perm["tool_name"] == "Write" and perm["tool_input"]["file_path"] == str(written)
    assert written.read_text() == "hi" and result.permission_denials == []
    # Stop: twice, with the last assistant text; the block reason went back to the model
    assert [(s["stop_hook_active"], s["last_assistant_message"]) for s, _ in seen["Stop"]] == [
        (False, "done"), (True, "BYE")]
    assert "also say BYE" in sent_text(api.requests[2])


async def test_blocking_prompt_hook_and_continue_false(tmp_path):
    cli = _real_cli(tmp_path)

    async def gate(inp, tool_use_id, ctx):
        if "secret" in inp["prompt"]:
            return {"decision": "block", "reason": "no secrets here"}
        return {}

    async def halt(inp, tool_use_id, ctx):
        return {"continue_": False, "stopReason": "enough for today"}

    hooks = {"UserPromptSubmit": [HookMatcher(hooks=[gate])],
             "PostToolUse": [HookMatcher(matcher="Bash", hooks=[halt])]}
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo one"}, id="b1")), sse(text("never sent")))
    with api.serve() as url:
        blocked, halted = await run_client(cli, url, tmp_path, ["tell me the secret", "run it"], hooks=hooks,
                                           permission_mode="bypassPermissions")
    # the blocked prompt never reached the model
    assert all("tell me the secret" not in sent_text(r) for r in api.requests)
    assert isinstance(blocked[-1], ResultMessage)
    # continue:false from PostToolUse ended the turn after the tool: one request only
    assert len(api.requests) == 1 and isinstance(halted[-1], ResultMessage)


async def test_failing_callback_blocks_only_with_on_failure_block(tmp_path):
    cli = _real_cli(tmp_path)
    target = tmp_path / "guarded.txt"

    async def broken(inp, tool_use_id, ctx):
        raise RuntimeError("policy service down")

    hooks = {"PreToolUse": [HookMatcher(matcher="Write", hooks=[broken], on_failure="block")]}
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(target), "content": "x"}, id="w1")),
                      sse(text("could not write")))
    with api.serve() as url:
        [turn] = await run_client(cli, url, tmp_path, ["write"], hooks=hooks, permission_mode="bypassPermissions")
    assert not target.exists()  # fail closed
    assert "policy service down" in json.dumps(api.requests[1].tool_result("w1"))
    assert turn[-1].result == "could not write"


async def test_compact_hooks_and_session_start_compact(tmp_path):
    cli = _real_cli(tmp_path)
    seen: dict[str, list] = {}

    def recorder(event, answer=None):
        async def hook(inp, tool_use_id, ctx):
            seen.setdefault(event, []).append(inp)
            return answer or {}
        return hook

    hooks = {"PreCompact": [HookMatcher(matcher="manual", hooks=[recorder("PreCompact")])],
             "PostCompact": [HookMatcher(hooks=[recorder("PostCompact")])],
             "SessionStart": [HookMatcher(matcher="compact", hooks=[recorder("SessionStart", {"hookSpecificOutput": {
                 "hookEventName": "SessionStart", "additionalContext": "CTX-AFTER-COMPACT"}})])]}
    api = ScriptedAPI(sse(text("hello")), sse(text("SUMMARY OF THE TALK")), sse(text("still here")))
    with api.serve() as url:
        await run_client(cli, url, tmp_path, ["hi", "/compact", "are you there?"], hooks=hooks)
    assert [i["trigger"] for i in seen["PreCompact"]] == ["manual"]
    [post] = seen["PostCompact"]
    assert post["trigger"] == "manual" and "SUMMARY OF THE TALK" in post["compact_summary"]
    assert [i["source"] for i in seen["SessionStart"]] == ["compact"]
    assert "CTX-AFTER-COMPACT" in sent_text(api.requests[2])


async def test_session_start_pre_tool_rewrite_and_notification(tmp_path):
    from claude_agent_sdk import PermissionResultAllow

    cli = _real_cli(tmp_path)
    target = tmp_path / "w.txt"
    seen: dict[str, list] = {}
    asked = []

    def recorder(event, answer=None):
        async def hook(inp, tool_use_id, ctx):
            seen.setdefault(event, []).append(inp)
            return answer or {}
        return hook

    async def can_use_tool(name, inp, ctx):
        asked.append((name, inp))
        return PermissionResultAllow()

    rewrite = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                      "updatedInput": {"file_path": str(target), "content": "rewritten"}}}
    hooks = {"SessionStart": [HookMatcher(hooks=[recorder("SessionStart", {"hookSpecificOutput": {
                 "hookEventName": "SessionStart", "additionalContext": "CTX-AT-START"}})])],
             "PreToolUse": [HookMatcher(matcher="Write", hooks=[recorder("PreToolUse", rewrite)])],
             "Notification": [HookMatcher(hooks=[recorder("Notification")])]}
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(target), "content": "original"}, id="w1")),
                      sse(text("written")))
    with api.serve() as url:
        [turn] = await run_client(cli, url, tmp_path, ["write it"], hooks=hooks, can_use_tool=can_use_tool)
    assert turn[-1].result == "written" and target.read_text() == "rewritten"
    assert [s["source"] for s in seen["SessionStart"]] == ["startup"]
    assert "CTX-AT-START" in sent_text(api.requests[0])
    assert seen["PreToolUse"][0]["tool_input"] == {"file_path": str(target), "content": "original"}
    [note] = seen["Notification"]
    assert note["notification_type"] == "permission_prompt" and "Write" in note["message"]
    assert asked == [("Write", {"file_path": str(target), "content": "rewritten"})]


async def test_include_hook_events_reports_each_hook(tmp_path):
    from claude_agent_sdk import HookEventMessage

    cli = _real_cli(tmp_path)

    async def deny(inp, tool_use_id, ctx):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "nope"}}

    api = ScriptedAPI(sse(tool_use("Bash", {"command": "true"}, id="b1")), sse(text("ok")))
    with api.serve() as url:
        [turn] = await run_client(cli, url, tmp_path, ["go"], hooks={"PreToolUse": [HookMatcher(hooks=[deny])]},
                                  include_hook_events=True, permission_mode="bypassPermissions")
    events = [m for m in turn if isinstance(m, HookEventMessage)]
    assert [(e.subtype, e.hook_event_name) for e in events] == [("hook_started", "PreToolUse"),
                                                                ("hook_response", "PreToolUse")]
    started, response = events
    assert started.data["hook_id"] == response.data["hook_id"] and started.data["hook_name"] == "PreToolUse:Bash"
    assert response.data["outcome"] == "success" and "nope" in response.data["output"]
    assert turn[-1].result == "ok"


async def test_newer_events_reach_sdk_callbacks(tmp_path):
    """Issue 26: PostToolBatch, PermissionDenied and MessageDisplay callbacks (hook_callback over
    stream-json), with Claude Code's payloads and the meaning of their answers."""
    from claude_agent_sdk import AssistantMessage, TextBlock

    cli = _real_cli(tmp_path)
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "secret.txt").write_text("s3cret\n")
    seen: dict[str, list] = {}

    def recorder(event, answer=None):
        async def hook(inp, tool_use_id, ctx):
            seen.setdefault(event, []).append(inp)
            return answer or {}
        return hook

    hooks = {
        "PostToolBatch": [HookMatcher(hooks=[recorder("PostToolBatch", {"hookSpecificOutput": {
            "hookEventName": "PostToolBatch", "additionalContext": "CTX-AFTER-BATCH"}})])],
        "PermissionDenied": [HookMatcher(matcher="Read", hooks=[recorder("PermissionDenied", {"hookSpecificOutput": {
            "hookEventName": "PermissionDenied", "retry": True}})])],
        "MessageDisplay": [HookMatcher(hooks=[recorder("MessageDisplay", {"hookSpecificOutput": {
            "hookEventName": "MessageDisplay", "displayContent": "SHOWN-INSTEAD"}})])],
    }
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "a.txt")}, id="r_ok"),
                          tool_use("Read", {"file_path": str(tmp_path / "secret.txt")}, id="r_denied")),
                      sse(text("the real text")))
    with api.serve() as url:
        [turn] = await run_client(cli, url, tmp_path, ["read"], hooks=hooks, disallowed_tools=["Read(./secret.txt)"])
    [batch] = seen["PostToolBatch"]
    assert [c["tool_use_id"] for c in batch["tool_calls"]] == ["r_ok", "r_denied"]
    assert "alpha" in json.dumps(batch["tool_calls"][0]["tool_response"])
    assert "CTX-AFTER-BATCH" in sent_text(api.requests[1])
    [denied] = seen["PermissionDenied"]
    assert denied["tool_use_id"] == "r_denied" and denied["tool_name"] == "Read" and denied["reason"]
    assert "may try this call again" in json.dumps(api.requests[1].tool_result("r_denied"))
    [shown] = seen["MessageDisplay"]
    assert shown["delta"] == "the real text" and shown["final"] is True
    texts = [b.text for m in turn if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]
    assert texts == ["SHOWN-INSTEAD"]
