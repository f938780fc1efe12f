"""Token accounting: API usage as ground truth, calibrated local estimates, count_tokens fallback."""

import json

import httpx

from codeloop.context.tokens import (CHARS_PER_TOKEN, IMAGE_TOKENS, TokenCounter, count_tokens_api,
                                     count_tokens_body, find_last_usage, usage_total)
from codeloop.messages import Message, user_message
from codeloop.providers.models import context_window, model_info, output_reserve
from ctxhelpers import call, reply

USAGE = {"input_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 5_000,
         "output_tokens": 40}


def test_usage_total_sums_every_input_kind_and_output():
    assert usage_total(USAGE) == 5_250
    assert usage_total(None) == 0


def test_estimate_next_is_last_usage_plus_estimate_of_what_followed():
    counter = TokenCounter()
    old = [user_message("a" * 100_000)]            # already counted by the usage: must not be re-estimated
    msgs = [*old, reply("done", usage=USAGE), user_message("b" * 3_800)]
    expected_tail = counter.estimate([msgs[-1]])
    assert counter.estimate_next(msgs) == 5_250 + expected_tail
    assert counter.estimate_next(msgs, last_usage_index=1, last_usage=USAGE) == 5_250 + expected_tail
    assert 1_000 <= expected_tail <= 1_010     # 3,800 chars at 3.8 chars/token + framing


def test_blocks_of_the_same_response_after_the_usage_are_not_counted_twice():
    counter = TokenCounter()
    first = Message(role="assistant", content=[{"type": "text", "text": "x" * 4000}], id="msg_1", usage=USAGE)
    same = Message(role="assistant", content=[{"type": "text", "text": "y" * 4000}], id="msg_1")
    assert counter.estimate_next([user_message("hi"), first, same]) == 5_250


def test_without_usage_everything_is_estimated():
    counter = TokenCounter()
    msgs = [user_message("hello " * 100)]
    assert counter.estimate_next(msgs) == counter.estimate(msgs) > 0
    assert find_last_usage(msgs) is None


def test_images_cost_a_fixed_amount_and_json_is_denser_than_prose():
    counter = TokenCounter()
    img = user_message([{"type": "image", "source": {"type": "base64", "data": "A" * 500_000}}])
    assert counter.estimate([img]) == IMAGE_TOKENS + 4
    prose = counter.estimate_blocks([{"type": "text", "text": "z" * 3200}])
    js = counter.estimate_blocks([call("Bash", {"command": "z" * 3180}, "t1").content[0]])
    assert js > prose


def test_observe_recalibrates_the_ratio():
    counter = TokenCounter()
    assert counter.chars_per_token == CHARS_PER_TOKEN
    before = counter.estimate_text("字" * 10_000)
    for _ in range(20):
        counter.observe(10_000, 10_000)        # CJK: about one character a token
    assert counter.chars_per_token < 1.5
    assert counter.estimate_text("字" * 10_000) > 2 * before
    counter.observe(0, 5)                      # ignored: no evidence
    assert counter.chars_per_token < 1.5


def test_model_table_gives_window_and_output_limits(monkeypatch):
    assert model_info("claude-sonnet-4-5-20250929").context_window == 200_000
    assert model_info("claude-3-5-haiku-latest").max_output_tokens == 8_192
    assert output_reserve("claude-3-5-haiku") == 8_192
    assert output_reserve("claude-sonnet-4-5") == 20_000
    monkeypatch.setenv("CODELOOP_CONTEXT_WINDOW", "32768")
    assert context_window("llama3") == 32_768


def test_count_tokens_body_keeps_only_accepted_fields():
    body = {"model": "m", "messages": [], "max_tokens": 10, "stream": True, "system": [], "tools": []}
    assert set(count_tokens_body(body)) == {"model", "messages", "system", "tools"}


async def test_count_tokens_api_uses_the_endpoint():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, json.loads(request.content), request.headers.get("x-api-key")))
        return httpx.Response(200, json={"input_tokens": 1234})

    async with httpx.AsyncClient(base_url="http://fake", headers={"x-api-key": "k"},
                                 transport=httpx.MockTransport(handler)) as client:
        n = await count_tokens_api(client, {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                            "stream": True, "max_tokens": 5}, fallback=7)
    assert n == 1234
    path, body, key = seen[0]
    assert path == "/v1/messages/count_tokens" and key == "k"
    assert "stream" not in body and "max_tokens" not in body


async def test_count_tokens_api_falls_back_on_errors():
    def not_found(request):
        return httpx.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": "no"}})

    def boom(request):
        raise httpx.ConnectError("offline")

    for handler in (not_found, boom):
        async with httpx.AsyncClient(base_url="http://fake", transport=httpx.MockTransport(handler)) as client:
            assert await count_tokens_api(client, {"model": "m", "messages": []}, fallback=lambda: 99) == 99
