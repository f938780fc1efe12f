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


def test_a_rewritten_message_carries_exactly_the_facts_a_fresh_walk_finds():
    """Issue 31: a stage's copy of a message (rewrite.with_results) gets its facts and snipped form
    from the original's, so the next turn after a resume need not walk every message again; they
    are what walking the copy finds."""
    from codeloop.context.rewrite import rewrite

    long_text = "y" * 900
    msgs = [tool_result_message("t1", "short"),
            Message(role="user", content=[
                {"type": "tool_result", "tool_use_id": "t2", "content": "abc"},
                {"type": "tool_result", "tool_use_id": "t3", "content": [{"type": "text", "text": "q" * 50}]},
                {"type": "tool_result", "tool_use_id": "t4", "content": "zz", "is_error": True}]),
            tool_result_message("t5", long_text)]
    for swap in ({"t1": CLEARED_STUB}, {"t2": "w" * 700, "t3": CLEARED_STUB}, {"t4": CLEARED_STUB},
                 {"t5": CLEARED_STUB}, {"t1": "x" * 300}):
        snip(msgs, max_block_chars=500)   # the originals' snipped forms are known, as in the pipeline
        out = rewrite(msgs, set(swap), swap.__getitem__, {})
        changed = [m for m, o in zip(msgs, out) if m is not o]
        assert changed
        carried = {id(m): scan.facts(m) for m in out}
        scan._memo.clear()   # what a fresh walk of the copies finds
        for m in out:
            fresh = scan.facts(m)
            assert carried[id(m)].results == fresh.results and carried[id(m)].uses == fresh.uses
        fresh_snip = snip(out, max_block_chars=500)
        for m, f in zip(out, carried.values()):
            if f.snipped is not None:   # a carried snipped form is the one snipping finds
                assert (f.snipped[1] is m) == (fresh_snip[out.index(m)] is m)
        assert any(f.snipped is not None for f in carried.values())
