"""Stage 3 of the pipeline: microcompact. Results of clearable tools called before the last
`keep_recent_turns` assistant turns are cleared to a stub, keyed by tool_use_id, in batches of at
least `min_clear_chars` so the cached prompt prefix breaks rarely rather than a little every turn.
Error results stay (they are short and explain what went wrong).

Per-turn work follows what changed: the turn numbering, the tool names and the results not yet
cleared are kept in the state with the previous call's input and output. A result is `pending`
while its turn is recent (or its tool_use not seen yet) and `eligible` once the cutoff passes it;
the cutoff only moves forward while the history grows, so an eligible result stays eligible until
its batch is cleared. A history that does not extend the previous one by the same objects, a
tool_use id seen twice, or a cleared set changed from outside is a full pass, which gives the
same result as the one-shot walk (`cleared` is a set: the order results are found in is moot).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codeloop.context.rewrite import Reuse, rewrite
from codeloop.context.scan import CLEARED_STUB, facts
from codeloop.messages import Message

DEFAULT_KEEP_RECENT_TURNS = 8
CLEARABLE_TOOLS = frozenset({"Read", "Bash", "Grep", "Glob", "WebFetch", "WebSearch", "Edit", "Write",
                             "NotebookEdit", "LS"})


@dataclass
class _Turns(Reuse):
    """A microcompact pass's running tally over the messages, reusable for an unchanged prefix."""
    cleared: int = 0                                   # len(state.cleared) then
    turns: int = 0
    prev_id: str | None = None
    prev_assistant: bool = False
    turn_of: dict[str, int] = field(default_factory=dict)     # tool_use_id → its assistant turn
    names: dict[str, str] = field(default_factory=dict)       # tool_use_id → tool name
    pending: list[tuple[str, int]] = field(default_factory=list)   # (id, chars): not old enough yet
    eligible: list[str] = field(default_factory=list)          # old, clearable, not cleared
    eligible_chars: int = 0


@dataclass
class MicrocompactState:
    """The tool results microcompact has cleared, kept across calls."""
    cleared: set[str] = field(default_factory=set)   # tool_use_ids whose results stay cleared
    memo: dict[str, tuple[Message, Message, tuple[str, ...]]] = field(default_factory=dict, repr=False, compare=False)
    last: _Turns | None = field(default=None, repr=False, compare=False)


def _scan(messages: list[Message], start: int, run: _Turns, cleared: set[str]) -> bool:
    """Fold messages[start:] into `run`; False when a tool_use id repeats an earlier one's (only a
    full pass, which sees every use before judging any result, numbers those as the one-shot walk)."""
    turns, prev_id, prev_assistant = run.turns, run.prev_id, run.prev_assistant
    turn_of, names, pending = run.turn_of, run.names, run.pending
    for i in range(start, len(messages)):
        m = messages[i]
        if m.role == "assistant":
            # Consecutive blocks of one response (same id) are one turn.
            if not prev_assistant or m.id is None or m.id != prev_id:
                turns += 1
            prev_id, prev_assistant = m.id, True
            for tid, name in facts(m).uses:
                if start and tid in turn_of:
                    return False
                turn_of[tid] = turns
                names[tid] = name
        else:
            prev_assistant = False
            if m.role == "user":
                pending.extend((tid, chars) for tid, chars, is_error, stub in facts(m).results
                               if not is_error and not stub and tid not in cleared)
    run.turns, run.prev_id, run.prev_assistant = turns, prev_id, prev_assistant
    return True


def _promote(run: _Turns, cutoff: int, cleared: set[str], clearable: frozenset[str] | set[str]) -> None:
    """Move pending results whose turn is now old into `eligible`; forget those never clearable."""
    keep = []
    for tid, chars in run.pending:
        if tid in cleared:
            continue
        turn = run.turn_of.get(tid)
        if turn is None:                       # its tool_use not seen (yet)
            keep.append((tid, chars))
        elif run.names[tid] not in clearable:
            continue
        elif turn <= cutoff:
            run.eligible.append(tid)
            run.eligible_chars += chars
        else:
            keep.append((tid, chars))
    run.pending = keep


def microcompact(messages: list[Message], *, keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS,
                 state: MicrocompactState, clearable: frozenset[str] | set[str] = CLEARABLE_TOOLS,
                 min_clear_chars: int = 0) -> list[Message]:
    """Clear results of clearable tools called before the last `keep_recent_turns` assistant turns.

    Clearing happens in batches of at least `min_clear_chars` so the cached prefix is broken
    rarely rather than a little on every turn; error results stay (they are short and explain
    what went wrong).
    """
    key: Any = (keep_recent_turns, frozenset(clearable))
    run = state.last
    start = run.prefix(messages, key) if run is not None and run.cleared == len(state.cleared) else 0
    if run is None or not start or not _scan(messages, start, run, state.cleared):
        state.last = None   # the old lists go before a full pass builds new ones
        start, run = 0, _Turns(inp=[], out=[], key=key)
        _scan(messages, 0, run, state.cleared)
    assert run is not None
    _promote(run, run.turns - keep_recent_turns, state.cleared, clearable)
    decided = bool(run.eligible) and run.eligible_chars >= min_clear_chars
    if decided:
        state.cleared.update(run.eligible)
        run.eligible, run.eligible_chars = [], 0
    if decided or not start:   # a new batch reaches back into the prefix: the full pass
        out = rewrite(messages, state.cleared, _stub, state.memo) if state.cleared else list(messages)
    else:
        tail = messages[start:]
        out = [*run.out, *(rewrite(tail, state.cleared, _stub, state.memo) if state.cleared else tail)]
    run.inp, run.out, run.cleared = list(messages), out, len(state.cleared)
    state.last = run
    return list(out)


def _stub(_: str) -> str:
    return CLEARED_STUB
