"""Issue 18: the incremental context stages give exactly what the one-shot walk gives.

Each stage now reuses its previous output for an unchanged prefix of the history and looks only
at the new messages. These tests drive the incremental stages and the pre-issue-18 one-shot
stages (tests/context/oneshot.py) side by side over long, randomised histories — fed back the
way the loop feeds them, and also re-sent, rewound, compacted and replaced from the raw history —
and require the same messages, the same replacements (and transcript records) and the same
cleared set after every call.
"""

from __future__ import annotations

import random

import oneshot
import pytest

from codeloop.context.budget import ContentReplacementState, apply_tool_result_budget
from codeloop.context.microcompact import MicrocompactState, microcompact
from codeloop.context.pipeline import CLEARED_STUB, ContextPipeline, PipelineConfig, SnipState, snip
from codeloop.messages import Message, api_error_message, tool_result_message, user_message

TOOLS = ["Read", "Bash", "Grep", "Task", "TodoWrite", "mcp__srv__tool"]
SIZES = [0, 12, 40, 300, 2_600, 3_500, 9_000, 14_000]


class History:
    """A random session: each `turn()` is what one loop iteration appends."""

    def __init__(self, seed: int, *, odd: bool = True) -> None:
        self.rng = random.Random(seed)
        self.odd = odd          # duplicate ids, orphan results, api errors, empty messages
        self.n = 0
        self.ids: list[str] = []

    def _id(self) -> str:
        self.n += 1
        return f"toolu_{self.n}"

    def _result(self, tid: str) -> Message:
        rng = self.rng
        size = rng.choice(SIZES)
        text = "".join(rng.choice("abc \n") for _ in range(min(size, 50))) + "y" * max(0, size - 50)
        roll = rng.random()
        if roll < 0.1:
            return tool_result_message(tid, text or "failed", is_error=True)
        if roll < 0.2:
            return tool_result_message(tid, [{"type": "text", "text": text}, {"type": "text", "text": "tail"}])
        if roll < 0.25:
            return tool_result_message(tid, [{"type": "image", "source": {"type": "base64", "data": "QUJD"}},
                                             {"type": "text", "text": text}])
        return tool_result_message(tid, text)

    def turn(self) -> list[Message]:
        rng = self.rng
        rid = f"msg_{self.n}_{rng.random()}"
        out: list[Message] = []
        if rng.random() < 0.3:
            out.append(Message(role="assistant", id=rid, content=[{"type": "text", "text": "x" * rng.choice(SIZES)}]))
        uses = []
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            tid = rng.choice(self.ids) if self.odd and self.ids and rng.random() < 0.03 else self._id()
            self.ids.append(tid)
            uses.append(tid)
            out.append(Message(role="assistant", id=rid, content=[
                {"type": "tool_use", "id": tid, "name": rng.choice(TOOLS), "input": {"n": self.n}}]))
        out += [self._result(tid) for tid in uses]
        if self.odd and rng.random() < 0.05:
            out.append(self._result(f"toolu_{self.n + rng.choice([1, 2, 50])}"))   # its use comes later, or never
        if rng.random() < 0.1:
            out.append(user_message("a note from the user " + "z" * rng.choice(SIZES)))
        if self.odd and rng.random() < 0.04:
            out.append(api_error_message("API Error: overloaded"))
        if self.odd and rng.random() < 0.03:
            out.append(Message(role="user", content=[]))
        return out


def _view(messages: list[Message]) -> list[tuple]:
    return [(m.role, m.uuid, m.id, m.content) for m in messages]


class Twin:
    """The incremental stages and the one-shot ones, fed the same inputs."""

    def __init__(self, *, budget: int, keep: int, min_chars: int, max_block: int) -> None:
        self.kw = dict(budget=budget, keep=keep, min_chars=min_chars, max_block=max_block)
        self.inc = (ContentReplacementState(), SnipState(), MicrocompactState())
        self.ref = (oneshot.ContentReplacementState(), None, oneshot.MicrocompactState())

    def run(self, messages: list[Message]) -> list[Message]:
        k = self.kw
        b, s, m = self.inc
        out = apply_tool_result_budget(messages, b, session_dir=None, budget_chars=k["budget"],
                                       exempt_tools={"mcp__srv__tool"})
        out = snip(out, max_block_chars=k["max_block"], state=s)
        out = microcompact(out, keep_recent_turns=k["keep"], state=m, min_clear_chars=k["min_chars"])
        rb, _, rm = self.ref
        ref = oneshot.apply_tool_result_budget(messages, rb, session_dir=None, budget_chars=k["budget"],
                                               exempt_tools={"mcp__srv__tool"})
        ref = oneshot.snip(ref, max_block_chars=k["max_block"])
        ref = oneshot.microcompact(ref, keep_recent_turns=k["keep"], state=rm, min_clear_chars=k["min_chars"])
        assert _view(out) == _view(ref)
        assert b.replacements == rb.replacements and b.drain_records() == rb.pending_records
        rb.pending_records = []
        assert m.cleared == rm.cleared
        return out

    def compacted(self) -> None:
        """What ContextPipeline.run does after a compaction."""
        for state in (self.inc[2], self.ref[2]):
            state.cleared.clear()
            state.memo.clear()
        self.inc[0].memo.clear()
        self.ref[0].memo.clear()


@pytest.mark.parametrize("seed", range(12))
def test_incremental_stages_equal_the_one_shot_walk_over_a_long_random_session(seed):
    rng = random.Random(1000 + seed)
    hist = History(seed)
    twin = Twin(budget=rng.choice([20_000, 60_000, 10**9]), keep=rng.choice([1, 2, 4]),
                min_chars=rng.choice([0, 400, 6_000]), max_block=rng.choice([5_000, 12_000]))
    raw: list[Message] = [user_message("start")]
    fed = twin.run(list(raw))
    events = {"replaced": 0, "cleared": 0, "rewind": 0, "compact": 0, "raw": 0, "again": 0}
    for _ in range(160):
        new = hist.turn()
        raw += new
        roll = rng.random()
        if roll < 0.04 and len(fed) > 4:        # rewind: a shorter history (kept objects)
            cut = rng.randrange(1, len(fed))
            fed, raw = fed[:cut], raw[:cut]
            events["rewind"] += 1
            inp = list(fed)
        elif roll < 0.06:                      # compaction: a new history of new objects
            twin.compacted()
            raw = [user_message("summary of the conversation so far"), *raw[-3:]]
            inp = list(raw)
            events["compact"] += 1
        elif roll < 0.10:                      # a new prompt: the session's raw history, not the piped one
            inp = list(raw)
            events["raw"] += 1
        elif roll < 0.13:                      # the same request again (a retry)
            inp = list(fed)
            events["again"] += 1
        else:                                  # the loop: the pipeline's output plus the new messages
            inp = [*fed, *new]
        before = (len(twin.inc[0].replacements), len(twin.inc[2].cleared))
        fed = twin.run(inp)
        events["replaced"] += len(twin.inc[0].replacements) > before[0]
        events["cleared"] += len(twin.inc[2].cleared) > before[1]
    # the walk took every kind of path at least once over the seeds (checked in aggregate below)
    _seen.append(events)


_seen: list[dict[str, int]] = []


def test_the_random_sessions_covered_every_path():
    if len(_seen) < 12:
        pytest.skip("run with the parametrised sessions above")
    for key in ("replaced", "cleared", "rewind", "compact", "raw", "again"):
        assert sum(e[key] for e in _seen) > 0, key


def _exchange(tid: str, name: str, size: int) -> list[Message]:
    return [Message(role="assistant", id=f"msg_{tid}", content=[
                {"type": "tool_use", "id": tid, "name": name, "input": {}}]),
            tool_result_message(tid, "r" * size)]


def _grow(twin: Twin, fed: list[Message], turns: list[list[Message]]) -> list[Message]:
    for new in turns:
        fed = twin.run([*fed, *new])
    return fed


def test_after_a_clearing_batch_the_next_turns_match_the_one_shot_walk():
    twin = Twin(budget=10**9, keep=2, min_chars=1_000, max_block=100_000)
    fed = twin.run([user_message("go")])
    fed = _grow(twin, fed, [_exchange(f"a{i}", "Bash", 300) for i in range(6)])
    assert twin.inc[2].cleared   # a batch was cleared along the way …
    assert any(b.get("content") == CLEARED_STUB for m in fed for b in m.content)
    _grow(twin, fed, [_exchange(f"b{i}", "Read", 10) for i in range(10)])   # … and the next ones agree


def test_after_a_content_replacement_the_next_turns_match_the_one_shot_walk():
    twin = Twin(budget=8_000, keep=50, min_chars=0, max_block=100_000)
    fed = twin.run([user_message("go")])
    fed = _grow(twin, fed, [_exchange(f"a{i}", "Read", 3_000) for i in range(4)])
    assert twin.inc[0].replacements
    fed = _grow(twin, fed, [_exchange(f"b{i}", "Read", 50) for i in range(5)])
    assert any("<persisted-output>" in str(b.get("content")) for m in fed for b in m.content)


def test_after_a_compaction_and_a_rewind_the_next_turns_match_the_one_shot_walk():
    twin = Twin(budget=6_000, keep=4, min_chars=0, max_block=100_000)
    fed = twin.run([user_message("go")])
    fed = _grow(twin, fed, [_exchange(f"a{i}", "Grep", 2_800) for i in range(5)])
    rewound = fed[:5]                                   # /rewind: a truncated history
    fed = _grow(twin, rewound, [_exchange(f"b{i}", "Bash", 40) for i in range(3)])
    assert twin.inc[2].cleared
    twin.compacted()                                    # compaction: new objects throughout
    fed = _grow(twin, [user_message("summary"), *fed[-2:]], [_exchange(f"c{i}", "Read", 2_700) for i in range(6)])
    assert any(t.startswith("c") for t in twin.inc[0].replacements)
    assert any(t.startswith("c") for t in twin.inc[2].cleared)


def test_snip_reuses_the_prefix_and_redecides_under_another_limit():
    msgs = [user_message("go"), *_exchange("a", "Bash", 9_000), *_exchange("b", "Bash", 10)]
    state = SnipState()
    first = snip(msgs, max_block_chars=1_000, state=state)
    more = [*first, *_exchange("c", "Bash", 5_000)]
    second = snip(more, max_block_chars=1_000, state=state)
    assert all(a is b for a, b in zip(first, second)) and "snipped" in second[-1].content[0]["content"]
    assert _view(second) == _view(oneshot.snip(more, max_block_chars=1_000))
    other = snip(more, max_block_chars=100_000, state=state)
    assert _view(other) == _view(oneshot.snip(more, max_block_chars=100_000))


@pytest.mark.parametrize("seed", range(4))
async def test_the_pipeline_incrementally_equals_the_pipeline_walking_everything(seed):
    cfg = PipelineConfig(budget_chars=40_000, max_block_chars=10_000, keep_recent_turns=3,
                         microcompact_min_chars=2_000)
    warm, cold = ContextPipeline(config=cfg), ContextPipeline(config=cfg)
    hist = History(50 + seed)
    fed: list[Message] = [user_message("go")]
    records: tuple[list, list] = ([], [])
    for _ in range(120):
        inp = [*fed, *hist.turn()]
        cold.replacements.last = cold.microcompact_state.last = cold.snip_state.last = None
        a = await warm.run(inp, model="claude-sonnet-4-5")
        b = await cold.run(inp, model="claude-sonnet-4-5")
        assert _view(a.messages) == _view(b.messages) and a.token_estimate == b.token_estimate
        records[0].extend(a.replacements)
        records[1].extend(b.replacements)
        fed = a.messages
    assert records[0] == records[1] and records[0]
    assert warm.microcompact_state.cleared == cold.microcompact_state.cleared != set()
