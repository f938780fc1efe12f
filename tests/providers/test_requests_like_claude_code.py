"""Issue 15 (requests): what the Anthropic provider puts on the wire, as the scripted fake received
it — per-request anthropic-beta values, metadata.user_id, max_tokens per model, the system prompt
as cache-friendly blocks, and the reasoning config (thinking / output_config.effort)."""

import json
import stat

import pytest

from fakeapi import ScriptedAPI, sse, text
from codeloop.config.install_id import install_id, metadata_user_id
from codeloop.loop.request import build_request, can_escalate, max_output_tokens, system_blocks
from codeloop.messages import user_message
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.providers.base import ModelRequest
from codeloop.providers.betas import Beta

TOOL = {"name": "T", "description": "t", "input_schema": {"type": "object"}}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", "CODELOOP_DISABLE_EXPERIMENTAL_BETAS", "ANTHROPIC_BETAS",
                 "DISABLE_INTERLEAVED_THINKING", "CODELOOP_CAPPED_OUTPUT", "CODELOOP_MAX_OUTPUT_TOKENS",
                 "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "CODELOOP_MODEL_CAPABILITIES"):
        monkeypatch.delenv(name, raising=False)


async def _send(request: ModelRequest, **kw):
    api = ScriptedAPI(sse(text("ok")))
    provider = AnthropicProvider(api_key="sk-test", base_url="http://fake", transport=api.transport(), **kw)
    async for _ in provider.stream(request):
        pass
    await provider.aclose()
    return api.requests[0]


def _betas(sent) -> list[str]:
    value = sent.headers.get("anthropic-beta")
    return value.split(",") if value else []


def _req(model="claude-sonnet-4-5", **kw) -> ModelRequest:
    return ModelRequest(model=model, messages=[{"role": "user", "content": "hi"}], **kw)


async def test_betas_follow_what_the_request_uses():
    plain = await _send(_req())
    assert "anthropic-beta" not in plain.headers          # nothing that needs a beta: no header
    tools = await _send(_req(tools=[TOOL]))
    assert _betas(tools) == [Beta.FINE_GRAINED_TOOL_STREAMING.value]
    both = await _send(_req(tools=[TOOL], thinking={"type": "enabled", "budget_tokens": 2048}))
    assert _betas(both) == [Beta.INTERLEAVED_THINKING.value, Beta.FINE_GRAINED_TOOL_STREAMING.value]
    effort = await _send(_req("claude-opus-4-5", output_config={"effort": "low"}))
    assert _betas(effort) == [Beta.EFFORT.value] and effort.body["output_config"] == {"effort": "low"}
    # Claude 3 models have no interleaved thinking
    old = await _send(_req("claude-3-7-sonnet-latest", thinking={"type": "enabled", "budget_tokens": 2048}))
    assert Beta.INTERLEAVED_THINKING.value not in _betas(old)


async def test_betas_can_be_disabled_and_extended(monkeypatch):
    req = _req(tools=[TOOL], thinking={"type": "enabled", "budget_tokens": 2048})
    monkeypatch.setenv("ANTHROPIC_BETAS", "context-1m-2025-08-07, x-beta")
    sent = await _send(req, betas=["mine-1", "x-beta"])
    assert _betas(sent) == [Beta.INTERLEAVED_THINKING.value, Beta.FINE_GRAINED_TOOL_STREAMING.value,
                            "mine-1", "x-beta", "context-1m-2025-08-07"]          # no duplicates
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", "1")
    sent = await _send(req, betas=["mine-1"])
    assert _betas(sent) == ["mine-1", "context-1m-2025-08-07", "x-beta"]        # only what the user asked
    monkeypatch.delenv("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS")
    monkeypatch.delenv("ANTHROPIC_BETAS")
    monkeypatch.setenv("DISABLE_INTERLEAVED_THINKING", "1")
    assert _betas(await _send(req)) == [Beta.FINE_GRAINED_TOOL_STREAMING.value]


async def test_non_claude_model_gets_no_automatic_beta():
    sent = await _send(_req("glm-4.6", tools=[TOOL], thinking={"type": "enabled", "budget_tokens": 2048}))
    assert "anthropic-beta" not in sent.headers


async def test_an_anthropic_beta_extra_header_joins_the_list():
    sent = await _send(_req(tools=[TOOL]), extra_headers={"anthropic-beta": "files-api-2025-04-14"})
    assert _betas(sent) == [Beta.FINE_GRAINED_TOOL_STREAMING.value, "files-api-2025-04-14"]


async def test_metadata_user_id_is_sent_unless_the_request_has_metadata():
    sent = await _send(_req(), user_id="user_abc_account__session_s1")
    assert sent.body["metadata"] == {"user_id": "user_abc_account__session_s1"}
    own = await _send(_req(metadata={"user_id": "other"}), user_id="user_abc_account__session_s1")
    assert own.body["metadata"] == {"user_id": "other"}
    assert "metadata" not in (await _send(_req())).body


def test_install_id_is_stable_private_and_survives_a_broken_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    first = install_id()
    assert len(first) == 64 and int(first, 16) >= 0 and install_id() == first
    path = tmp_path / "cfg" / "install.json"
    assert json.loads(path.read_text()) == {"userID": first}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert metadata_user_id("sid-1") == f"user_{first}_account__session_sid-1"
    path.write_text("{not json")
    fresh = install_id()
    assert fresh != first and install_id() == fresh


def test_max_tokens_per_model_as_claude_code_asks(monkeypatch):
    assert max_output_tokens("claude-sonnet-4-5-20250929", None) == 64_000
    assert max_output_tokens("claude-haiku-4-5", None) == 64_000
    assert max_output_tokens("claude-opus-4-1", None) == 32_000
    assert max_output_tokens("claude-opus-4-6", None) == 32_000
    assert max_output_tokens("claude-3-7-sonnet-latest", None) == 32_000
    assert max_output_tokens("claude-3-5-haiku-latest", None) == 8_192
    assert max_output_tokens("gpt-4o", None) == 8_192               # non-Claude: the capped default
    assert not can_escalate("claude-sonnet-4-5") and can_escalate("claude-3-7-sonnet") and can_escalate("gpt-5")
    monkeypatch.setenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "12000")
    assert max_output_tokens("claude-sonnet-4-5", None) == 12_000
    monkeypatch.delenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS")
    monkeypatch.setenv("CODELOOP_CAPPED_OUTPUT", "1")
    assert max_output_tokens("claude-sonnet-4-5", None) == 8_192 and can_escalate("claude-sonnet-4-5")


def test_system_prompt_is_split_into_cached_static_and_dynamic_blocks():
    blocks = system_blocks(["STATIC INSTRUCTIONS", "<env>cwd</env>", "", "appended"])
    assert blocks == [{"type": "text", "text": "STATIC INSTRUCTIONS", "cache_control": {"type": "ephemeral"}},
                      {"type": "text", "text": "<env>cwd</env>\n\nappended", "cache_control": {"type": "ephemeral"}}]
    assert system_blocks(["only"]) == [{"type": "text", "text": "only", "cache_control": {"type": "ephemeral"}}]
    assert system_blocks([]) == []


def _build(model, thinking):
    return build_request(model=model, messages=[user_message("hi")], system_prompt=["S", "E"],
                         user_context={}, tools=[], thinking=thinking)


def test_reasoning_config_thinking_and_effort():
    req = _build("claude-opus-4-5", {"type": "enabled", "budget_tokens": 16_000, "effort": "high"})
    assert req.thinking == {"type": "enabled", "budget_tokens": 16_000}       # effort never inside thinking
    assert req.output_config == {"effort": "high"} and req.max_tokens == 64_000
    # a model without effort support: thinking only
    req = _build("claude-sonnet-4-5", {"type": "enabled", "budget_tokens": 31_999, "effort": "max"})
    assert req.output_config is None and req.thinking["budget_tokens"] == 31_999 and req.max_tokens > 31_999
    # a small-output model: the budget shrinks below max_tokens instead of an API 400
    req = _build("claude-3-5-haiku", {"type": "enabled", "budget_tokens": 20_000})
    assert req.thinking["budget_tokens"] < req.max_tokens == 8_192
    assert _build("claude-sonnet-4-5", None).thinking is None
