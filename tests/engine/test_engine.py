"""QueryEngine (spec 001) on the real loop against the scripted fake API: stop rules, event shapes,
compaction, persistence, structured output, sync/async entry points."""

import json
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, error, sse, text, tool_use
from codeloop import QueryEngine, QueryEngineConfig, TurnResult
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session import store
from codeloop.cli.headless.output import BudgetGuard
from codeloop.session.engine import (FORMAT_VERSION, EngineError, PermissionDenial, StopReason,
                                     match_commands)


def provider(api):
    return AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())


def make(api, tmp_path, **cfg):
    cfg.setdefault("cwd", tmp_path)
    return QueryEngine(QueryEngineConfig(**cfg), provider=provider(api))


SUMMARY = sse(text("<summary>We talked.</summary>"))


def test_event_shapes_and_order(tmp_path):
    target = tmp_path / "w.txt"
    api = ScriptedAPI(sse(text("Writing."), tool_use("Write", {"file_path": str(target), "content": "x"}, id="w1")),
                      sse(text("Could not write.")))
    eng = make(api, tmp_path)
    events = list(eng.stream_submit_message("write it"))
    assert [e["type"] for e in events] == ["message_start", "tool_match", "permission_denial", "message_delta",
                                           "message_stop"]
    assert events[0] == {"type": "message_start", "session_id": eng.session_id, "prompt": "write it"}
    assert list(events[1]["tools"]) == ["Write"] and events[2]["denials"] == ["Write"]
    assert events[3] == {"type": "message_delta", "text": "Could not write."}
    stop = events[4]
    assert stop["stop_reason"] == "completed" and stop["transcript_size"] == len(eng.messages) == 5
    assert stop["usage"]["input_tokens"] == 200 and stop["usage"]["output_tokens"] == 40
    res = eng.last_result
    assert isinstance(res, TurnResult) and res.matched_tools == ("Write",)
    assert res.permission_denials == (PermissionDenial("Write", "w1", {"file_path": str(target), "content": "x"}),)
    assert not target.exists()


def test_command_match_runs_compact(tmp_path):
    api = ScriptedAPI(sse(text("first")), SUMMARY)
    eng = make(api, tmp_path)
    eng.submit_message("hello")
    events = list(eng.stream_submit_message("/compact keep names"))
    assert events[1] == {"type": "command_match", "commands": ("/compact",)}
    assert eng.last_result.matched_commands == ("/compact",) and "compacted" in eng.last_result.output
    assert "keep names" in api.requests[1].messages[-1]["content"][-1]["text"]
    assert match_commands("what is /compact?") == () and match_commands("  /compact") == ("/compact",)


def test_max_turns_is_a_hard_stop_that_changes_nothing(tmp_path):
    api = ScriptedAPI(sse(text("one")), sse(text("two")), sse(text("never")))
    eng = make(api, tmp_path, max_turns=2)
    assert eng.submit_message("a").stop_reason == "completed"
    assert eng.submit_message("b").stop_reason == "completed"
    before = (list(eng.messages), eng.total_usage, eng.turn_count, eng.conv.transcript_path.read_bytes())
    res = eng.submit_message("c")
    assert res.stop_reason == StopReason.MAX_TURNS_REACHED.value == "max_turns_reached"
    assert len(api.requests) == 2
    assert (list(eng.messages), eng.total_usage, eng.turn_count, eng.conv.transcript_path.read_bytes()) == before
    assert res.usage == before[1] and res.matched_tools == () and "Max turns" in res.output


def test_compaction_does_not_reset_the_turn_count(tmp_path):
    # the reference port truncated the message list it also counted turns with: with
    # max_turns > compact_after_turns the hard stop never fired
    api = ScriptedAPI(sse(text("1")), SUMMARY, sse(text("2")), SUMMARY, sse(text("3")), SUMMARY, sse(text("4")))
    eng = make(api, tmp_path, max_turns=3, compact_after_turns=1)
    reasons = [eng.submit_message(p).stop_reason for p in ("a", "b", "c", "d")]
    assert reasons == ["completed", "completed", "completed", "max_turns_reached"]
    assert len(api.requests) == 6 and eng.turn_count == 3      # three answers, three summaries
    assert "detailed summary" in api.requests[1].messages[-1]["content"][-1]["text"]


def test_compaction_after_n_turns_replaces_the_history(tmp_path):
    api = ScriptedAPI(sse(text("first answer")), sse(text("second answer")), SUMMARY, sse(text("third")))
    eng = make(api, tmp_path, compact_after_turns=2)
    eng.submit_message("one")
    assert len(api.requests) == 1
    eng.submit_message("two")
    assert len(api.requests) == 3 and eng.turns_since_compaction == 0
    eng.submit_message("three")
    sent = " ".join(b.get("text", "") for m in api.requests[3].messages for b in m["content"])
    assert "We talked." in sent and "first answer" not in sent and eng.turn_count == 3


def test_budget_is_a_soft_stop_and_refuses_later_turns(tmp_path):
    api = ScriptedAPI(sse(text("a")), sse(text("b")), sse(text("never")))   # 100 in + 20 out each
    eng = make(api, tmp_path, max_budget_tokens=150)
    assert eng.submit_message("one").stop_reason == "completed"
    crossing = eng.submit_message("two")
    assert crossing.stop_reason == "max_budget_reached" and crossing.output == "b"
    assert crossing.usage.total_tokens == 240 and eng.turn_count == 2      # the crossing turn is recorded
    assert eng.messages[-1].text == "b"
    before = (list(eng.messages), eng.turn_count)
    later = eng.submit_message("three")
    assert later.stop_reason == "max_budget_reached" and len(api.requests) == 2
    assert (list(eng.messages), eng.turn_count) == before


def test_loop_terminal_reasons_are_mapped(tmp_path):
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "nope")})),
                      error(400, "invalid_request_error", "bad request"))
    eng = make(api, tmp_path, loop_max_turns=1)
    assert eng.submit_message("read").stop_reason == "max_turns_reached"
    res = eng.submit_message("again")
    assert res.stop_reason == StopReason.ERROR.value and "bad request" in res.output


def test_assistant_outputs_are_stored(tmp_path):
    api = ScriptedAPI(sse(text("the stored answer")))
    eng = make(api, tmp_path)
    eng.submit_message("question")
    eng.persist_session()
    entries = [json.loads(l) for l in eng.conv.transcript_path.read_text().splitlines()]
    assistant = [e for e in entries if e["type"] == "assistant"]
    assert assistant and assistant[0]["message"]["content"][0]["text"] == "the stored answer"
    restored = QueryEngine.from_saved_session(eng.session_id, cwd=tmp_path, provider=provider(ScriptedAPI()))
    assert [m.text for m in restored.messages] == ["question", "the stored answer"]


def test_persistence_round_trip_with_denials(tmp_path):
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(tmp_path / "f"), "content": "x"}, id="d1")),
                      sse(text("denied")), sse(text("continued")))
    eng = make(api, tmp_path, max_turns=2)
    eng.submit_message("write")
    path = Path(eng.persist_session())
    assert path.name == "engine.json" and path.parent == store.session_dir(tmp_path, eng.session_id)
    data = json.loads(path.read_text())
    assert data["format_version"] == FORMAT_VERSION and data["turn_count"] == 1
    assert data["permission_denials"][0]["tool_name"] == "Write" and data["usage"]["input_tokens"] == 200
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []   # atomic: no leftovers
    eng.close()

    restored = QueryEngine.from_saved_session(eng.session_id, cwd=tmp_path,
                                              config=QueryEngineConfig(max_turns=2), provider=provider(api))
    assert restored.session_id == eng.session_id and restored.turn_count == 1
    assert restored.total_usage == eng.total_usage
    assert restored.permission_denials == [PermissionDenial("Write", "d1", {"file_path": str(tmp_path / "f"),
                                                                            "content": "x"})]
    assert restored.submit_message("go on").output == "continued"
    sent = [b.get("text") for m in api.requests[2].messages for b in m["content"]]
    assert "write" in sent and "denied" in sent
    assert restored.submit_message("too many").stop_reason == "max_turns_reached"   # the count survived


def test_denials_restored_from_summary_when_transcript_lacks_them(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    eng = make(api, tmp_path)
    eng.submit_message("hi")
    eng.conv.permission_denials.append({"tool_name": "Bash", "tool_use_id": "b", "tool_input": {}})
    eng.persist_session()
    restored = QueryEngine.from_saved_session(eng.session_id, cwd=tmp_path, provider=provider(api))
    assert [d.tool_name for d in restored.permission_denials] == ["Bash"]


def test_session_ids_are_validated(tmp_path):
    with pytest.raises(store.InvalidSessionId):
        QueryEngine.from_saved_session("../../etc/passwd", cwd=tmp_path, provider=provider(ScriptedAPI()))
    with pytest.raises(store.InvalidSessionId):
        QueryEngine(QueryEngineConfig(cwd=tmp_path), provider=provider(ScriptedAPI()), session_id="../escape")
    with pytest.raises(EngineError, match="No conversation found"):
        QueryEngine.from_saved_session("0b9c8e1e-7a43-4d7e-9c1a-3f3d6a2b1c99", cwd=tmp_path,
                                       provider=provider(ScriptedAPI()))


def test_newer_summary_format_is_refused(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    eng = make(api, tmp_path)
    eng.submit_message("hi")
    path = Path(eng.persist_session())
    path.write_text(json.dumps({"format_version": FORMAT_VERSION + 1}))
    with pytest.raises(EngineError, match="format_version"):
        QueryEngine.from_saved_session(eng.session_id, cwd=tmp_path, provider=provider(api))


def test_restore_a_cli_session_without_summary(tmp_path):
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    eng = make(api, tmp_path)
    eng.submit_message("one")
    eng.submit_message("two")
    eng.close()
    restored = QueryEngine.from_saved_session(eng.session_id, cwd=tmp_path, provider=provider(api))
    assert restored.turn_count == 2 and len(restored.messages) == 4


def test_persist_disabled(tmp_path):
    eng = make(ScriptedAPI(sse(text("x"))), tmp_path, persist=False)
    eng.submit_message("hi")
    with pytest.raises(EngineError, match="persist=False"):
        eng.persist_session()


async def test_async_entry_points_and_sync_guard(tmp_path):
    api = ScriptedAPI(sse(text("async one")), sse(text("async two")))
    eng = make(api, tmp_path)
    res = await eng.asubmit_message("a")
    assert res.output == "async one"
    kinds = [e["type"] async for e in eng.astream_submit_message("b")]
    assert kinds == ["message_start", "message_delta", "message_stop"]
    with pytest.raises(EngineError, match="running event loop"):
        eng.submit_message("c")
    assert eng.turn_count == 2


def test_structured_output_retry_then_success(tmp_path):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    api = ScriptedAPI(sse(text("The answer is 4")), sse(text('```json\n{"n": 4}\n```')))
    eng = make(api, tmp_path, structured_output=True, json_schema=schema)
    res = eng.submit_message("2+2 as JSON")
    assert res.stop_reason == "completed" and res.structured_output == {"n": 4}
    retry = api.requests[1].messages[-1]["content"][-1]["text"]
    assert "does not satisfy the required JSON schema" in retry and '"required"' in retry


def test_structured_output_exhausted(tmp_path):
    api = ScriptedAPI(sse(text("no")), sse(text("still no")))
    eng = make(api, tmp_path, structured_output=True, structured_retry_limit=1,
               json_schema={"type": "object"})
    res = eng.submit_message("json please")
    assert res.stop_reason == "max_structured_output_retries" and res.structured_output is None
    assert len(api.requests) == 2


def test_budget_guard():
    class Conv:
        cost_usd = 0.5
    guard = BudgetGuard(0.5)
    assert guard.check(Conv()) is True and BudgetGuard(0.51).check(Conv()) is False
    assert "0.5" in guard.error_text(Conv())
    for bad in (0, -1, True, "1"):
        with pytest.raises(ValueError):
            BudgetGuard(bad)


def test_import_codeloop_is_cheap():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import sys, codeloop; print('codeloop.session.engine' in sys.modules,"
                          " 'httpx' in sys.modules); from codeloop import QueryEngine; print(QueryEngine.__name__)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "QueryEngine"]


def test_a_refused_turn_still_reports_its_commands(tmp_path):
    api = ScriptedAPI(sse(text("one")))
    eng = make(api, tmp_path, max_turns=1)
    eng.submit_message("a")
    events = list(eng.stream_submit_message("/compact now"))
    assert [e["type"] for e in events] == ["message_start", "command_match", "message_delta", "message_stop"]
    assert tuple(events[1]["commands"]) == ("/compact",)
    assert eng.last_result.matched_commands == ("/compact",) and eng.last_result.stop_reason == "max_turns_reached"
