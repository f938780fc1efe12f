"""The Anthropic provider against the scripted fake: wire format, headers, errors, usage."""

import pytest

from fakeapi import ScriptedAPI, error, sse, text, thinking, tool_use
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.providers.assembly import ResponseAssembler
from codeloop.providers.base import ModelRequest
from codeloop.providers.errors import APIConnectionError, APIStatusError, AuthenticationError
from codeloop.usage import Usage
from codeloop.providers.pricing import cost_usd


def _provider(api: ScriptedAPI, **kw) -> AnthropicProvider:
    return AnthropicProvider(api_key="sk-test", base_url="http://fake", transport=api.transport(), **kw)


async def _collect(provider, request=None):
    request = request or ModelRequest(model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}])
    asm, blocks, events = ResponseAssembler(), [], []
    async for ev in provider.stream(request):
        events.append(ev)
        b = asm.feed(ev)
        if b is not None:
            blocks.append(b)
    return asm, blocks, events


async def test_request_shape_and_headers():
    api = ScriptedAPI(sse(text("hello")))
    req = ModelRequest(model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}],
                       system=[{"type": "text", "text": "sys"}], tools=[{"name": "T", "input_schema": {}}],
                       max_tokens=123)
    await _collect(_provider(api), req)
    sent = api.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body["stream"] is True and sent.body["max_tokens"] == 123
    assert sent.body["system"] == [{"type": "text", "text": "sys"}]
    assert sent.tool_names == ["T"]


async def test_every_event_type_is_assembled():
    api = ScriptedAPI(sse(thinking("let me think", "sig-1"), text("Hello world", chunks=3),
                          tool_use("Read", {"file_path": "/x"}, id="toolu_a"),
                          input_tokens=50, output_tokens=7, cache_read=10, cache_write=5))
    asm, blocks, events = await _collect(_provider(api))
    assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use"]
    assert blocks[0] == {"type": "thinking", "thinking": "let me think", "signature": "sig-1"}
    assert blocks[1]["text"] == "Hello world"
    assert blocks[2]["input"] == {"file_path": "/x"} and blocks[2]["id"] == "toolu_a"
    assert asm.stop_reason == "tool_use" and asm.stopped
    assert not any(e["type"] == "ping" for e in events)
    u = Usage.from_api(asm.usage)
    assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) == (50, 7, 10, 5)


async def test_error_status_is_parsed_with_retry_after():
    api = ScriptedAPI(error(429, "rate_limit_error", "slow down", {"retry-after": "7", "request-id": "req_1"}))
    with pytest.raises(APIStatusError) as info:
        await _collect(_provider(api))
    err = info.value
    assert err.status == 429 and err.error_type == "rate_limit_error" and err.retry_after == 7.0
    assert err.retryable and "slow down" in str(err) and err.request_id == "req_1"


async def test_non_retryable_and_prompt_too_long():
    api = ScriptedAPI(error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    with pytest.raises(APIStatusError) as info:
        await _collect(_provider(api))
    assert not info.value.retryable and info.value.is_prompt_too_long


async def test_sse_error_event_raises_overloaded():
    api = ScriptedAPI(sse(text("partial"), error={"type": "overloaded_error", "message": "Overloaded"}))
    with pytest.raises(APIStatusError) as info:
        await _collect(_provider(api))
    assert info.value.is_overloaded and info.value.status == 529 and info.value.retryable


async def test_stream_cut_mid_tool_use_raises_connection_error():
    api = ScriptedAPI(sse(text("ok"), tool_use("Bash", {"command": "rm -rf /"}, cut=True)))
    with pytest.raises(APIConnectionError) as info:
        await _collect(_provider(api))
    assert info.value.mid_stream


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicProvider()


async def test_unreachable_server_is_a_connection_error():
    provider = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(APIConnectionError, match="could not connect to http://127.0.0.1:9"):
        await _collect(provider)
    await provider.aclose()


async def test_invalid_tool_json_is_flagged_not_executed():
    api = ScriptedAPI(sse(tool_use("Bash", '{"command": "ls', id="toolu_bad")))
    asm, blocks, _ = await _collect(_provider(api))
    assert blocks[0]["input"] == {} and "toolu_bad" in asm.invalid_json


def test_cost_from_price_table():
    u = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_input_tokens=1_000_000,
              cache_creation_input_tokens=1_000_000)
    assert cost_usd(u, "claude-sonnet-4-5-20250929") == pytest.approx(3 + 15 + 0.3 + 3.75)
    assert cost_usd(u, "claude-opus-4-5") == pytest.approx(5 + 25 + 0.5 + 6.25)
    assert cost_usd(u, "claude-haiku-4-5") == pytest.approx(1 + 5 + 0.1 + 1.25)
