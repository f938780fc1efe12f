"""Spec 004 §9–§13 against the scripted fake API: streaming tools, retries, fallback, withheld
errors, the six recoveries, aborts, and the continuation pipeline."""

import asyncio
import time

import pytest
from pydantic import BaseModel, ConfigDict

from fakeapi import ScriptedAPI, error, sse, text, thinking, tool_use
from loophelpers import make_params, run, run_until, terminal
from codeloop.abort import AbortReason
from codeloop.events import (AssistantEvent, AttachmentEvent, CompactBoundary, StreamEvent,
                             SystemEvent, Tombstone, UserEvent)
from codeloop.context.memory import NestedMemory
from codeloop.loop.queue import CommandQueue, Priority, QueuedCommand, QueueMode
from codeloop.hooks.stop import StopHookOutcome
from codeloop.loop.recovery import DrainResult
from codeloop.loop.state import TerminalReason
from codeloop.messages import user_message
from codeloop.tools.base import Tool, ToolResult
from codeloop.tools.registry import builtin_tools


@pytest.fixture(autouse=True)
def _capped_output(monkeypatch):
    # these tests exercise spec 004 §11.3's capped default (8192, escalating to 64000); without
    # the switch a Claude model already asks Claude Code's 64000 and never escalates
    monkeypatch.setenv("CODELOOP_CAPPED_OUTPUT", "1")


class SlowInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class SlowRead(Tool):
    """A read-only tool that takes one second: shows tools overlapping each other and the stream."""
    name = "SlowRead"
    description = "Reads slowly."
    input_model = SlowInput
    log: list = []

    def is_read_only(self, inp):
        return True

    async def call(self, inp, ctx):
        self.log.append(("start", inp.name, time.monotonic()))
        await asyncio.sleep(1.0)
        self.log.append(("end", inp.name, time.monotonic()))
        return ToolResult(f"read {inp.name}")


def remaining_history(events):
    """What a consumer's history looks like after applying tombstones."""
    gone = {e.message.uuid for e in events if isinstance(e, Tombstone)}
    return [e.message for e in events if isinstance(e, (AssistantEvent, UserEvent)) and e.message.uuid not in gone]


# -- StreamingToolExecutor (§9.2) -------------------------------------------------------------------

async def test_read_only_tools_overlap_each_other_and_the_stream(tmp_path):
    SlowRead.log = []
    api = ScriptedAPI(sse(tool_use("SlowRead", {"name": "a"}, id="a"), tool_use("SlowRead", {"name": "b"}, id="b"),
                          tool_use("SlowRead", {"name": "c"}, id="c"), text("…and more text", delay=0.5)),
                      sse(text("done")))
    params = make_params(api, tmp_path, tools=[SlowRead()])
    stream_marks = []
    events = []
    t0 = time.monotonic()
    async for ev in __import__("codeloop.loop.query", fromlist=["query"]).query(params):
        events.append(ev)
        if isinstance(ev, StreamEvent) and ev.raw["type"] == "message_stop" and not stream_marks:
            stream_marks.append(time.monotonic())
    tool_phase = max(t for kind, _, t in SlowRead.log if kind == "end") - min(t for kind, _, t in SlowRead.log)
    starts = [t for kind, _, t in SlowRead.log if kind == "start"]
    ends = [t for kind, _, t in SlowRead.log if kind == "end"]
    assert terminal(events).reason is TerminalReason.COMPLETED
    assert max(starts) < min(ends)            # all three ran at once
    assert min(starts) < stream_marks[0]      # a tool started before the message ended
    print(f"tool phase {tool_phase:.2f}s for three 1 s tools; total {time.monotonic() - t0:.2f}s")
    results = [b for b in api.requests[1].messages[-1]["content"] if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["a", "b", "c"]  # back in tool_use order


async def test_side_effecting_tools_wait_for_the_message_end(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "date +%s.%N > t"}, id="b1"), text("tail", delay=0.6)),
                      sse(text("ok")))
    params = make_params(api, tmp_path)
    stop_at = []
    async for ev in __import__("codeloop.loop.query", fromlist=["query"]).query(params):
        if isinstance(ev, StreamEvent) and ev.raw["type"] == "message_delta":
            stop_at.append(time.time())
    assert float((tmp_path / "t").read_text()) >= stop_at[0] - 0.05


async def test_bash_failure_cancels_queued_siblings(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "exit 3"}, id="f"),
                          tool_use("Bash", {"command": "touch sibling"}, id="s")), sse(text("ok")))
    events = await run(make_params(api, tmp_path))
    results = {b["tool_use_id"]: b for b in api.requests[1].messages[-1]["content"] if b["type"] == "tool_result"}
    assert results["f"]["is_error"] and "Exit code 3" in results["f"]["content"]
    assert results["s"]["is_error"] and "Cancelled: parallel tool call Bash(exit 3) errored" in results["s"]["content"]
    assert not (tmp_path / "sibling").exists()
    assert terminal(events).reason is TerminalReason.COMPLETED


# -- retries (§10) ----------------------------------------------------------------------------------

@pytest.mark.parametrize("failure", [
    error(429, "rate_limit_error", "rate limited", {"retry-after": "0"}),
    error(529, "overloaded_error", "Overloaded"),
    error(500, "api_error", "Internal server error"),
    error(503, "api_error", "unavailable"),
])
async def test_retryable_errors_are_retried_with_events(tmp_path, failure):
    api = ScriptedAPI(failure, sse(text("recovered")))
    events = await run(make_params(api, tmp_path))
    retries = [e for e in events if isinstance(e, SystemEvent) and e.subtype == "api_retry"]
    assert len(retries) == 1 and len(api.requests) == 2
    data = retries[0].data
    assert set(data) == {"attempt", "max_retries", "retry_delay_ms", "error_status", "error"}
    assert data["attempt"] == 1 and data["error_status"] == failure.status
    assert terminal(events).reason is TerminalReason.COMPLETED


async def test_retry_after_header_is_honoured(tmp_path):
    from codeloop.providers.errors import APIStatusError
    from codeloop.providers.retry import RetryPolicy
    policy = RetryPolicy()
    err = APIStatusError(429, "x", "rate_limit_error", retry_after=7.0)
    assert policy.delay_s(1, err) == 7.0
    plain = APIStatusError(500, "x", "api_error")
    delays = [policy.delay_s(n, plain) for n in (1, 2, 3, 4)]
    assert all(b > a for a, b in zip(delays, delays[1:]))           # exponential
    assert policy.delay_s(30, plain) <= policy.max_delay_s * 1.25     # capped, jitter ≤ 25 %


async def test_stream_cut_mid_tool_json_executes_nothing_and_leaves_nothing(tmp_path):
    api = ScriptedAPI(sse(text("I will delete"), tool_use("Bash", {"command": "touch danger"}, id="cut", cut=True)),
                      sse(text("second try")))
    events = await run(make_params(api, tmp_path))
    assert not (tmp_path / "danger").exists()
    assert any(isinstance(e, SystemEvent) and e.data.get("error") == "connection_error" for e in events)
    history = remaining_history(events)
    assert [m.text for m in history if m.role == "assistant"] == ["second try"]
    assert all(not m.tool_uses() for m in history)
    # the retried request carries no trace of the failed attempt
    assert api.requests[1].messages == api.requests[0].messages


async def test_sse_error_event_midway_is_retried_and_partial_message_tombstoned(tmp_path):
    api = ScriptedAPI(sse(text("partial answer"), error={"type": "overloaded_error", "message": "Overloaded"}),
                      sse(text("full answer")))
    events = await run(make_params(api, tmp_path))
    tombstoned = [e.message.text for e in events if isinstance(e, Tombstone)]
    assert tombstoned == ["partial answer"]
    assert [m.text for m in remaining_history(events) if m.role == "assistant"] == ["full answer"]


async def test_retries_exhausted_ends_with_api_error(tmp_path):
    api = ScriptedAPI(*[error(500, "api_error", "boom")] * 4)
    events = await run(make_params(api, tmp_path))
    t = terminal(events)
    assert t.reason is TerminalReason.API_ERROR and "boom" in t.error and len(api.requests) == 4


async def test_non_retryable_4xx_is_not_retried(tmp_path):
    api = ScriptedAPI(error(400, "invalid_request_error", "tools.0.name: bad"), sse(text("never")))
    events = await run(make_params(api, tmp_path))
    assert terminal(events).reason is TerminalReason.API_ERROR and len(api.requests) == 1
    assert "tools.0.name: bad" in terminal(events).error


async def test_max_tokens_tool_calls_are_never_executed(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch one"}, id="m1"),
                          tool_use("Bash", {"command": "touch two"}, id="m2"), stop="max_tokens"),
                      sse(text("done")))
    events = await run(make_params(api, tmp_path))
    assert not (tmp_path / "one").exists() and not (tmp_path / "two").exists()
    # escalation retried the same request with the bigger cap; the cut response left nothing behind
    assert api.requests[0].body["max_tokens"] == 8192 and api.requests[1].body["max_tokens"] == 64000
    assert api.requests[1].messages == api.requests[0].messages
    history = remaining_history(events)
    assert not any(m.tool_uses() for m in history) and terminal(events).reason is TerminalReason.COMPLETED


# -- model fallback (§9.3, §10.1) -------------------------------------------------------------------

async def test_fallback_after_repeated_overload(tmp_path):
    overloaded = error(529, "overloaded_error", "Overloaded")
    api = ScriptedAPI(sse(thinking("hmm", "sig-primary"), tool_use("Read", {"file_path": str(tmp_path / "x")}, id="r")),
                      overloaded, overloaded, overloaded, sse(text("from fallback")))
    (tmp_path / "x").write_text("x")
    events = await run(make_params(api, tmp_path, fallback_models=["claude-haiku-4-5"]))
    warnings = [e for e in events if isinstance(e, SystemEvent) and e.subtype == "model_fallback"]
    assert [w.text for w in warnings] == ["Switched to claude-haiku-4-5 due to high demand for claude-sonnet-4-5"]
    assert [r.body["model"] for r in api.requests] == ["claude-sonnet-4-5"] * 4 + ["claude-haiku-4-5"]
    # the thinking block (signed by the primary model) is stripped before the fallback request
    sent = api.requests[-1].messages
    assert not any(b.get("type") == "thinking" for m in sent for b in m["content"])
    assert terminal(events).reason is TerminalReason.COMPLETED


async def test_fallback_mid_stream_tombstones_and_answers_orphans(tmp_path):
    api = ScriptedAPI(*[sse(text("half"), tool_use("Bash", {"command": "touch z"}, id=f"o{i}"),
                            error={"type": "overloaded_error", "message": "Overloaded"}) for i in range(3)],
                      sse(text("fallback answer")))
    events = await run(make_params(api, tmp_path, fallback_models=["claude-haiku-4-5"]))
    orphan_results = [e.message for e in events if isinstance(e, UserEvent) and e.message.tool_result_ids()]
    assert orphan_results and all(m.content[0]["is_error"] for m in orphan_results)
    tomb = {e.message.uuid for e in events if isinstance(e, Tombstone)}
    assert all(m.uuid in tomb for m in orphan_results)
    assert not (tmp_path / "z").exists()
    assert [m.text for m in remaining_history(events) if m.role == "assistant"] == ["fallback answer"]


# -- withheld errors and the six recoveries (§9.3, §11) ----------------------------------------------

class FakeCollapse:
    def __init__(self):
        self.calls = 0

    def apply_collapses_if_needed(self, messages):
        return messages

    def recover_from_overflow(self, messages):
        # like a real collapse: staged spans are committed once; afterwards nothing is left to fold
        self.calls += 1
        if self.calls > 1:
            return DrainResult(committed=0, messages=messages)
        return DrainResult(committed=1, messages=[user_message("collapsed history")])


async def test_collapse_drain_retry_then_reactive_compact_then_prompt_too_long(tmp_path):
    from codeloop.context.compact import Compactor
    from codeloop.providers.anthropic import AnthropicProvider
    ptl = error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")
    api = ScriptedAPI(ptl, ptl, sse(text("<summary>short</summary>")), ptl)
    params = make_params(api, tmp_path)
    compactor = Compactor(AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                          "claude-sonnet-4-5")
    collapse = FakeCollapse()
    params.context_collapse, params.reactive_compact = collapse, compactor
    events = await run(params)
    t = terminal(events)
    assert t.reason is TerminalReason.PROMPT_TOO_LONG
    assert len(api.requests) == 4   # collapse retry, compaction call, compacted retry — then give up
    assert api.requests[1].messages[-1]["content"][-1]["text"] == "collapsed history"
    assert sum(isinstance(e, CompactBoundary) for e in events) == 1              # single-shot too
    # the withheld error surfaces exactly once, only after recovery failed
    errors = [e.message.text for e in events if isinstance(e, AssistantEvent) and e.message.is_api_error]
    assert len(errors) == 1 and "prompt is too long" in errors[0]


async def test_reactive_compact_recovers(tmp_path):
    from codeloop.context.compact import Compactor
    from codeloop.providers.anthropic import AnthropicProvider
    api = ScriptedAPI(error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
                      sse(text("<summary>we did things</summary>")), sse(text("answer after compaction")))
    params = make_params(api, tmp_path, prompt="the real request")
    params.reactive_compact = Compactor(
        AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()), "claude-sonnet-4-5")
    events = await run(params)
    assert terminal(events).reason is TerminalReason.COMPLETED
    assert not any(isinstance(e, AssistantEvent) and e.message.is_api_error for e in events)  # withheld, then moot
    final = " ".join(b.get("text", "") for m in api.requests[2].messages for b in m["content"])
    assert "we did things" in final and "the real request" in final


async def test_media_error_without_recovery_is_image_error(tmp_path):
    api = ScriptedAPI(error(400, "invalid_request_error",
                            "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum"))
    events = await run(make_params(api, tmp_path))
    assert terminal(events).reason is TerminalReason.IMAGE_ERROR


async def test_max_output_tokens_escalate_once_then_recover_three_times(tmp_path):
    cut = lambda i: sse(text(f"part {i}"), stop="max_tokens")  # noqa: E731
    api = ScriptedAPI(cut(0), cut(1), cut(2), cut(3), cut(4), sse(text("never")))
    events = await run(make_params(api, tmp_path))
    # the escalated cap stays for the recovery attempts (state is carried over, spec 004 §11.4)
    assert [r.body["max_tokens"] for r in api.requests] == [8192, 64000, 64000, 64000, 64000]
    nudges = [e.message for e in events if isinstance(e, UserEvent) and e.message.is_meta]
    assert len(nudges) == 3 and nudges[0].text.startswith("Output token limit hit. Resume directly")
    errors = [e.message.text for e in events if isinstance(e, AssistantEvent) and e.message.is_api_error]
    assert len(errors) == 1 and "output token maximum" in errors[0]
    assert terminal(events).reason is TerminalReason.COMPLETED


async def test_no_escalation_when_env_override_set(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_MAX_OUTPUT_TOKENS", "1000")
    api = ScriptedAPI(sse(text("a"), stop="max_tokens"), sse(text("b")))
    await run(make_params(api, tmp_path))
    assert [r.body["max_tokens"] for r in api.requests] == [1000, 1000]
    assert api.requests[1].messages[-1]["content"][-1]["text"].startswith("Output token limit hit")


class BlockingStopHook:
    def __init__(self, blocks):
        self.blocks, self.seen = blocks, []

    async def run(self, messages, *, stop_hook_active):
        self.seen.append(stop_hook_active)
        if self.blocks:
            self.blocks -= 1
            return StopHookOutcome(blocking_messages=[user_message("Stop hook feedback: run the tests", is_meta=True)])
        return StopHookOutcome()


async def test_stop_hook_blocking_continues_then_completes(tmp_path):
    api = ScriptedAPI(sse(text("done?")), sse(text("tests pass")))
    hook = BlockingStopHook(1)
    events = await run(make_params(api, tmp_path, stop_hooks=hook))
    assert hook.seen == [False, True] and terminal(events).reason is TerminalReason.COMPLETED
    assert api.requests[1].messages[-1]["content"][-1]["text"] == "Stop hook feedback: run the tests"


async def test_stop_hook_block_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_STOP_HOOK_BLOCK_CAP", "2")
    api = ScriptedAPI(*[sse(text(f"try {i}")) for i in range(5)])
    events = await run(make_params(api, tmp_path, stop_hooks=BlockingStopHook(100)))
    t = terminal(events)
    assert t.reason is TerminalReason.HOOK_STOPPED and len(api.requests) == 3
    assert any(isinstance(e, SystemEvent) and e.subtype == "stop_hook_cap" for e in events)


async def test_stop_hook_prevent_continuation(tmp_path):
    class Stopper:
        async def run(self, messages, *, stop_hook_active):
            return StopHookOutcome(prevent_continuation=True, stop_reason="policy says stop")
    api = ScriptedAPI(sse(text("x")))
    events = await run(make_params(api, tmp_path, stop_hooks=Stopper()))
    assert terminal(events).reason is TerminalReason.HOOK_STOPPED and terminal(events).error == "policy says stop"


async def test_token_budget_continuation(tmp_path):
    api = ScriptedAPI(sse(text("a"), output_tokens=400), sse(text("b"), output_tokens=400),
                      sse(text("c"), output_tokens=300))
    events = await run(make_params(api, tmp_path, token_budget=1000))
    nudges = [e.message.text for e in events if isinstance(e, UserEvent) and e.message.is_meta]
    assert nudges == ["Stopped at 40% of token target (400 / 1,000). Keep working \u2014 do not summarize.",
                      "Stopped at 80% of token target (800 / 1,000). Keep working \u2014 do not summarize."]
    assert len(api.requests) == 3 and terminal(events).reason is TerminalReason.COMPLETED
    # the run that used its budget says how it went, once, just before it ends
    [report] = [e for e in events if isinstance(e, SystemEvent) and e.subtype == "token_budget"]
    assert events.index(report) == len(events) - 2
    assert report.data["pct"] == 110 and report.data["continuations"] == 2 and report.data["duration_ms"] >= 0
    assert report.text.startswith("Token budget: 110% of 1,000 output tokens used after 2 continuation(s)")


async def test_a_plain_run_reports_no_budget(tmp_path):
    events = await run(make_params(ScriptedAPI(sse(text("a"))), tmp_path))
    assert not any(isinstance(e, SystemEvent) and e.subtype == "token_budget" for e in events)


async def test_recovery_counters_reset_on_next_turn(tmp_path):
    api = ScriptedAPI(sse(text("x"), stop="max_tokens"), sse(tool_use("Bash", {"command": "true"})),
                      sse(text("y"), stop="max_tokens"), sse(text("z")))
    await run(make_params(api, tmp_path))
    # the second max_tokens, after a normal next_turn, escalates again from scratch
    assert [r.body["max_tokens"] for r in api.requests] == [8192, 64000, 8192, 64000]


# -- aborts (§12) ------------------------------------------------------------------------------------

async def test_abort_mid_stream_with_running_tool_keeps_side_effects(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo kept > f"}, id="k"), text("long tail", delay=30)))
    params = make_params(api, tmp_path)
    # Bash is held until the message ends, so abort while the tail streams: nothing ran, all answered
    events = await run_until(params, lambda e: isinstance(e, StreamEvent) and e.raw["type"] == "content_block_stop",
                             lambda: asyncio.get_running_loop().call_later(0.2, params.tool_context.abort.abort,
                                                                           AbortReason.USER))
    assert terminal(events).reason is TerminalReason.ABORTED_STREAMING
    results = [e.message for e in events if isinstance(e, UserEvent) and e.message.tool_result_ids()]
    assert [m.tool_result_ids() for m in results] == [["k"]]
    texts = [e.message.text for e in events if isinstance(e, UserEvent)]
    assert "[Request interrupted by user]" in texts


# -- continuation pipeline (§13.2) and tool-use summary (§13.1) -----------------------------------------

async def test_queued_commands_are_drained_between_turns(tmp_path):
    queue = CommandQueue()
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "true"})), sse(text("ok")))
    params = make_params(api, tmp_path, queue=queue)
    queue.enqueue(QueuedCommand("also update the README"))
    queue.enqueue(QueuedCommand("/compact"))                                        # slash: excluded
    queue.enqueue(QueuedCommand("sub-agent note", mode=QueueMode.TASK_NOTIFICATION, agent_id="a1"))  # not ours
    queue.enqueue(QueuedCommand("later thing", priority=Priority.LATER))          # beyond 'next'
    events = await run(params)
    sent = " ".join(b.get("text", "") for b in api.requests[1].messages[-1]["content"])
    assert "also update the README" in sent and "/compact" not in sent and "sub-agent note" not in sent
    assert "later thing" not in sent
    assert [c.value for c in queue.peek_all()] == ["/compact", "sub-agent note", "later thing"]
    assert any(isinstance(e, AttachmentEvent) and e.attachment["type"] == "queued_command" for e in events)


async def test_tool_list_refresh_between_turns(tmp_path):
    tools = builtin_tools()
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "true"})), sse(text("ok")))
    params = make_params(api, tmp_path, tools=tools, refresh_tools=lambda: tools + [SlowRead()])
    await run(params)
    assert "SlowRead" not in api.requests[0].tool_names and "SlowRead" in api.requests[1].tool_names


async def test_memory_prefetch_attaches_nested_instructions(tmp_path):
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "CLAUDE.md").write_text("Use tabs in pkg.")
    (sub / "m.py").write_text("x = 1\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(sub / "m.py")}, delay=0.2)), sse(text("ok")))
    events = await run(make_params(api, tmp_path, memory=NestedMemory(tmp_path).start))
    sent = " ".join(str(b.get("text", "")) for m in api.requests[1].messages for b in m["content"])
    assert "Use tabs in pkg." in sent
    assert terminal(events).reason is TerminalReason.COMPLETED


async def test_max_tokens_retracts_a_read_only_result_that_already_ran(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "a.txt")}, id="r1"), text("and then"),
                          tool_use("Bash", {"command": "touch cut"}, id="b1", delay=0.5), stop="max_tokens"),
                      sse(text("done")))
    events = await run(make_params(api, tmp_path))
    history = remaining_history(events)
    results = [b for m in history for b in m.content if b.get("type") == "tool_result"]
    assert results == [] and not any(m.tool_uses() for m in history)   # escalation retried cleanly
    # each cut call was answered "not executed" exactly once, and the Read that ran was retracted
    not_run = [b["tool_use_id"] for e in events if isinstance(e, UserEvent) for b in e.message.content
               if b.get("type") == "tool_result" and "not executed" in str(b.get("content"))]
    assert sorted(not_run) == ["b1", "r1"]
    read_results = [e.message for e in events if isinstance(e, UserEvent) and "alpha" in str(e.message.content)]
    tombstoned = {e.message.uuid for e in events if isinstance(e, Tombstone)}
    assert read_results and all(m.uuid in tombstoned for m in read_results)
    assert not (tmp_path / "cut").exists()
    from codeloop.messages import to_api_messages
    assert to_api_messages(history)[-1]["role"] == "assistant"


async def test_fatal_error_leaves_no_partial_message(tmp_path):
    api = ScriptedAPI(sse(text("half an ans"), error={"type": "invalid_request_error", "message": "bad"}))
    events = await run(make_params(api, tmp_path))
    assert terminal(events).reason is TerminalReason.API_ERROR
    kept = [m for m in remaining_history(events) if m.role == "assistant"]
    assert [m.is_api_error for m in kept] == [True]      # only the error notice remains


async def test_last_block_carries_stop_reason_and_usage(tmp_path):
    api = ScriptedAPI(sse(text("one"), text("two"), input_tokens=1234, output_tokens=56))
    events = await run(make_params(api, tmp_path))
    msgs = [e.message for e in events if isinstance(e, AssistantEvent)]
    assert msgs[0].usage is None and msgs[-1].stop_reason == "end_turn"
    assert msgs[-1].usage["input_tokens"] == 1234 and msgs[-1].usage["output_tokens"] == 56
