"""Issue 24 part 5: the autocompact circuit breaker says when it trips (after three failures in a
row) and re-arms, saying so too, after any compaction that succeeds — /compact or reactive —
through a real Conversation against the scripted fake API."""

from fakeapi import ScriptedAPI, error, sse, text
from codeloop.events import CompactBoundary, SystemEvent
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig

BIG = 9_500          # input tokens a response reports: over the threshold below
EMPTY_SUMMARY = "the model returned an empty summary"


def make_conv(api, tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONTEXT_WINDOW", "30000")   # threshold ≈ 0.92 × (30000 − 20000 reserve)
    cfg = ConversationConfig(cwd=tmp_path, model="claude-sonnet-4-5", tools=[], system_prompt=["test"],
                             user_context={}, policy=PermissionPolicy(mode=PermissionMode.BYPASS))
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    return Conversation(cfg, provider, session_id="11111111-2222-4333-8444-555555555555")


def notices(events, subtype):
    return [e for e in events if isinstance(e, SystemEvent) and e.subtype == subtype]


async def submit(conv, prompt):
    return [e async for e in conv.submit(prompt)]


async def trip(conv):
    """Three turns whose automatic compaction fails; returns the events of each."""
    return [await submit(conv, f"turn {i}") for i in range(1, 5)]


def failing_session():
    # turn 1 (under the threshold), then three turns each preceded by a failed summary
    return [sse(text("a1"), input_tokens=BIG),
            sse(text("")), sse(text("a2"), input_tokens=BIG),
            sse(text("")), sse(text("a3"), input_tokens=BIG),
            sse(text("")), sse(text("a4"), input_tokens=BIG)]


async def test_the_breaker_says_when_it_trips_and_re_arms_after_a_manual_compact(tmp_path, monkeypatch):
    api = ScriptedAPI(*failing_session(),
                      sse(text("a5"), input_tokens=BIG),                     # tripped: no summary tried
                      sse(text("<summary>by hand</summary>")),               # /compact
                      sse(text("a6"), input_tokens=BIG),
                      sse(text("<summary>automatic again</summary>")), sse(text("a7")))
    conv = make_conv(api, tmp_path, monkeypatch)
    turns = await trip(conv)
    assert [len(notices(t, "autocompact_disabled")) for t in turns] == [0, 0, 0, 1]   # said once, when it trips
    [off] = notices(turns[3], "autocompact_disabled")
    assert off.level == "warning" and off.data == {"failures": 3, "last_error": EMPTY_SUMMARY}
    assert "Autocompact is off after 3 failed attempts" in off.text and EMPTY_SUMMARY in off.text
    assert "/compact" in off.text and "turns it back on" in off.text

    fifth = await submit(conv, "turn 5")
    assert len(api.requests) == 8 and not notices(fifth, "autocompact_disabled")   # no summary was tried

    manual = [e async for e in conv.compact()]
    assert any(isinstance(e, CompactBoundary) and e.trigger == "manual" for e in manual)
    [on] = notices(manual, "autocompact_enabled")                      # said with the /compact itself
    assert on.level == "info" and "back on" in on.text
    sixth = await submit(conv, "turn 6")
    assert not notices(sixth, "autocompact_enabled")
    seventh = await submit(conv, "turn 7")                                # and it compacts on its own again
    assert [e.trigger for e in seventh if isinstance(e, CompactBoundary)] == ["auto"]
    assert "automatic again" in " ".join(b.get("text", "") for m in api.requests[-1].messages for b in m["content"])
    conv.close()


async def test_a_reactive_compaction_re_arms_the_breaker_within_the_turn(tmp_path, monkeypatch):
    too_long = error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")
    api = ScriptedAPI(*failing_session(), too_long, sse(text("<summary>recovered</summary>")),
                      sse(text("a5"), input_tokens=100))
    conv = make_conv(api, tmp_path, monkeypatch)
    await trip(conv)
    fifth = await submit(conv, "turn 5")
    kinds = [(type(e).__name__, getattr(e, "subtype", "")) for e in fifth
             if isinstance(e, (CompactBoundary, SystemEvent))]
    assert kinds == [("CompactBoundary", ""), ("SystemEvent", "autocompact_enabled")]
    assert conv.last_terminal.reason.value == "completed"
    assert not conv.pipeline.tracking.tripped and conv.pipeline.tracking.consecutive_failures == 0
    conv.close()
