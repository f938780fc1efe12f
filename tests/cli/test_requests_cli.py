"""Issue 15 (requests, thinking), end to end: `codeloop -p` as a subprocess against the scripted
fake API, asserting the headers and body the server received and what the front end printed."""

import json
import re

from fakeapi import ScriptedAPI, sse, text, thinking, tool_use
from test_print_mode import codeloop

USER_ID = re.compile(r"^user_([0-9a-f]{64})_account__session_([0-9a-f-]{36})$")


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_default_request_headers_and_body(tmp_path):
    api = ScriptedAPI(sse(text("one")), sse(text("two")), sse(text("three")))
    with api.serve() as url:
        first = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url)
        second = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url)
        off = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url, env={"CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1"})
    assert first.returncode == second.returncode == off.returncode == 0, first.stderr + off.stderr
    req = api.requests[0]
    assert req.body["model"] == "claude-sonnet-4-5" and req.body["max_tokens"] == 64_000
    assert req.headers["anthropic-beta"].split(",") == ["fine-grained-tool-streaming-2025-05-14"]
    system = req.body["system"]
    assert len(system) == 2 and all(b["cache_control"] == {"type": "ephemeral"} for b in system)
    assert "<env>" not in system[0]["text"] and "Working directory:" in system[1]["text"]
    assert api.requests[1].body["system"][0] == system[0]       # the static block is byte-identical across runs
    ids = [USER_ID.match(r.body["metadata"]["user_id"]) for r in api.requests]
    assert all(ids)
    assert ids[0].group(1) == ids[1].group(1) == ids[2].group(1)      # one install, one anonymous id …
    assert ids[0].group(2) != ids[1].group(2)                         # … joined with each session's id
    assert json.loads((tmp_path / ".cfg" / "install.json").read_text())["userID"] == ids[0].group(1)
    assert "anthropic-beta" not in api.requests[2].headers


def test_max_thinking_tokens_env_streams_thinking_and_replays_its_signature(tmp_path):
    api = ScriptedAPI(sse(thinking("pondering deeply", "sig-xyz"), text("answer")), sse(text("again")))
    with api.serve() as url:
        r = codeloop(["-p", "think", "--output-format", "stream-json", "--verbose", "--include-partial-messages"],
                     cwd=tmp_path, base_url=url, env={"MAX_THINKING_TOKENS": "3000"})
        out = _lines(r.stdout)
        sid = out[-1]["session_id"]
        resumed = codeloop(["-p", "more", "--resume", sid], cwd=tmp_path, base_url=url,
                           env={"MAX_THINKING_TOKENS": "3000"})
    assert r.returncode == 0 and resumed.returncode == 0, r.stderr + resumed.stderr
    sent = api.requests[0]
    assert sent.body["thinking"] == {"type": "enabled", "budget_tokens": 3000} and sent.body["max_tokens"] > 3000
    assert "interleaved-thinking-2025-05-14" in sent.headers["anthropic-beta"].split(",")
    deltas = [o["event"]["delta"] for o in out if o["type"] == "stream_event"
              and o["event"]["type"] == "content_block_delta"]
    assert {"type": "thinking_delta", "thinking": "pondering deeply"} in deltas
    assert {"type": "signature_delta", "signature": "sig-xyz"} in deltas
    shown = [b for o in out if o["type"] == "assistant" for b in o["message"]["content"]]
    assert {"type": "thinking", "thinking": "pondering deeply", "signature": "sig-xyz"} in shown
    transcript = next((tmp_path / ".cfg").rglob(f"{sid}.jsonl")).read_text()
    assert '"signature": "sig-xyz"' in transcript or '"signature":"sig-xyz"' in transcript
    replayed = api.requests[1].messages[1]
    assert replayed["role"] == "assistant"
    assert replayed["content"][0] == {"type": "thinking", "thinking": "pondering deeply", "signature": "sig-xyz"}


def test_effort_sets_thinking_and_output_config(tmp_path):
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    with api.serve() as url:
        opus = codeloop(["-p", "x", "--effort", "high", "--model", "claude-opus-4-5"], cwd=tmp_path, base_url=url)
        sonnet = codeloop(["-p", "x", "--effort", "low"], cwd=tmp_path, base_url=url)
    assert opus.returncode == sonnet.returncode == 0, opus.stderr + sonnet.stderr
    assert "effort" not in opus.stderr                                    # no "ignored flag" warning any more
    body = api.requests[0].body
    assert body["output_config"] == {"effort": "high"}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16000}
    assert "effort-2025-11-24" in api.requests[0].headers["anthropic-beta"].split(",")
    low = api.requests[1]
    assert "output_config" not in low.body and low.body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert "effort-2025-11-24" not in low.headers["anthropic-beta"]


def test_thinking_flags_and_bad_env(tmp_path):
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    with api.serve() as url:
        bad = codeloop(["-p", "x"], cwd=tmp_path, base_url=url, env={"MAX_THINKING_TOKENS": "lots"})
        disabled = codeloop(["-p", "x", "--thinking", "disabled"], cwd=tmp_path, base_url=url,
                            env={"MAX_THINKING_TOKENS": "5000"})
        zero = codeloop(["-p", "x"], cwd=tmp_path, base_url=url, env={"MAX_THINKING_TOKENS": "0"})
    assert bad.returncode == 1 and "MAX_THINKING_TOKENS" in bad.stderr and "Traceback" not in bad.stderr
    assert disabled.returncode == zero.returncode == 0
    assert len(api.requests) == 2 and not any("thinking" in r.body for r in api.requests)


def test_max_tokens_cut_at_the_model_limit_recovers_without_a_useless_escalation(tmp_path):
    api = ScriptedAPI(sse(text("part one"), stop="max_tokens"), sse(text(" and the end")))
    with api.serve() as url:
        r = codeloop(["-p", "write a lot", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert [q.body["max_tokens"] for q in api.requests] == [64_000, 64_000]
    # the second request resumes after the cut text instead of repeating the same request
    assert api.requests[1].messages[-2]["content"][0]["text"] == "part one"
    assert json.loads(r.stdout)["result"].endswith("and the end")


def test_tool_streaming_beta_only_with_tools(tmp_path):
    api = ScriptedAPI(sse(tool_use("Glob", {"pattern": "*.none"}, id="g1")), sse(text("none")), sse(text("x")))
    with api.serve() as url:
        with_tools = codeloop(["-p", "x"], cwd=tmp_path, base_url=url)
        without = codeloop(["-p", "x", "--tools", ""], cwd=tmp_path, base_url=url)
    assert with_tools.returncode == without.returncode == 0, with_tools.stderr + without.stderr
    assert api.requests[0].headers["anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14"
    # `--tools ""`: no tools offered, so no tool-streaming beta
    assert "tools" not in api.requests[2].body and "anthropic-beta" not in api.requests[2].headers
