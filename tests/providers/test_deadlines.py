"""Network deadlines, retry budget and error hints (issue 13), against the scripted fake API."""

import pytest

from codeloop.events import SystemEvent
from codeloop.loop.state import TerminalReason
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.providers.base import ModelRequest
from codeloop.providers.errors import APIConnectionError, APIStatusError
from codeloop.providers.openai_compat import OpenAICompatProvider
from codeloop.providers.retry import RetryPolicy
from codeloop.providers.transport import Deadlines
from fakeapi import ScriptedAPI, error, no_headers, plain, sse, stalled, text
from loophelpers import FAST_RETRY, make_params, run, terminal

QUICK = Deadlines(connect_s=2.0, headers_s=0.3, idle_s=0.3)
REQ = ModelRequest(model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}])


def anthropic(api, **kw):
    return AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport(), deadlines=QUICK, **kw)


async def collect(provider, request=REQ):
    return [e async for e in provider.stream(request)]


async def test_a_stream_that_stalls_mid_response_fails_after_the_idle_deadline():
    api = ScriptedAPI(stalled(text("partial answer", chunks=4), after=3))
    with pytest.raises(APIConnectionError) as exc:
        await collect(anthropic(api))
    assert "stream idle" in str(exc.value) and "partial response received" in str(exc.value)
    assert exc.value.mid_stream and exc.value.retryable


async def test_a_server_that_never_sends_headers_fails_after_the_headers_deadline():
    with pytest.raises(APIConnectionError) as exc:
        await collect(anthropic(ScriptedAPI(no_headers())))
    assert "no response headers" in str(exc.value) and exc.value.retryable


async def test_a_404_with_a_non_json_body_is_final_and_names_the_base_url():
    api = ScriptedAPI(plain(404, "<html><body>Not Found</body></html>"))
    with pytest.raises(APIStatusError) as exc:
        await collect(anthropic(api))
    err = exc.value
    assert err.status == 404 and not err.retryable
    assert "Not Found" in str(err) and "check ANTHROPIC_BASE_URL (now http://fake)" in str(err)


async def test_401_names_the_key_and_a_missing_model_names_the_model():
    with pytest.raises(APIStatusError) as exc:
        await collect(anthropic(ScriptedAPI(error(401, "authentication_error", "invalid x-api-key"))))
    assert "invalid x-api-key" in str(exc.value) and "ANTHROPIC_API_KEY" in str(exc.value)
    with pytest.raises(APIStatusError) as exc:
        await collect(anthropic(ScriptedAPI(error(404, "not_found_error", "model: claude-nope"))))
    assert "check the model name ('claude-sonnet-4-5'" in str(exc.value) and not exc.value.retryable


async def test_openai_compat_shares_deadlines_and_hints():
    def provider(api):
        return OpenAICompatProvider(api_key="k", base_url="http://local/v1", transport=api.transport(),
                                    deadlines=QUICK)

    with pytest.raises(APIConnectionError) as exc:
        await collect(provider(ScriptedAPI(no_headers())), ModelRequest(model="m", messages=[]))
    assert "no response headers" in str(exc.value)
    with pytest.raises(APIStatusError) as exc:
        await collect(provider(ScriptedAPI(plain(404, "404 page not found"))), ModelRequest(model="m", messages=[]))
    assert "OPENAI_BASE_URL (now http://local/v1)" in str(exc.value) and not exc.value.retryable
    with pytest.raises(APIStatusError) as exc:
        await collect(provider(ScriptedAPI(plain(401, "unauthorised"))), ModelRequest(model="m", messages=[]))
    assert "OPENAI_API_KEY" in str(exc.value)


def test_idle_deadline_comes_from_the_environment():
    assert Deadlines.from_env({}).idle_s == 90.0
    assert Deadlines.from_env({"CLAUDE_STREAM_IDLE_TIMEOUT_MS": "15000"}).idle_s == 15.0
    env = {"CLAUDE_STREAM_IDLE_TIMEOUT_MS": "15000", "CODELOOP_STREAM_IDLE_TIMEOUT_MS": "2500"}
    assert Deadlines.from_env(env).idle_s == 2.5
    assert Deadlines.from_env({"CODELOOP_STREAM_IDLE_TIMEOUT_MS": "nope"}).idle_s == 90.0
    assert Deadlines.from_env({"CODELOOP_HEADERS_TIMEOUT_MS": "700"}).headers_s == 0.7


# -- the retry loop ----------------------------------------------------------------------------------

def params(api, tmp_path, retry=FAST_RETRY):
    p = make_params(api, tmp_path, retry=retry)
    p.provider = anthropic(api)
    return p


async def test_a_stalled_stream_is_retried_and_the_retry_succeeds(tmp_path):
    api = ScriptedAPI(stalled(text("half"), after=2), sse(text("whole answer")))
    events = await run(params(api, tmp_path))
    retries = [e for e in events if isinstance(e, SystemEvent) and e.subtype == "api_retry"]
    assert len(retries) == 1 and retries[0].data["error"] == "connection_error"
    assert "stream idle" in retries[0].text
    assert terminal(events).reason is TerminalReason.COMPLETED and len(api.requests) == 2


async def test_non_retryable_status_fails_at_once(tmp_path):
    api = ScriptedAPI(plain(404, "Not Found"), sse(text("never")))
    events = await run(params(api, tmp_path))
    t = terminal(events)
    assert t.reason is TerminalReason.API_ERROR and len(api.requests) == 1
    assert "API Error (404): Not Found" in t.error and "ANTHROPIC_BASE_URL" in t.error


async def test_retry_after_beyond_the_budget_fails_at_once_with_the_servers_words(tmp_path):
    api = ScriptedAPI(error(429, "rate_limit_error", "Daily quota used up", {"retry-after": "3600"}),
                      sse(text("never")))
    retry = RetryPolicy(max_retries=5, base_delay_s=0.001, max_delay_s=0.005)
    events = await run(params(api, tmp_path, retry))
    t = terminal(events)
    assert t.reason is TerminalReason.API_ERROR and len(api.requests) == 1
    assert "Daily quota used up" in t.error and "retry after 3600s" in t.error
    assert not [e for e in events if isinstance(e, SystemEvent) and e.subtype == "api_retry"]


async def test_a_529_storm_stops_at_the_wall_time_budget(tmp_path):
    storm = [error(529, "overloaded_error", "Overloaded") for _ in range(200)]
    api = ScriptedAPI(*storm)
    retry = RetryPolicy(max_retries=1000, base_delay_s=0.02, max_delay_s=0.05, budget_s=0.5)
    events = await run(params(api, tmp_path, retry))
    t = terminal(events)
    assert t.reason is TerminalReason.API_ERROR and "Overloaded" in t.error and "gave up after" in t.error
    assert 2 <= len(api.requests) < 200


async def test_attempts_are_bounded_too(tmp_path):
    api = ScriptedAPI(*[error(500, "api_error", "boom") for _ in range(10)])
    events = await run(params(api, tmp_path))   # FAST_RETRY: 3 retries
    t = terminal(events)
    assert len(api.requests) == 4 and "gave up after 4 attempts" in t.error
