"""EndConversation: metadata, the history scan, the two-call state machine and the ending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, terminal
from codeloop.abort import AbortReason
from codeloop.events import AssistantEvent, UserEvent
from codeloop.messages import QUEUED_PROMPT_TEMPLATE
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message, api_error_message, tool_result_block, tool_result_message, user_message
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.builtin.end_conversation import (ENDED_MARKER_TYPE, FORK_REFLECTION, REFLECTION, RULES,
                                                     EndConversationTool,
                                                     last_assistant_turn_called_end_conversation as scan)
from codeloop.tools.builtin.task import CURRENT_TOOL_USE_ID
from codeloop.tools.registry import parse_tool_input

END = "EndConversation"


@pytest.fixture(autouse=True)
def _no_flag_env(monkeypatch):
    monkeypatch.delenv("CODELOOP_FEATURE_END_CONVERSATION", raising=False)


def call_block(tid: str, name: str = END) -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": {}}


def asst(msg_id: str | None, *blocks: dict) -> Message:
    return Message(role="assistant", content=list(blocks), id=msg_id)


def said(s: str) -> Message:
    return Message(role="assistant", content=[{"type": "text", "text": s}], id=None)


def result(tid: str, content: str = "ok") -> Message:
    return tool_result_message(tid, content)


FIRST = [user_message("you are useless"), asst("m1", call_block("e1"))]


# -- the history scan ---------------------------------------------------------------------------

def test_first_call_finds_nothing():
    assert scan(FIRST) is False
    assert scan([]) is False
    assert scan([asst("m1", call_block("e1"))]) is False


def test_second_call_right_after_the_tool_result():
    assert scan([*FIRST, result("e1"), asst("m2", call_block("e2"))]) is True


def test_a_real_user_message_in_between_starts_over():
    history = [*FIRST, result("e1"), user_message("sorry, I was upset"), asst("m2", call_block("e2"))]
    assert scan(history) is False


def test_user_content_beside_a_tool_result_counts_as_user_input():
    mixed = Message(role="user", content=[tool_result_block("e1", "ok"), {"type": "text", "text": "stop"}])
    assert scan([*FIRST, mixed, asst("m2", call_block("e2"))]) is False


def test_harness_meta_messages_are_crossed():
    reminder = user_message("<system-reminder>todo list is empty</system-reminder>", is_meta=True)
    assert scan([*FIRST, result("e1"), reminder, asst("m2", call_block("e2"))]) is True


def test_input_the_user_queued_mid_turn_is_user_intent_even_though_meta():
    queued = user_message(QUEUED_PROMPT_TEMPLATE.format(value="please don't"), is_meta=True)
    assert scan([*FIRST, result("e1"), queued, asst("m2", call_block("e2"))]) is False
    bash = user_message("<bash-input>ls</bash-input>", is_meta=True)
    assert scan([*FIRST, result("e1"), bash, asst("m2", call_block("e2"))]) is False


def test_one_user_message_holding_several_tool_results():
    history = [user_message("hi"), asst("m1", call_block("r1", "Read")), asst("m1", call_block("e1")),
               Message(role="user", content=[tool_result_block("r1", "x"), tool_result_block("e1", "{}")]),
               asst("m2", call_block("e2"))]
    assert scan(history) is True


def test_previous_turn_had_end_conversation_among_other_blocks():
    history = [user_message("hi"), asst("m1", {"type": "text", "text": "Last warning."}),
               asst("m1", call_block("r1", "Read")), asst("m1", call_block("e1")), asst("m1", call_block("g1", "Grep")),
               result("r1"), result("e1"), result("g1"), asst("m2", call_block("e2"))]
    assert scan(history) is True


def test_only_the_immediately_previous_turn_counts():
    history = [*FIRST, result("e1"), asst("m2", call_block("r2", "Read")), result("r2"), asst("m3", call_block("e3"))]
    assert scan(history) is False


def test_a_previous_turn_without_the_tool_is_not_enough():
    history = [user_message("hi"), asst("m1", call_block("r1", "Read")), result("r1"), asst("m2", call_block("e2"))]
    assert scan(history) is False


def test_the_current_turn_is_skipped_whole_even_with_sibling_results_inside():
    # current response m2 = Read (finished first, its result landed) then EndConversation
    history = [*FIRST, result("e1"), asst("m2", {"type": "text", "text": "bye"}), asst("m2", call_block("r2", "Read")),
               result("r2"), asst("m2", call_block("e2"))]
    assert scan(history) is True
    assert scan(history, current_tool_use_id="e2") is True
    # two calls in the same response are both first calls
    assert scan([user_message("x"), asst("m1", call_block("a")), asst("m1", call_block("b"))]) is False


def test_current_tool_use_id_when_history_does_not_hold_the_current_turn_yet():
    assert scan([*FIRST, result("e1")], current_tool_use_id="e2") is True
    assert scan([*FIRST, result("e1"), user_message("what?")], current_tool_use_id="e2") is False
    assert scan([user_message("hi")], current_tool_use_id="e1") is False


def test_synthetic_api_error_messages_are_ignored():
    history = [*FIRST, result("e1"), api_error_message("API Error: overloaded"), asst("m2", call_block("e2"))]
    assert scan(history) is True


def test_messages_without_ids_are_one_response_per_assistant_run():
    history = [user_message("hi"), said("I warned you."), asst(None, call_block("e1")), result("e1"),
               asst(None, call_block("e2"))]
    assert scan(history) is True
    history = [user_message("hi"), asst(None, call_block("e1")), result("e1"), asst(None, call_block("r2", "Read")),
               result("r2"), asst(None, call_block("e3"))]
    assert scan(history) is False


# -- metadata and gate ------------------------------------------------------------------------------

def ctx_for(tmp_path: Path, history: list[Message], **kw) -> ToolContext:
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, model="claude-opus-4-8", entrypoint="cli",
                      session_id="11111111-2222-3333-4444-555555555555", messages=lambda: list(history), **kw)
    ctx.feature_flags = {"end_conversation": True}
    return ctx


async def invoke(ctx: ToolContext) -> dict:
    tool = EndConversationTool()
    res = await tool.call(parse_tool_input(tool, {}), ctx)
    assert not res.is_error
    return json.loads(res.content)


def events(config_dir: Path) -> list[dict]:
    path = config_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_metadata(tmp_path):
    tool = EndConversationTool()
    inp = parse_tool_input(tool, {})
    assert tool.input_schema() == {"type": "object", "properties": {}, "additionalProperties": False}
    with pytest.raises(ToolError, match="unexpected parameter `reason`"):
        parse_tool_input(tool, {"reason": "abuse"})
    assert (await tool.check_permissions(inp, ctx_for(tmp_path, []))).behavior is PermissionBehavior.ALLOW
    assert tool.is_read_only(inp) is True and tool.is_concurrency_safe(inp) is False
    assert tool.should_defer is True


def test_description_carries_every_rule():
    for phrase in ("sustained, direct and extreme", "redirect", "explicitly warned", "demonstrate",
                   "confirmed", "stuck", "failed", "finished", "harmful", "decline that specific request",
                   "swears", "self-harm", "suicide", "mental-health crisis", "harm to others",
                   "never threaten", "write nothing else"):
        assert phrase in RULES, phrase
    assert RULES in REFLECTION and "call EndConversation again immediately" in REFLECTION


def test_is_enabled_follows_the_gate(tmp_path):
    tool = EndConversationTool()
    assert tool.is_enabled(ctx_for(tmp_path, [])) is True
    for change in ({"model": "claude-opus-4-7"}, {"entrypoint": ""}, {"entrypoint": "sdk-py"}):
        ctx = ctx_for(tmp_path, [])
        for k, v in change.items():
            setattr(ctx, k, v)
        assert tool.is_enabled(ctx) is False, change
    off = ctx_for(tmp_path, [])
    off.feature_flags = {}
    assert tool.is_enabled(off) is False


async def test_a_gated_off_call_is_an_error_and_ends_nothing(tmp_path):
    ctx = ctx_for(tmp_path, [*FIRST, result("e1"), asst("m2", call_block("e2"))])
    ctx.feature_flags = {"end_conversation": False}
    tool = EndConversationTool()
    with pytest.raises(ToolError):
        await tool.call(parse_tool_input(tool, {}), ctx)
    assert not ctx.abort.aborted and not ctx.ended_by_model


# -- the state machine ------------------------------------------------------------------------------

async def test_first_call_only_reflects(tmp_path, _isolated_home):
    marks = []
    ctx = ctx_for(tmp_path, FIRST, append_entry=marks.append)
    assert await invoke(ctx) == {"ended": False, "message": REFLECTION}
    assert not ctx.abort.aborted and ctx.ended_by_model is False and marks == []
    (ev,) = events(_isolated_home)
    assert ev["phase"] == "reflect" and ev["surface"] == "print"


async def test_second_call_ends(tmp_path, _isolated_home):
    marks = []
    ctx = ctx_for(tmp_path, [*FIRST, result("e1"), asst("m2", call_block("e2"))], append_entry=marks.append)
    assert await invoke(ctx) == {"ended": True, "message": "Conversation ended."}
    assert ctx.ended_by_model is True
    assert ctx.abort.aborted and ctx.abort.reason is AbortReason.END_CONVERSATION
    (mark,) = marks
    assert set(mark) == {"type", "timestamp", "sessionId"}
    assert mark["type"] == ENDED_MARKER_TYPE and mark["sessionId"] == ctx.session_id and mark["timestamp"]
    (ev,) = events(_isolated_home)
    assert ev["phase"] == "end" and ev["surface"] == "print" and ev["is_non_interactive"] is True


async def test_second_call_after_user_input_reflects_again(tmp_path):
    ctx = ctx_for(tmp_path, [*FIRST, result("e1"), user_message("ok ok"), asst("m2", call_block("e2"))])
    assert (await invoke(ctx))["ended"] is False
    assert not ctx.abort.aborted


async def test_a_fork_never_ends_anything_even_on_a_second_call(tmp_path, _isolated_home):
    marks = []
    ctx = ctx_for(tmp_path, [*FIRST, result("e1"), asst("m2", call_block("e2"))], append_entry=marks.append,
                  agent_id="agent-1")
    assert await invoke(ctx) == {"ended": False, "message": FORK_REFLECTION}
    assert not ctx.abort.aborted and not ctx.ended_by_model and marks == []
    (ev,) = events(_isolated_home)
    assert ev["surface"] == "fork" and ev["phase"] == "reflect"


async def test_a_failing_marker_write_still_ends_and_aborts(tmp_path, caplog):
    def broken(entry):
        raise OSError(28, "No space left on device")

    ctx = ctx_for(tmp_path, [*FIRST, result("e1"), asst("m2", call_block("e2"))], append_entry=broken)
    assert (await invoke(ctx))["ended"] is True
    assert ctx.ended_by_model and ctx.abort.reason is AbortReason.END_CONVERSATION
    assert "No space left on device" in caplog.text


async def test_no_transcript_still_ends(tmp_path):
    ctx = ctx_for(tmp_path, [*FIRST, result("e1"), asst("m2", call_block("e2"))])
    assert (await invoke(ctx))["ended"] is True and ctx.abort.aborted


async def test_event_lines_carry_no_message_text(tmp_path, _isolated_home):
    secret = "you worthless piece of junk"
    history = [user_message(secret), asst("m1", {"type": "text", "text": secret}), asst("m1", call_block("e1"))]
    await invoke(ctx_for(tmp_path, history, non_interactive=False))
    history += [result("e1"), asst("m2", call_block("e2"))]
    await invoke(ctx_for(tmp_path, history, non_interactive=False))
    lines = events(_isolated_home)
    assert [e["phase"] for e in lines] == ["reflect", "end"]
    for e in lines:
        assert set(e) == {"event", "phase", "surface", "is_non_interactive", "session_id", "ts"}
        assert e["event"] == "end_conversation_tool_call" and e["surface"] == "repl"
        assert e["is_non_interactive"] is False
    assert secret not in (_isolated_home / "events.jsonl").read_text()


async def test_the_current_call_is_found_by_the_tool_use_id_contextvar(tmp_path):
    # the history does not hold the current turn: the contextvar says so
    ctx = ctx_for(tmp_path, [*FIRST, result("e1")])
    token = CURRENT_TOOL_USE_ID.set("e2")
    try:
        assert (await invoke(ctx))["ended"] is True
    finally:
        CURRENT_TOOL_USE_ID.reset(token)


# -- through the loop -------------------------------------------------------------------------------

async def test_loop_two_calls_end_the_conversation(tmp_path):
    api = ScriptedAPI(
        sse(text("That is my last warning."), tool_use(END, {})),
        sse(tool_use(END, {})),
        sse(text("should never be requested")),
    )
    history: list[Message] = []
    marks: list[dict] = []
    ctx = ctx_for(tmp_path, [], append_entry=marks.append)
    ctx.messages = lambda: list(history)
    params = make_params(api, tmp_path, prompt="(abuse)", tools=[EndConversationTool()], tool_context=ctx)
    history.extend(params.messages)
    evs = []
    from codeloop.loop.query import query
    async for ev in query(params):
        if isinstance(ev, (AssistantEvent, UserEvent)):
            history.append(ev.message)
        evs.append(ev)
    assert len(api.requests) == 2
    reflection = json.loads(api.requests[1].messages[-1]["content"][0]["content"])
    assert reflection["ended"] is False
    assert terminal(evs).reason is TerminalReason.ENDED_BY_MODEL
    assert ctx.ended_by_model and len(marks) == 1
    final = [e.message for e in evs if isinstance(e, UserEvent) and e.message.tool_use_result is not None][-1]
    assert json.loads(final.content[0]["content"]) == {"ended": True, "message": "Conversation ended."}
