"""Context collapse: read-time folding of staged spans, and the overflow drain (§11.1)."""

import copy
import json

from codeloop.context.collapse import ContextCollapse, find_exchanges
from codeloop.messages import Message, to_api_messages, user_message
from ctxhelpers import call, exchange, reply


def session():
    msgs = [user_message("fix the tests")]
    msgs += exchange("Read", {"file_path": "src/app.py"}, "t1", "def main():\n    pass\n")
    msgs += exchange("Bash", {"command": "pytest -q"}, "t2", "FAILED test_x\n1 failed", is_error=True)
    msgs += exchange("Grep", {"pattern": "def main", "path": "src"}, "t3", "src/app.py:1")
    msgs.append(reply("found it"))
    msgs.append(user_message("now edit it"))
    msgs += exchange("Edit", {"file_path": "src/app.py", "old_string": "pass", "new_string": "run()"}, "t4", "ok")
    msgs += exchange("Bash", {"command": "pytest"}, "t5", "1 passed")       # the latest turn
    return msgs


def assert_pairs_valid(msgs):
    api = to_api_messages(msgs)
    pending = set()
    for m in api:
        ids_used = {b["id"] for b in m["content"] if b.get("type") == "tool_use"}
        ids_answered = {b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"}
        assert ids_answered <= pending or not ids_answered
        pending = (pending - ids_answered) | ids_used
    assert api[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in zip(api, api[1:]))


def test_exchanges_exclude_the_latest_turn_and_human_messages():
    msgs = session()
    spans = find_exchanges(msgs, keep_recent_turns=1)
    assert [(msgs[a].content[-1]["id"]) for a, _ in spans] == ["t1", "t2", "t3", "t4"]
    assert find_exchanges(msgs, keep_recent_turns=3) == spans[:3]


def test_recover_from_overflow_folds_staged_spans_without_mutating_history():
    msgs = session()
    before = [(m.uuid, copy.deepcopy(m.content)) for m in msgs]
    col = ContextCollapse(keep_recent_turns=4)
    drained = col.recover_from_overflow(msgs)
    assert [(m.uuid, m.content) for m in msgs] == before
    assert drained.committed == 2                     # t1–t3 and t4: the human message splits them
    out = drained.messages
    assert len(out) < len(msgs)
    note = out[1].text
    assert "Read file_path=src/app.py" in note and "Bash command=pytest -q → error: FAILED test_x" in note
    assert "Grep path=src pattern=def main → ok, 1 line: src/app.py:1" in note
    assert "Read file_path=src/app.py → ok, 2 lines: def main():" in note
    assert out[-2].content[-1]["id"] == "t5"          # the latest turn is intact
    assert any(m.text == "now edit it" for m in out)
    assert_pairs_valid(out)


def test_nothing_to_fold_commits_nothing():
    msgs = [user_message("hi"), *exchange("Read", {"file_path": "a"}, "t1", "x")]
    drained = ContextCollapse().recover_from_overflow(msgs)
    assert drained.committed == 0 and [m.uuid for m in drained.messages] == [m.uuid for m in msgs]


def test_projection_is_stable_and_ignores_new_messages():
    msgs = session()
    col = ContextCollapse()
    first = col.recover_from_overflow(msgs).messages
    again = col.apply_collapses_if_needed(msgs + [reply("done"), user_message("more")])
    assert [m.content for m in again[:len(first)]] == [m.content for m in first]
    # Applying to the projection itself is a no-op, and nothing new is staged from summaries.
    assert [m.content for m in col.apply_collapses_if_needed(first)] == [m.content for m in first]
    assert col.recover_from_overflow(first).committed == 0


def test_partially_present_span_is_not_folded():
    msgs = session()
    col = ContextCollapse()
    col.recover_from_overflow(msgs)
    without_t2_result = [m for m in msgs if not (m.role == "user" and m.tool_result_ids() == ["t2"])]
    out = col.apply_collapses_if_needed(without_t2_result)
    assert any(b.get("id") == "t1" for m in out for b in m.content)


def test_unfoldable_exchanges_are_skipped():
    msgs = [user_message("go"),
            Message(role="assistant", content=[{"type": "tool_use", "id": "a", "name": "Read", "input": {}}], id="m1"),
            user_message([{"type": "tool_result", "tool_use_id": "a", "content": "x"},
                          {"type": "text", "text": "also, the user said this"}]),
            *exchange("Read", {"file_path": "b"}, "b", "y"),
            reply("fin")]
    spans = ContextCollapse().stage(msgs, keep_recent_turns=1)
    assert [s.tool_uses[0]["id"] for s in spans] == ["b"]


def test_apply_commits_oldest_spans_only_over_its_threshold():
    msgs = [user_message("go")]
    for i in range(30):
        msgs += exchange("Read", {"file_path": f"f{i}.py"}, f"t{i}", "z" * 4_000)
    msgs.append(reply("done"))
    col = ContextCollapse(keep_recent_turns=2, commit_ratio=0.5, max_exchanges_per_span=5)
    assert col.apply_collapses_if_needed(msgs, token_estimate=80_000, model="claude-sonnet-4-5") == msgs
    assert col.committed_count == 0
    out = col.apply_collapses_if_needed(msgs, token_estimate=95_000, model="claude-sonnet-4-5")
    assert 0 < col.committed_count < 6
    assert "f0.py" in out[1].text and len(out) < len(msgs)
    assert_pairs_valid(out)


def test_multi_block_response_folds_as_one_exchange():
    msgs = [user_message("go"),
            call("Read", {"file_path": "a"}, "ta", rid="m1"), call("Read", {"file_path": "b"}, "tb", rid="m1"),
            user_message([{"type": "tool_result", "tool_use_id": "ta", "content": "A"},
                          {"type": "tool_result", "tool_use_id": "tb", "content": "B"}]),
            reply("done")]
    drained = ContextCollapse().recover_from_overflow(msgs)
    assert drained.committed == 1 and len(drained.messages) == 4
    assert "file_path=a" in drained.messages[1].text and "file_path=b" in drained.messages[1].text
    assert_pairs_valid(drained.messages)


async def test_loop_drains_real_collapse_on_prompt_too_long_then_succeeds(tmp_path):
    from fakeapi import ScriptedAPI, error, sse, text
    from loophelpers import make_params, run, terminal
    from codeloop.loop.state import TerminalReason

    ptl = error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")
    api = ScriptedAPI(ptl, sse(text("all good")))
    history = session()[:-2] + [reply("checking"), user_message("and finally?")]
    params = make_params(api, tmp_path, messages=history)
    params.context_collapse = ContextCollapse()
    events = await run(params)
    assert terminal(events).reason is TerminalReason.COMPLETED
    first, retry = api.requests
    assert len(retry.messages) < len(first.messages)
    sent = json.dumps(retry.messages)
    assert "earlier tool call(s) collapsed" in sent and "and finally?" in sent
    assert '"tool_use"' not in sent          # every old exchange folded, pairs intact
