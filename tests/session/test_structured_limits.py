"""Issue 24 part 5, `--json-schema`: invalid StructuredOutput calls count against the retry limit
(a limit of N allows N + 1 answers, tool calls and texts alike), and a valid call ends the turn
only after the Stop hooks ran — a blocking one sends the model on, as at any end of turn. Real
Conversations (with a real Stop hook script) and the loop, against the scripted fake API."""

from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, run, terminal
from codeloop.events import SystemEvent, Terminal
from codeloop.hooks.stop import StopHookOutcome
from codeloop.loop.state import TerminalReason
from codeloop.messages import user_message
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.session.structured import StructuredEvent, run_structured, validate
from codeloop.tools.builtin.structured_output import StructuredOutputTool

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
          "additionalProperties": False}


def conv_for(api, cwd, hooks=None):
    cfg = ConversationConfig(cwd=cwd, model="claude-sonnet-4-5", tools=[], system_prompt=["t"], user_context={},
                             policy=PermissionPolicy(mode=PermissionMode.BYPASS), hooks=hooks or {})
    return Conversation(cfg, AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                        session_id="11111111-2222-4333-8444-555555555555")


def invalid(i):
    return sse(tool_use("StructuredOutput", {"n": f"not a number {i}"}, id=f"bad{i}"))


async def structured(conv, limit):
    events = [e async for e in run_structured(conv, "count", SCHEMA, limit)]
    conv.close()
    return events


async def test_a_limit_of_zero_allows_one_invalid_call_and_no_more(tmp_path):
    api = ScriptedAPI(*[invalid(i) for i in range(5)])
    events = await structured(conv_for(api, tmp_path), 0)
    assert len(api.requests) == 1
    last = events[-1]
    assert isinstance(last, SystemEvent) and last.subtype == StructuredEvent.FAILED.value
    assert last.data["attempts"] == 1 and "$.n" in last.data["errors"][0]
    assert [e.reason for e in events if isinstance(e, Terminal)] == [TerminalReason.COMPLETED]
    [result] = [b for m in events if hasattr(m, "message") and m.message.role == "user"
                for b in m.message.content if b.get("type") == "tool_result"]
    assert result["is_error"] and "No attempts left (1 of 1 used)" in result["content"]


async def test_invalid_calls_spend_the_limit_in_one_turn(tmp_path):
    api = ScriptedAPI(*[invalid(i) for i in range(5)])
    events = await structured(conv_for(api, tmp_path), 2)
    assert len(api.requests) == 3 and events[-1].data["attempts"] == 3
    assert events[-1].subtype == StructuredEvent.FAILED.value


async def test_tool_calls_and_text_answers_share_the_limit(tmp_path):
    # an invalid call, then a final text that is not JSON: two answers, the limit of 1 allows no third
    api = ScriptedAPI(invalid(0), sse(text("n is four")), sse(text('{"n": 4}')))
    events = await structured(conv_for(api, tmp_path), 1)
    assert len(api.requests) == 2 and events[-1].subtype == StructuredEvent.FAILED.value
    assert events[-1].data == {"errors": [events[-1].data["errors"][0]], "attempts": 2}
    assert "not JSON" in events[-1].data["errors"][0]


async def test_a_corrected_call_within_the_limit_is_the_answer(tmp_path):
    api = ScriptedAPI(invalid(0), sse(tool_use("StructuredOutput", {"n": 4}, id="good")))
    events = await structured(conv_for(api, tmp_path), 1)
    assert events[-1].subtype == StructuredEvent.OUTPUT.value and events[-1].data["structured_output"] == {"n": 4}
    assert events[-1].data["attempts"] == 2


def stop_hook_script(tmp_path, marker):
    """A real Stop hook: blocks once (exit 2, its reason to the model), then lets the turn end."""
    hook = tmp_path / "stop.sh"
    hook.write_text(f"#!/bin/sh\ncat > /dev/null\nif [ -f {marker} ]; then exit 0; fi\n"
                    f"touch {marker}\necho 'Run the tests before answering.' >&2\nexit 2\n")
    hook.chmod(0o755)
    return {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}


async def test_a_blocking_stop_hook_sends_the_model_on_after_a_valid_call(tmp_path):
    marker = tmp_path / "blocked-once"
    api = ScriptedAPI(sse(tool_use("StructuredOutput", {"n": 3}, id="first")),
                      sse(tool_use("StructuredOutput", {"n": 4}, id="second")))
    cwd = tmp_path / "project"
    cwd.mkdir()
    events = await structured(conv_for(api, cwd, stop_hook_script(tmp_path, marker)), 2)
    assert marker.exists() and len(api.requests) == 2           # the hook ran and the model went on
    feedback = api.requests[1].messages[-1]["content"]
    assert feedback[0]["type"] == "tool_result" and feedback[0]["tool_use_id"] == "first"
    assert any("Run the tests before answering." in b.get("text", "") for b in feedback)
    assert events[-1].subtype == StructuredEvent.OUTPUT.value and events[-1].data["structured_output"] == {"n": 4}
    assert [e.reason for e in events if isinstance(e, Terminal)] == [TerminalReason.COMPLETED]


class Hooks:
    def __init__(self, outcome):
        self.outcome, self.seen = outcome, []

    async def run(self, messages, *, stop_hook_active):
        self.seen.append((stop_hook_active, messages[-1].content[0].get("tool_use_id")))
        return self.outcome


async def test_stop_hooks_see_the_tool_result_and_may_end_the_query(tmp_path):
    api = ScriptedAPI(sse(tool_use("StructuredOutput", {"n": 1}, id="so")))
    hooks = Hooks(StopHookOutcome(prevent_continuation=True, stop_reason="policy says stop"))
    params = make_params(api, tmp_path, tools=[StructuredOutputTool(SCHEMA, validate)], stop_hooks=hooks)
    events = await run(params)
    t = terminal(events)
    assert t.reason is TerminalReason.HOOK_STOPPED and t.error == "policy says stop"
    assert hooks.seen == [(False, "so")] and len(api.requests) == 1


async def test_stop_hook_blocks_after_valid_calls_are_capped(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_STOP_HOOK_BLOCK_CAP", "2")
    api = ScriptedAPI(*[sse(tool_use("StructuredOutput", {"n": i}, id=f"so{i}")) for i in range(5)])
    hooks = Hooks(StopHookOutcome(blocking_messages=[user_message("Not yet.", is_meta=True)]))
    params = make_params(api, tmp_path, tools=[StructuredOutputTool(SCHEMA, validate)], stop_hooks=hooks)
    events = await run(params)
    assert terminal(events).reason is TerminalReason.HOOK_STOPPED and len(api.requests) == 3
    assert [active for active, _ in hooks.seen] == [False, True, True]
    assert any(isinstance(e, SystemEvent) and e.subtype == "stop_hook_cap" for e in events)
