"""EndConversation and subagents through the real CLI against the loopback fake API (spec 000)."""

import json

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl, transcripts

ON = {"CODELOOP_FEATURE_END_CONVERSATION": "true"}


def test_gated_off_by_default_and_for_old_models(tmp_path):
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    with api.serve() as url:
        codeloop(["-p", "x", "--model", "claude-opus-4-8"], cwd=tmp_path, base_url=url)       # flag missing
        codeloop(["-p", "x", "--model", "claude-opus-4-7"], cwd=tmp_path, base_url=url, env=ON)  # below floor
    for req in api.requests:
        assert "EndConversation" not in req.tool_names and "EndConversation" not in req.system_text


def test_two_calls_end_the_session_exit_1_and_resume_refused(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("ToolSearch", {"query": "select:EndConversation"})),
        sse(text("I will end this."), tool_use("EndConversation", {}, id="e1")),
        sse(tool_use("EndConversation", {}, id="e2")),
        sse(text("never sent")))
    with api.serve() as url:
        r = codeloop(["-p", "stop talking to me", "--model", "claude-opus-4-8", "--output-format", "stream-json",
                      "--verbose"], cwd=tmp_path, base_url=url, env=ON)
        sid = jsonl(r.stdout)[0]["session_id"]
        again = codeloop(["-p", "hello?", "--resume", sid], cwd=tmp_path, base_url=url, env=ON)
    assert r.returncode == 1, r.stderr
    lines = jsonl(r.stdout)
    assert "EndConversation" in lines[0]["tools"]
    # deferred: only a hint until ToolSearch loads it, then the full schema rides along
    assert "EndConversation" not in api.requests[0].tool_names
    assert "EndConversation (deferred tool)" in api.requests[0].system_text
    assert "EndConversation" in api.requests[1].tool_names
    first = json.loads(api.requests[2].messages[-1]["content"][0]["content"])
    assert first["ended"] is False and "again" in first["message"]
    result = lines[-1]
    assert result["type"] == "result" and result["is_error"] is True and result["terminal_reason"] == "ended_by_model"
    assert "ended this conversation" in result["errors"][0]
    assert len(api.requests) == 3
    entries = [json.loads(l) for l in transcripts(tmp_path)[0].read_text().splitlines()]
    markers = [e for e in entries if e["type"] == "ended-by-model"]
    assert len(markers) == 1 and markers[0]["sessionId"] == sid and "timestamp" in markers[0]
    assert again.returncode == 1 and "was ended by the model" in again.stderr and len(api.requests) == 3


def test_subagent_messages_carry_parent_tool_use_id(tmp_path):
    (tmp_path / "notes.txt").write_text("the secret is 42\n")
    api = ScriptedAPI(
        sse(tool_use("Task", {"description": "find secret", "prompt": "Read notes.txt and report the secret",
                              "subagent_type": "general-purpose"}, id="task1")),
        sse(tool_use("Read", {"file_path": str(tmp_path / "notes.txt")})),   # the subagent
        sse(text("The secret is 42.")),                                       # the subagent's answer
        sse(text("The subagent says 42.")))                                   # the main agent
    with api.serve() as url:
        r = codeloop(["-p", "what is the secret", "--output-format", "stream-json", "--verbose"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    lines = jsonl(r.stdout)
    sub = [l for l in lines if l.get("parent_tool_use_id") == "task1"]
    # prompt, Read, result: the subagent's closing text stays unsent without forwardSubagentText (Claude Code's rule)
    assert [l["type"] for l in sub] == ["user", "assistant", "user"]
    assert all(b["type"] != "text" for l in sub if l["type"] == "assistant" for b in l["message"]["content"])
    assert "Task" not in api.requests[1].tool_names            # no recursion inside the subagent
    task_result = api.requests[3].messages[-1]["content"][0]
    assert task_result["tool_use_id"] == "task1" and task_result["content"] == "The secret is 42."
    assert lines[-1]["result"] == "The subagent says 42."
    sub_transcripts = list((tmp_path / ".cfg" / "projects").rglob("subagents/*.jsonl"))
    assert len(sub_transcripts) == 1
