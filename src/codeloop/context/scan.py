"""Per-message facts the context stages ask of every message before every request, found once.

The pipeline re-runs over the whole history on each turn; what its stages need from an old
message (its tool_result ids and sizes, its tool_use ids and names, its snipped form) never
changes, because the pipeline never mutates a message. `facts(m)` remembers them per message
object, so a turn costs one dictionary lookup per old message instead of a walk through its
blocks, and per-turn time stays flat as the session grows. An entry keeps the message and its
content list and is valid only for those very objects; the memo is dropped when it outgrows the
history (after a compaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeloop.messages import Message

CLEARED_STUB = "[Old tool result content cleared]"


def result_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(b.get("text") or "") for b in content if isinstance(b, dict))
    return 0


@dataclass(slots=True)   # one per message of a long session: kept small
class Facts:
    """What one message holds for the context stages: its tool results and tool uses."""
    results: tuple[tuple[Any, int, bool, bool], ...]   # per tool_result: (tool_use_id, chars, is_error, cleared)
    uses: tuple[tuple[Any, str], ...]                  # per tool_use: (id, name)
    snipped: tuple[tuple[int, bool], Message] | None = None   # ((max_chars, user_text), its snipped form)


_memo: dict[int, tuple[Message, list, int, Facts]] = {}


def facts(m: Message) -> Facts:
    hit = _memo.get(id(m))
    if hit is not None and hit[0] is m and hit[1] is m.content and hit[2] == len(m.content):
        return hit[3]
    results = tuple((b.get("tool_use_id"), result_chars(b.get("content")), bool(b.get("is_error")),
                     b.get("content") == CLEARED_STUB)
                    for b in m.content if b.get("type") == "tool_result")
    uses = tuple((b.get("id"), b.get("name", "")) for b in m.content if b.get("type") == "tool_use" and "id" in b)
    f = Facts(results, uses)
    _memo[id(m)] = (m, m.content, len(m.content), f)
    return f


def carry(old: Message, new: Message, swaps: dict[Any, Any]) -> None:
    """Record the facts of `new`, which is `old` with the contents of the tool_results named in
    `swaps` replaced (rewrite.with_results), from `old`'s instead of walking its blocks again:
    only those results change. Its snipped form carries over when `old` needed no snipping and
    every new content is a string too short to snip. (A stage's copies of a long resumed history
    are the next turn's input: without this, that turn would look at every message afresh.)"""
    f = facts(old)
    results = tuple((r[0], result_chars(swaps[r[0]]), r[2], swaps[r[0]] == CLEARED_STUB) if r[0] in swaps else r
                    for r in f.results)
    snipped = None
    if f.snipped is not None and f.snipped[1] is old and all(
            isinstance(v, str) and len(v) <= f.snipped[0][0] for v in swaps.values()):
        snipped = (f.snipped[0], new)
    _memo[id(new)] = (new, new.content, len(new.content), Facts(results, f.uses, snipped))


def trim(history_len: int) -> None:
    """Forget everything once the memo is far larger than the history it serves."""
    if len(_memo) > 4 * history_len + 256:
        _memo.clear()
