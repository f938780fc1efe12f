"""The pre-query stages 1–3 and 5 on crafted histories, and ContextPipeline running them in order."""

import copy


from codeloop.context.collapse import ContextCollapse
from codeloop.context.pipeline import (CLEARED_STUB, CompactTracking, ContentReplacementState, ContextPipeline,
                                       MicrocompactState, PipelineConfig, apply_tool_result_budget,
                                       autocompact, autocompact_threshold, microcompact, should_autocompact, snip)
from codeloop.loop.recovery import CompactOutcome
from codeloop.messages import Message, user_message
from codeloop.providers.errors import ProviderError
from ctxhelpers import call, exchange, history, reply, result_content


def snapshot(msgs):
    return [(m.uuid, copy.deepcopy(m.content)) for m in msgs]


# -- 1. tool result budget --------------------------------------------------------------------------
def budget_history():
    msgs = [user_message("go")]
    msgs += exchange("Read", {"file_path": "a.py"}, "t_small", "s" * 3_000)
    msgs += exchange("Bash", {"command": "make"}, "t_big", "B" * 40_000)
    msgs += exchange("Grep", {"pattern": "x"}, "t_mid", "M" * 20_000)
    msgs += exchange("Mcp", {"q": 1}, "t_exempt", "E" * 50_000)
    return msgs


def test_budget_replaces_largest_results_with_preview_and_saved_file(tmp_path):
    msgs = budget_history()
    before = snapshot(msgs)
    state = ContentReplacementState()
    out = apply_tool_result_budget(msgs, state, session_dir=tmp_path, budget_chars=80_000,
                                   exempt_tools={"Mcp"}, tool_names={})
    assert snapshot(msgs) == before                     # input untouched
    assert len(out) == len(msgs)
    big = result_content(out, "t_big")
    saved = tmp_path / "tool-results" / "t_big.txt"
    assert saved.read_text() == "B" * 40_000
    assert str(saved) in big and "B" * 2_000 in big and "B" * 2_001 not in big
    # 113k → replacing the 40k result suffices; the exempt 50k one is never a candidate.
    assert result_content(out, "t_mid") == "M" * 20_000
    assert result_content(out, "t_exempt") == "E" * 50_000
    assert set(state.replacements) == {"t_big"}
    assert out[0] is msgs[0] and out[3] is msgs[3]      # unchanged messages are shared, changed ones new
    assert out[4] is not msgs[4]


def test_budget_records_replay_identically_on_resume(tmp_path):
    msgs = budget_history()
    state = ContentReplacementState()
    out1 = apply_tool_result_budget(msgs, state, session_dir=tmp_path, budget_chars=60_000,
                                    exempt_tools={"Mcp"}, tool_names={})
    records = state.drain_records()
    assert records and all(r["type"] == "content-replacement" for r in records)
    assert {r["toolUseId"] for r in records} == {"t_big", "t_mid"}
    assert state.drain_records() == []
    # Later calls (more history, no longer over budget) keep the same replacement: stable prefix.
    later = msgs + [user_message("thanks")]
    out2 = apply_tool_result_budget(later, state, session_dir=tmp_path, budget_chars=10_000_000,
                                    exempt_tools={"Mcp"}, tool_names={})
    assert result_content(out2, "t_big") == result_content(out1, "t_big")
    assert state.pending_records == []
    # A resumed session rebuilds the state from transcript entries and reproduces the bytes.
    (tmp_path / "tool-results" / "t_big.txt").unlink()      # even without rewriting the file
    resumed = ContentReplacementState.from_entries([{"type": "user"}, *records])
    out3 = apply_tool_result_budget(msgs, resumed, session_dir=tmp_path, budget_chars=10_000_000,
                                    exempt_tools={"Mcp"}, tool_names={})
    assert [m.content for m in out3] == [m.content for m in out1]


def test_budget_under_limit_changes_nothing(tmp_path):
    msgs = budget_history()
    out = apply_tool_result_budget(msgs, ContentReplacementState(), session_dir=tmp_path, budget_chars=1_000_000,
                                   exempt_tools=set(), tool_names={})
    assert all(a is b for a, b in zip(out, msgs))
    assert not (tmp_path / "tool-results").exists()


def test_budget_saved_file_is_written_once(tmp_path):
    msgs = budget_history()
    target = tmp_path / "tool-results" / "t_big.txt"
    target.parent.mkdir()
    target.write_text("original")
    apply_tool_result_budget(msgs, ContentReplacementState(), session_dir=tmp_path, budget_chars=80_000,
                             exempt_tools={"Mcp"}, tool_names={})
    assert target.read_text() == "original"


# -- 2. snip ------------------------------------------------------------------------------------------
def test_snip_keeps_structure_head_and_tail():
    huge_text = "H" * 500 + "m" * 10_000 + "T" * 500
    # issue 13: model text is snipped, the user's own prompt never is (see the test below)
    msgs = [reply(huge_text),
            *exchange("Bash", {"command": "x"}, "t1", "h" * 300 + "z" * 9_000 + "t" * 300),
            user_message([{"type": "tool_result", "tool_use_id": "t2",
                           "content": [{"type": "text", "text": "q" * 5_000}, {"type": "image", "source": {}}]}]),
            user_message("short")]
    before = snapshot(msgs)
    out = snip(msgs, max_block_chars=1_000)
    assert snapshot(msgs) == before
    assert [m.uuid for m in out] == [m.uuid for m in msgs]
    assert [len(m.content) for m in out] == [len(m.content) for m in msgs]
    text = out[0].content[0]["text"]
    assert text.startswith("H" * 500) and text.endswith("T" * 300) and "snipped" in text
    assert len(text) <= 1_000
    res = result_content(out, "t1")
    assert res.startswith("h" * 300) and res.endswith("t" * 300)
    inner = result_content(out, "t2")
    assert len(inner) == 2 and inner[1]["type"] == "image" and len(inner[0]["text"]) < 1_100
    assert out[1] is msgs[1] and out[4] is msgs[4]
    assert snip(out, max_block_chars=1_000)[0].content == out[0].content   # stable


def test_snip_never_cuts_the_users_own_words():
    prompt = "P" * 50_000
    msgs = [user_message(prompt), reply("ok"), user_message([{"type": "text", "text": "Q" * 50_000}])]
    out = snip(msgs, max_block_chars=1_000)
    assert out[0].content[0]["text"] == prompt and out[2].content[0]["text"] == "Q" * 50_000
    assert out[0] is msgs[0] and out[2] is msgs[2]


# -- 3. microcompact ------------------------------------------------------------------------------------
def mc_history():
    msgs = [user_message("go")]
    msgs += exchange("Read", {"file_path": "old.py"}, "t_read", "r" * 500)
    msgs += exchange("TodoWrite", {"todos": []}, "t_todo", "todos updated")
    msgs += exchange("Bash", {"command": "false"}, "t_err", "boom", is_error=True)
    msgs += exchange("Grep", {"pattern": "p"}, "t_grep", "g" * 500)
    msgs += exchange("Bash", {"command": "ls"}, "t_recent", "recent")
    msgs.append(reply("done"))
    return msgs


def test_microcompact_clears_old_results_of_clearable_tools():
    msgs = mc_history()
    before = snapshot(msgs)
    state = MicrocompactState()
    out = microcompact(msgs, keep_recent_turns=3, state=state)     # turns: 6 → turns 1–3 are old
    assert snapshot(msgs) == before
    assert result_content(out, "t_read") == CLEARED_STUB
    assert result_content(out, "t_todo") == "todos updated"         # not clearable
    assert result_content(out, "t_err") == "boom"                   # errors stay
    assert result_content(out, "t_grep") == "g" * 500               # within the last 3 turns
    assert result_content(out, "t_recent") == "recent"
    assert state.cleared == {"t_read"}


def test_microcompact_is_stable_across_calls():
    msgs = mc_history()
    state = MicrocompactState()
    first = microcompact(msgs, keep_recent_turns=3, state=state)
    # A later call with a bigger window still clears what was cleared: the prefix never changes back.
    again = microcompact(msgs, keep_recent_turns=50, state=state)
    assert [m.content for m in again] == [m.content for m in first]
    # New turns push more results out of the window.
    more = msgs + [user_message("next")] + exchange("Read", {"file_path": "n.py"}, "t_n", "n") + [reply("ok")]
    third = microcompact(more, keep_recent_turns=3, state=state)
    assert result_content(third, "t_grep") == CLEARED_STUB
    assert result_content(third, "t_read") == CLEARED_STUB


def test_microcompact_batches_below_min_chars():
    msgs = mc_history()
    state = MicrocompactState()
    out = microcompact(msgs, keep_recent_turns=3, state=state, min_clear_chars=10_000)
    assert result_content(out, "t_read") == "r" * 500 and not state.cleared


def test_microcompact_treats_blocks_of_one_response_as_one_turn():
    msgs = [user_message("go"),
            Message(role="assistant", content=[{"type": "text", "text": "reading"}], id="m1"),
            call("Read", {"file_path": "a"}, "ta", rid="m1"),
            call("Read", {"file_path": "b"}, "tb", rid="m1"),
            user_message([{"type": "tool_result", "tool_use_id": "ta", "content": "A"},
                          {"type": "tool_result", "tool_use_id": "tb", "content": "B"}]),
            reply("done")]
    out = microcompact(msgs, keep_recent_turns=1, state=MicrocompactState())
    assert result_content(out, "ta") == CLEARED_STUB and result_content(out, "tb") == CLEARED_STUB
    out = microcompact(msgs, keep_recent_turns=2, state=MicrocompactState())
    assert result_content(out, "ta") == "A"


# -- 5. autocompact -------------------------------------------------------------------------------------
def test_threshold_is_ratio_of_window_minus_reserve(monkeypatch):
    model = "claude-sonnet-4-5"
    threshold = autocompact_threshold(model)
    assert threshold == int((200_000 - 20_000) * 0.92)
    assert should_autocompact(threshold, model)
    assert not should_autocompact(threshold - 1, model)
    assert should_autocompact(100_000, model, threshold_ratio=0.5)
    assert not should_autocompact(99_999, model, threshold_ratio=0.5, output_reserve=0)
    monkeypatch.setenv("CODELOOP_AUTOCOMPACT_PCT", "50")
    assert autocompact_threshold(model) == 90_000
    monkeypatch.setenv("CODELOOP_AUTOCOMPACT_PCT", "nonsense")
    assert autocompact_threshold(model) == threshold


class FakeCompactor:
    def __init__(self, fail: bool = False):
        self.fail, self.calls = fail, []

    async def compact(self, messages, *, trigger="auto", **kw):
        self.calls.append((trigger, kw))
        if self.fail:
            raise ProviderError("summary failed")
        return CompactOutcome(messages=[user_message("summary", is_meta=True)], pre_tokens=0, trigger=trigger,
                              summary="summary")


async def test_autocompact_fires_at_the_threshold_and_not_below():
    model = "claude-sonnet-4-5"
    threshold = autocompact_threshold(model)
    comp, tracking = FakeCompactor(), CompactTracking()
    msgs = [user_message("x")]
    assert await autocompact(msgs, comp, tracking, token_estimate=threshold - 1, model=model) is None
    assert comp.calls == []
    out = await autocompact(msgs, comp, tracking, token_estimate=threshold, model=model, todos=[{"x": 1}])
    assert out is not None and out.pre_tokens == threshold and out.messages[0].text == "summary"
    assert comp.calls == [("auto", {"todos": [{"x": 1}]})]


async def test_circuit_breaker_stops_after_three_failures_in_a_row():
    comp, tracking = FakeCompactor(fail=True), CompactTracking()
    for _ in range(5):
        assert await autocompact([user_message("x")], comp, tracking, token_estimate=10**6,
                                 model="claude-sonnet-4-5") is None
    assert len(comp.calls) == 3 and tracking.tripped and tracking.last_error == "summary failed"
    # A success resets the count.
    tracking = CompactTracking(consecutive_failures=2)
    comp.fail = False
    assert await autocompact([user_message("x")], comp, tracking, token_estimate=10**6,
                             model="claude-sonnet-4-5") is not None
    assert tracking.consecutive_failures == 0


# -- the pipeline ------------------------------------------------------------------------------------------
async def test_pipeline_runs_stages_in_order_and_reports_replacements(tmp_path):
    msgs = [user_message("go"),
            *exchange("Read", {"file_path": "a.py"}, "t_a", "A" * 30_000),
            *exchange("Bash", {"command": "make"}, "t_b", "B" * 30_000),
            reply("thinking", usage={"input_tokens": 100, "output_tokens": 10}),
            reply("U" * 5_000),   # model text: snipped (a user's own text never is)
            *exchange("Read", {"file_path": "c.py"}, "t_c", "c")]
    before = snapshot(msgs)
    pipe = ContextPipeline(compactor=FakeCompactor(), session_dir=tmp_path,
                           config=PipelineConfig(budget_chars=40_000, max_block_chars=3_000, keep_recent_turns=2,
                                                 microcompact_min_chars=0))
    res = await pipe.run(msgs, model="claude-sonnet-4-5")
    assert snapshot(msgs) == before
    assert res.compacted is None
    # Stage 1 replaced one 30k result (recorded), stage 3 then cleared both old ones by id.
    assert [r["toolUseId"] for r in res.replacements] == ["t_a"]
    assert result_content(res.messages, "t_a") == CLEARED_STUB
    assert result_content(res.messages, "t_b") == CLEARED_STUB
    assert "snipped" in res.messages[6].text                   # stage 2
    assert result_content(res.messages, "t_c") == "c"
    assert res.token_estimate >= 110
    res2 = await pipe.run(msgs, model="claude-sonnet-4-5")
    assert res2.replacements == [] and [m.content for m in res2.messages] == [m.content for m in res.messages]


async def test_pipeline_autocompacts_near_the_limit():
    comp = FakeCompactor()
    pipe = ContextPipeline(compactor=comp)
    big_usage = {"input_tokens": 170_000, "output_tokens": 100}
    msgs = [user_message("go"), reply("ok", usage=big_usage), user_message("more")]
    res = await pipe.run(msgs, model="claude-sonnet-4-5", instructions="be brief")
    assert res.compacted is not None and res.messages[0].text == "summary"
    assert comp.calls == [("auto", {"instructions": "be brief"})]
    small = [user_message("go"), reply("ok", usage={"input_tokens": 1_000}), user_message("more")]
    assert (await ContextPipeline(compactor=comp).run(small, model="claude-sonnet-4-5")).compacted is None


async def test_pipeline_collapse_stage_folds_when_over_its_threshold():
    msgs = history(10) + [reply("ok", usage={"input_tokens": 160_000})] + [user_message("next")]
    pipe = ContextPipeline(collapse=ContextCollapse(keep_recent_turns=2, commit_ratio=0.5))
    res = await pipe.run(msgs, model="claude-sonnet-4-5")
    assert len(res.messages) < len(msgs)
    assert "collapsed" in res.messages[1].text
    assert res.token_estimate < 161_000


def test_exempt_tools_from_tool_declarations():
    class A:
        name, max_result_chars = "A", float("inf")

    class B:
        name, max_result_chars = "B", 100_000

    assert ContextPipeline.exempt_from_tools([A(), B()]) == {"A"}


def test_budget_replaces_a_second_result_of_an_already_rewritten_message(tmp_path):
    msgs = [user_message("go"),
            call("Bash", {"command": "a"}, "p1", rid="m1"), call("Bash", {"command": "b"}, "p2", rid="m1"),
            user_message([{"type": "tool_result", "tool_use_id": "p1", "content": "1" * 30_000},
                          {"type": "tool_result", "tool_use_id": "p2", "content": "2" * 20_000}])]
    state = ContentReplacementState()
    out1 = apply_tool_result_budget(msgs, state, session_dir=tmp_path, budget_chars=40_000,
                                    exempt_tools=set(), tool_names={})
    assert result_content(out1, "p2") == "2" * 20_000
    out2 = apply_tool_result_budget(msgs, state, session_dir=tmp_path, budget_chars=5_000,
                                    exempt_tools=set(), tool_names={})
    assert "persisted-output" in result_content(out2, "p1") and "persisted-output" in result_content(out2, "p2")
    out3 = apply_tool_result_budget(msgs, state, session_dir=tmp_path, budget_chars=5_000,
                                    exempt_tools=set(), tool_names={})
    assert out3[-1] is out2[-1]                 # repeated calls reuse the rewritten message
