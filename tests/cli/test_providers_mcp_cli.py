"""OpenAI-compatible providers and MCP servers through the real CLI (issue 9)."""

import json
import sys
from pathlib import Path

import pytest

from fakeapi import Response, ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl

SERVERS = Path(__file__).resolve().parent.parent / "mcp" / "servers"


def openai_sse(*chunks) -> Response:
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
    return Response([(0.0, body)], headers={"content-type": "text/event-stream"})


def delta(d=None, finish=None, usage=None):
    c = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
         "choices": [{"index": 0, "delta": d or {}, "finish_reason": finish}]}
    if usage:
        c["usage"] = usage
    return c


def test_openai_provider_end_to_end(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    call = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                            "function": {"name": "Read",
                                         "arguments": json.dumps({"file_path": str(tmp_path / "a.txt")})}}]}
    api = ScriptedAPI(openai_sse(delta(call), delta(finish="tool_calls"),
                                 delta(usage={"prompt_tokens": 50, "completion_tokens": 5})),
                      openai_sse(delta({"content": "It says alpha."}), delta(finish="stop")))
    with api.serve() as url:
        r = codeloop(["-p", "read a.txt", "--model", "openai:gpt-4o", "--output-format", "json"], cwd=tmp_path,
                     base_url="http://127.0.0.1:9", env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-x"})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["result"] == "It says alpha." and res["num_turns"] == 2
    first, second = api.requests
    assert first.path == "/v1/chat/completions" and first.body["model"] == "gpt-4o" and first.body["stream"] is True
    assert any(t["function"]["name"] == "Read" for t in first.body["tools"])
    tool_msg = [m for m in second.body["messages"] if m["role"] == "tool"][0]
    assert tool_msg["tool_call_id"] == "call_1" and "alpha" in tool_msg["content"]


def test_openai_provider_needs_a_model_and_key(tmp_path):
    r = codeloop(["-p", "x"], cwd=tmp_path, env={"CODELOOP_PROVIDER": "openrouter", "OPENROUTER_API_KEY": ""})
    assert r.returncode == 1 and "--model is required" in r.stderr
    r2 = codeloop(["-p", "x", "--model", "openrouter:some/model"], cwd=tmp_path, env={"OPENROUTER_API_KEY": ""})
    assert r2.returncode == 1 and "OPENROUTER_API_KEY" in r2.stderr and "Traceback" not in r2.stderr


mcp = pytest.importorskip("mcp", reason="the mcp SDK is not installed")


def mcp_config(tmp_path, **servers):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def test_mcp_tools_status_and_permission_rules(tmp_path):
    cfg = mcp_config(tmp_path, tools={"command": sys.executable, "args": [str(SERVERS / "tools_server.py"), "stdio"]},
                     broken={"command": "/nonexistent/server"})
    api = ScriptedAPI(sse(tool_use("mcp__tools__echo", {"text": "hi mcp"}, id="e"),
                          tool_use("mcp__tools__add", {"a": 1, "b": 2}, id="a")), sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "use mcp", "--mcp-config", cfg, "--allowedTools", "mcp__tools__echo",
                      "--output-format", "stream-json", "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    init = jsonl(r.stdout)[0]
    assert sorted(init["mcp_servers"], key=lambda s: s["name"]) == [{"name": "broken", "status": "failed"},
                                                                     {"name": "tools", "status": "connected"}]
    assert "mcp__tools__echo" in init["tools"] and "mcp__tools__echo" in api.requests[0].tool_names
    results = {b["tool_use_id"]: b for b in api.requests[1].messages[-1]["content"] if b["type"] == "tool_result"}
    assert "hi mcp" in json.dumps(results["e"]["content"]) and not results["e"].get("is_error")
    assert results["a"]["is_error"] is True          # not allowed: denied in print mode
    assert "broken" in r.stderr                      # the failing server is reported, the session goes on


def test_mcp_permission_prompt_tool(tmp_path):
    cfg = mcp_config(tmp_path, approver={"command": sys.executable, "args": [str(SERVERS / "approver.py")]})
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(tmp_path / "ok.txt"), "content": "yes"}, id="w"),
                          tool_use("Bash", {"command": "touch no"}, id="b")), sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--mcp-config", cfg, "--permission-prompt-tool", "mcp__approver__approve",
                      "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ok.txt").read_text() == "yes" and not (tmp_path / "no").exists()
    results = {b["tool_use_id"]: b for b in api.requests[1].messages[-1]["content"] if b["type"] == "tool_result"}
    assert "the approver does not allow Bash" in results["b"]["content"]
    missing = codeloop(["-p", "go", "--permission-prompt-tool", "mcp__nope__x"], cwd=tmp_path)
    assert missing.returncode == 1 and "no such MCP tool" in missing.stderr
