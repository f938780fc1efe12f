"""Issue 24 part 5: a history found too big for the window before sending goes through the same
recoveries as a prompt_too_long answer (collapse drain, then reactive compaction), and when it
finally fails the message names what is big — suggesting a shorter input only when the input is."""

import pytest

from fakeapi import ScriptedAPI, sse, text
from loophelpers import make_params, run, terminal
from codeloop.context.compact import Compactor
from codeloop.events import AssistantEvent, CompactBoundary
from codeloop.loop.recovery import DrainResult
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message, tool_result_message, user_message
from codeloop.providers.anthropic import AnthropicProvider

WINDOW = 2_000   # tokens; the pre-send check counts 4 characters a token


@pytest.fixture(autouse=True)
def _small_window(monkeypatch):
    monkeypatch.setenv("CODELOOP_CONTEXT_WINDOW", str(WINDOW))


def bloated_history(prompt="ok"):
    """A session whose Read result alone is over the window, then a two-character prompt."""
    call = Message("assistant", [{"type": "tool_use", "id": "toolu_big", "name": "Read",
                                  "input": {"file_path": "/nonexistent/big.log"}}], id="msg_a")
    return [user_message("look at the log"), call, tool_result_message("toolu_big", "x" * 40_000),
            Message("assistant", [{"type": "text", "text": "It is a big log."}], id="msg_b"), user_message(prompt)]


def compactor(api):
    return Compactor(AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                     "claude-sonnet-4-5")


def api_errors(events):
    return [e.message.text for e in events if isinstance(e, AssistantEvent) and e.message.is_api_error]


async def test_an_overflow_found_before_sending_is_compacted_and_the_turn_completes(tmp_path):
    api = ScriptedAPI(sse(text("<summary>We read a big log.</summary>")), sse(text("answer")))
    params = make_params(api, tmp_path, messages=bloated_history())
    params.reactive_compact = compactor(api)
    events = await run(params)
    assert terminal(events).reason is TerminalReason.COMPLETED
    # nothing was sent before the compaction: the first request is the summary, the second fits
    assert len(api.requests) == 2
    assert "detailed summary" in api.requests[0].messages[-1]["content"][-1]["text"]
    sent = " ".join(b.get("text", "") for m in api.requests[1].messages for b in m["content"])
    assert "We read a big log." in sent and "x" * 1000 not in sent
    assert sum(isinstance(e, CompactBoundary) for e in events) == 1
    assert not api_errors(events)          # withheld, then moot


async def test_collapse_drain_comes_first(tmp_path):
    class Collapse:
        def apply_collapses_if_needed(self, messages):
            return messages

        def recover_from_overflow(self, messages):
            return DrainResult(committed=1, messages=[user_message("collapsed history")])

    api = ScriptedAPI(sse(text("answer")))
    params = make_params(api, tmp_path, messages=bloated_history(), context_collapse=Collapse())
    params.reactive_compact = compactor(api)
    events = await run(params)
    assert terminal(events).reason is TerminalReason.COMPLETED
    assert len(api.requests) == 1 and api.requests[0].messages[-1]["content"][-1]["text"] == "collapsed history"
    assert not any(isinstance(e, CompactBoundary) for e in events)


async def test_when_compaction_cannot_help_the_message_names_the_biggest_part(tmp_path):
    # the summary itself comes back too big: compaction was tried once, then the turn fails
    api = ScriptedAPI(sse(text("<summary>" + "y" * 30_000 + "</summary>")))
    params = make_params(api, tmp_path, messages=bloated_history())
    params.reactive_compact = compactor(api)
    events = await run(params)
    t = terminal(events)
    assert t.reason is TerminalReason.PROMPT_TOO_LONG and len(api.requests) == 1
    [message] = api_errors(events)
    assert "nothing was sent" in message and "Most of it is the conversation history" in message
    assert "injected context (message 1), 30," in message           # the summary message, with its size
    assert "shorten the input" not in message                        # the prompt was two characters


async def test_without_recoveries_the_largest_tool_result_is_named(tmp_path):
    api = ScriptedAPI()
    events = await run(make_params(api, tmp_path, messages=bloated_history()))
    t = terminal(events)
    assert t.reason is TerminalReason.PROMPT_TOO_LONG and not api.requests
    [message] = api_errors(events)
    assert f"context window of {WINDOW:,} tokens" in message
    assert "the result of Read (tool_use toolu_big" in message and "40,000 characters" in message
    assert "shorten the input" not in message and message == t.error


async def test_a_huge_input_is_named_and_no_summary_is_wasted_on_it(tmp_path):
    api = ScriptedAPI(sse(text("<summary>never asked</summary>")))
    params = make_params(api, tmp_path, prompt="z" * 50_000)
    params.reactive_compact = compactor(api)
    events = await run(params)
    assert terminal(events).reason is TerminalReason.PROMPT_TOO_LONG
    assert not api.requests                 # compaction keeps the input verbatim: it could not help
    [message] = api_errors(events)
    assert "Most of it is the latest user input (50,000 characters" in message and "shorten the input" in message


async def test_a_huge_system_prompt_is_named(tmp_path):
    api = ScriptedAPI()
    params = make_params(api, tmp_path, prompt="hi", system_prompt=["s" * 20_000])
    params.reactive_compact = compactor(api)
    events = await run(params)
    assert terminal(events).reason is TerminalReason.PROMPT_TOO_LONG and not api.requests
    [message] = api_errors(events)
    assert "system prompt and CLAUDE.md instructions" in message and "shorten the input" not in message
