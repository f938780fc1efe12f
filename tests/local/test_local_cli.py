"""`codeloop --model local` and text tool calls through the real CLI (issue 19).

The model is a loopback fake speaking Chat Completions SSE: `CODELOOP_LOCAL_BASE_URL` points the
local profile at it instead of the embedded runtime, so the profile (tools, prompt, sandbox
setting, permission mode), the constrained request and its translation run for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fakeapi import Response, ScriptedAPI

LOCAL_TOOLS = {"Read", "Edit", "Write", "Bash", "Glob", "Grep"}


def run(args, *, cwd, env=None, timeout=90):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "CODELOOP_", "OPENAI_", "OLLAMA_"))}
    full.update({"ANTHROPIC_API_KEY": "", "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd)})
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout)


def reply(content: str, *, model: str = "local-model") -> Response:
    """One streamed Chat Completions reply whose content arrives in three pieces."""
    size = max(1, len(content) // 3)
    pieces = [content[i:i + size] for i in range(0, len(content), size)]
    chunks = [{"id": "c1", "object": "chat.completion.chunk", "model": model,
               "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    chunks.append({"id": "c1", "object": "chat.completion.chunk", "model": model,
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 300, "completion_tokens": 12}})
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
    return Response([(0.0, body)], headers={"content-type": "text/event-stream"})


def run_local(tmp_path, prompt: str, *replies: Response, args: tuple[str, ...] = ()):
    """`codeloop -p PROMPT --model local` (stream-json) against a fake model server scripted with
    `replies`; returns the finished process and the server (its requests)."""
    api = ScriptedAPI(*replies)
    with api.serve() as url:
        r = run(["-p", prompt, "--model", "local", "--output-format", "stream-json", "--verbose", *args],
                cwd=tmp_path, env={"CODELOOP_LOCAL_BASE_URL": url + "/v1"})
    return r, api


def options(req) -> list[str]:
    schema = req.body["response_format"]["json_schema"]["schema"]
    return [o["properties"]["name"]["const"] if "name" in o["properties"] else "answer" for o in schema["anyOf"]]


def test_local_profile_end_to_end_with_constrained_calls(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    r, api = run_local(tmp_path, "what is on line two of the notes file?",
                       reply(json.dumps({"name": "Read", "arguments": {"file_path": "notes.txt"}})),
                       reply(json.dumps({"answer": "Line two is beta."})))
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    init, result = lines[0], lines[-1]
    assert init["subtype"] == "init" and init["apiKeySource"] == "none" and init["model"] == "local"
    assert set(init["tools"]) == LOCAL_TOOLS and init["permissionMode"] == "default"
    assert result["subtype"] == "success" and result["result"] == "Line two is beta." and result["num_turns"] == 2
    tool_uses = [b for x in lines if x["type"] == "assistant" for b in x["message"]["content"]
                 if b["type"] == "tool_use"]
    assert [(b["name"], b["input"]) for b in tool_uses] == [("Read", {"file_path": "notes.txt"})]
    first, second = api.requests
    assert first.path == "/v1/chat/completions" and "tools" not in first.body
    assert first.body["cache_prompt"] is True and "id_slot" not in first.body  # a server we did not start
    # the second prompt starts with the whole first one: the server's prompt cache covers it
    assert second.body["messages"][:2] == first.body["messages"][:2]
    # the first reply to a prompt must be a tool call; after a result the answer is allowed
    assert set(options(first)) == LOCAL_TOOLS and options(second)[-1] == "answer"
    system = first.body["messages"][0]["content"]
    assert "Do only what the user asked" in system and '"answer"' in system and "- Read {" in system
    assert len(system) < 4000  # the short profile, not the full prompt
    assert any("Result of Read:" in m["content"] and "beta" in m["content"] for m in second.body["messages"]
               if m["role"] == "user")


def test_local_profile_never_bypasses_permissions(tmp_path):
    r = run(["-p", "hi", "--model", "local", "--dangerously-skip-permissions"], cwd=tmp_path,
            env={"CODELOOP_LOCAL_BASE_URL": "http://127.0.0.1:9/v1"})
    assert r.returncode == 1 and "never runs with bypassPermissions" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / ".cfg").mkdir(exist_ok=True)
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions"}}))
    r2 = run(["-p", "hi", "--model", "local"], cwd=tmp_path, env={"CODELOOP_LOCAL_BASE_URL": "http://127.0.0.1:9/v1"})
    assert r2.returncode == 1 and "bypassPermissions" in r2.stderr and "Traceback" not in r2.stderr


def test_no_key_error_offers_the_alternatives(tmp_path):
    from nolocal import env_without_local_model

    r = run(["-p", "hi"], cwd=tmp_path, env=env_without_local_model(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("Error: ANTHROPIC_API_KEY is not set.") and len(r.stderr.strip().splitlines()) == 1
    for hint in ("console.anthropic.com", "pip install 'codeloop[local,local-model]'", "ollama:", "openai:"):
        assert hint in r.stderr


def test_a_model_file_that_is_not_gguf_is_a_clear_error(tmp_path):
    (tmp_path / "fake.gguf").write_text("not a model")
    r = run(["-p", "hi", "--model", f"local:{tmp_path / 'fake.gguf'}"], cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    # without the runtime installed the error names the extra; with it, the file is refused
    assert "not a GGUF model file" in r.stderr or "codeloop[local]" in r.stderr


# -- text tool calls through every OpenAI-compatible provider --------------------------------------

def test_openai_text_tool_call_runs_the_tool(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    call = json.dumps({"name": "Read", "arguments": {"file_path": str(tmp_path / "a.txt")}})
    api = ScriptedAPI(reply(f"```json\n{call}\n```", model="qwen2.5-coder"), reply("It says alpha."))
    with api.serve() as url:
        r = run(["-p", "read a.txt", "--model", "openai:qwen2.5-coder", "--output-format", "stream-json",
                 "--verbose"], cwd=tmp_path, env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-x"})
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    assert lines[0]["apiKeySource"] == "OPENAI_API_KEY"
    assert lines[-1]["result"] == "It says alpha." and lines[-1]["num_turns"] == 2
    tool_msg = [m for m in api.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert "alpha" in tool_msg["content"]


def test_unknown_tool_blob_is_an_error_the_model_sees_not_a_success(tmp_path):
    blob = json.dumps({"name": "FetchWeb", "arguments": {"url": "http://example.com"}})
    api = ScriptedAPI(reply(blob), reply("I cannot fetch pages here."))
    with api.serve() as url:
        r = run(["-p", "fetch it", "--model", "ollama:qwen2.5-coder:1.5b", "--output-format", "stream-json",
                 "--verbose"], cwd=tmp_path, env={"OLLAMA_BASE_URL": url + "/v1"})
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    assert lines[0]["apiKeySource"] == "none"
    assert lines[-1]["result"] == "I cannot fetch pages here." and blob not in lines[-1]["result"]
    tool_msg = [m for m in api.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert "No such tool available: FetchWeb" in tool_msg["content"]


def test_anthropic_api_key_source(tmp_path):
    from fakeapi import sse, text

    api = ScriptedAPI(sse(text("hi")))
    with api.serve() as url:
        r = run(["-p", "hi", "--output-format", "stream-json", "--verbose"], cwd=tmp_path,
                env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["apiKeySource"] == "ANTHROPIC_API_KEY"


def test_local_profile_attaches_the_file_a_prompt_names(tmp_path):
    (tmp_path / "config.ini").write_text("[server]\nPORT=8431\n")
    api = ScriptedAPI(reply(json.dumps({"name": "Grep", "arguments": {"pattern": "PORT"}})),
                      reply(json.dumps({"answer": "PORT is 8431."})))
    with api.serve() as url:
        r = run(["-p", "What is the value of PORT in config.ini?", "--model", "local", "--output-format", "json"],
                cwd=tmp_path, env={"CODELOOP_LOCAL_BASE_URL": url + "/v1"})
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["result"] == "PORT is 8431." and result["num_turns"] == 2
    first, second = api.requests
    prompt = first.body["messages"][-1]["content"]
    assert "PORT=8431" in prompt and prompt.rstrip().endswith("What is the value of PORT in config.ini?")
    # still a tool call first (a small model asked to run an attached script guesses its output)
    assert "answer" not in options(first) and options(second)[-1] == "answer"
    # the results turn restates the request
    assert "(The request: What is the value of PORT in config.ini?" in second.body["messages"][-1]["content"]
