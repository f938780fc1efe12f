"""Issue 18: the pipeline's per-message facts are found once per message object, so a turn's
work does not grow with the history — and a changed message is never served stale facts."""

from codeloop.context import scan
from codeloop.context.pipeline import CLEARED_STUB, ContextPipeline, PipelineConfig, snip
from codeloop.messages import Message, tool_result_message


def history(n: int, big: int = 10) -> list[Message]:
    out: list[Message] = [Message(role="user", content=[{"type": "text", "text": "go"}])]
    for i in range(n):
        out.append(Message(role="assistant", id=f"msg_{i}", content=[
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "echo"}}]))
        out.append(tool_result_message(f"t{i}", "x" * big))
    return out


def test_facts_are_found_once_per_message_and_refreshed_for_a_new_one():
    m = tool_result_message("t1", "abc")
    f = scan.facts(m)
    assert f.results == (("t1", 3, False, False),) and scan.facts(m) is f
    m2 = tool_result_message("t1", CLEARED_STUB, is_error=True)
    assert scan.facts(m2).results == (("t1", len(CLEARED_STUB), True, True),)
    m.content = [{"type": "tool_result", "tool_use_id": "t9", "content": "zz"}]   # a new list: new facts
    assert scan.facts(m).results == (("t9", 2, False, False),)


def test_snip_reuses_its_result_for_the_same_message_objects():
    msgs = history(3, big=500)
    first = snip(msgs, max_block_chars=200)
    second = snip(msgs, max_block_chars=200)
    assert all(a is b for a, b in zip(first, second))
    assert first[2] is not msgs[2] and "characters snipped" in first[2].content[0]["content"]
    assert snip(msgs, max_block_chars=10_000)[2] is msgs[2]   # another limit: decided afresh


async def test_repeated_runs_over_a_growing_history_match_a_fresh_pipeline():
    cfg = PipelineConfig(keep_recent_turns=2, microcompact_min_chars=0, budget_chars=5_000)
    warm = ContextPipeline(config=cfg)
    msgs = history(30, big=400)
    for n in range(5, 61, 5):   # the same objects, a turn at a time, as a session grows
        warm_out = (await warm.run(msgs[:n], model="claude-sonnet-4-5")).messages
    fresh_out = (await ContextPipeline(config=cfg).run(msgs[:60], model="claude-sonnet-4-5")).messages
    assert [m.content for m in warm_out] == [m.content for m in fresh_out]
    assert any(b.get("content") == CLEARED_STUB for m in warm_out for b in m.content)
