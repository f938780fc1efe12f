"""Autocompaction through a real Conversation: threshold, count_tokens confirmation, transcript."""

import json

from fakeapi import ScriptedAPI, sse, text
from codeloop.events import CompactBoundary
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.tools.registry import builtin_tools


def make_conv(api, tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONTEXT_WINDOW", "30000")   # threshold ≈ 0.92 × (30000 − 20000 reserve)
    cfg = ConversationConfig(cwd=tmp_path, model="claude-sonnet-4-5", tools=builtin_tools(),
                             system_prompt=["test"], user_context={"claudeMd": "Rule: tabs."},
                             policy=PermissionPolicy(mode=PermissionMode.BYPASS))
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    return Conversation(cfg, provider, session_id="11111111-2222-4333-8444-555555555555")


async def test_autocompact_fires_near_the_limit(tmp_path, monkeypatch):
    api = ScriptedAPI(sse(text("big answer"), input_tokens=9500),
                      sse(text("<summary>Summary of the big talk.</summary>")), sse(text("small answer")))
    conv = make_conv(api, tmp_path, monkeypatch)
    [e async for e in conv.submit("first")]
    events = [e async for e in conv.submit("second")]
    conv.close()
    boundary = [e for e in events if isinstance(e, CompactBoundary)]
    assert len(boundary) == 1 and boundary[0].trigger == "auto"
    summary_req, main_req = api.requests[1], api.requests[2]
    assert "detailed summary of the conversation" in summary_req.messages[-1]["content"][-1]["text"]
    sent = " ".join(b.get("text", "") for m in main_req.messages for b in m["content"])
    assert "Summary of the big talk." in sent and "Rule: tabs." in sent and "second" in sent
    assert "big answer" not in sent
    entries = [json.loads(l) for l in conv.transcript_path.read_text().splitlines()]
    assert any(e.get("subtype") == "compact_boundary" and e["compactMetadata"]["trigger"] == "auto" for e in entries)
    assert len(api.count_requests) == 1   # count_tokens was asked (404 here: the estimate stands)


async def test_exact_count_below_threshold_prevents_needless_compaction(tmp_path, monkeypatch):
    api = ScriptedAPI(sse(text("big answer"), input_tokens=9500), sse(text("answer")),
                      count_tokens=lambda req: 1200)
    conv = make_conv(api, tmp_path, monkeypatch)
    [e async for e in conv.submit("first")]
    events = [e async for e in conv.submit("second")]
    conv.close()
    assert not any(isinstance(e, CompactBoundary) for e in events)
    assert len(api.requests) == 2 and len(api.count_requests) == 1
    assert api.count_requests[0].body["model"] == "claude-sonnet-4-5" and "stream" not in api.count_requests[0].body


async def test_below_threshold_nothing_happens(tmp_path, monkeypatch):
    api = ScriptedAPI(sse(text("a"), input_tokens=3000), sse(text("b")))
    conv = make_conv(api, tmp_path, monkeypatch)
    [e async for e in conv.submit("first")]
    events = [e async for e in conv.submit("second")]
    conv.close()
    assert not any(isinstance(e, CompactBoundary) for e in events) and not api.count_requests
