"""The context stages as they were before they became incremental (issue 18): each call walks the
whole history. The tests hold the incremental stages to exactly these results."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codeloop.context.budget import PREVIEW_CHARS, _persist, record_replacement, replacement_text
from codeloop.context.microcompact import CLEARABLE_TOOLS, DEFAULT_KEEP_RECENT_TURNS
from codeloop.context.pipeline import DEFAULT_MAX_BLOCK_CHARS, _snip_blocks
from codeloop.context.scan import CLEARED_STUB, facts
from codeloop.messages import Message

DEFAULT_TOOL_RESULT_BUDGET_CHARS = 300_000


@dataclass
class ContentReplacementState:
    replacements: dict[str, str] = field(default_factory=dict)
    pending_records: list[dict[str, Any]] = field(default_factory=list)
    memo: dict = field(default_factory=dict)


@dataclass
class MicrocompactState:
    cleared: set[str] = field(default_factory=set)
    memo: dict = field(default_factory=dict)


def tool_names_from(messages: Iterable[Message]) -> dict[str, str]:
    return {tid: name for m in messages if m.role == "assistant" for tid, name in facts(m).uses}


def _result_text(content: Any) -> str | None:
    """The text of a tool_result, or None when it holds non-text blocks (images stay as they are)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(b.get("text") or "" for b in content)
    return None


def _with_results(msg: Message, new: dict[str, Any]) -> Message:
    """A copy of `msg` with the tool_result blocks named in `new` (tool_use_id → content) swapped."""
    content = [{**b, "content": new[b.get("tool_use_id")]}
               if b.get("type") == "tool_result" and b.get("tool_use_id") in new else b
               for b in msg.content]
    # dataclasses.replace re-runs __init__ and costs ~5 µs a message; a dict copy is 10× cheaper.
    out = Message.__new__(Message)
    out.__dict__.update(msg.__dict__)
    out.content = content
    return out


def _rewrite(messages: list[Message], ids: dict[str, Any] | set[str], value: Any,
             memo: dict[str, tuple[Message, Message, tuple[str, ...]]]) -> list[Message]:
    """Messages with the tool_results in `ids` swapped for `value(id)`; unchanged ones shared.

    `memo` maps a message uuid to (original, rewritten) so repeated calls on the same history
    return the very same rewritten objects instead of copying them again.
    """
    out = []
    for m in messages:
        if m.role == "user":
            hits = tuple(r[0] for r in facts(m).results if r[0] in ids)
            if hits:
                cached = memo.get(m.uuid)
                # Valid only for the same object with the same set of swapped results.
                if cached is not None and cached[0] is m and cached[2] == hits:
                    m = cached[1]
                else:
                    swaps = {b["tool_use_id"]: value(b["tool_use_id"]) for b in m.content
                             if b.get("type") == "tool_result" and b.get("tool_use_id") in hits
                             and b.get("content") != value(b["tool_use_id"])}
                    if swaps:
                        new = _with_results(m, swaps)
                        memo[m.uuid] = (m, new, hits)
                        m = new
        out.append(m)
    return out


def apply_tool_result_budget(messages: list[Message], state: ContentReplacementState, *,
                             session_dir: Path | None, budget_chars: int = DEFAULT_TOOL_RESULT_BUDGET_CHARS,
                             exempt_tools: set[str] | frozenset[str] = frozenset(),
                             tool_names: dict[str, str] | None = None,
                             preview_chars: int = PREVIEW_CHARS) -> list[Message]:
    """Replace the largest tool results (oldest first among equals) until the total fits."""
    total = 0
    candidates: list[tuple[int, int, str]] = []   # (-size, position, id)
    for pos, m in enumerate(messages):
        if m.role != "user":
            continue
        for tid, size, _, _ in facts(m).results:
            if tid in state.replacements:
                total += len(state.replacements[tid])
            else:
                total += size
                if size > preview_chars + 500:
                    candidates.append((-size, pos, tid))
    if total > budget_chars:
        names = {**tool_names_from(messages), **(tool_names or {})}
        texts = {b.get("tool_use_id"): _result_text(b.get("content")) for _, pos, _ in candidates
                 for b in messages[pos].content if b.get("type") == "tool_result"}
        # Largest first: the fewest replacements (each one changes the cached prefix).
        for neg_size, _, tid in sorted(candidates):
            text = texts.get(tid)
            if text is None or names.get(tid) in exempt_tools:
                continue
            new = replacement_text(text, _persist(session_dir, tid, text), preview_chars)
            state.replacements[tid] = new
            state.pending_records.append(record_replacement(tid, new))
            total -= -neg_size - len(new)
            if total <= budget_chars:
                break
    if not state.replacements:
        return list(messages)
    return _rewrite(messages, state.replacements, state.replacements.__getitem__, state.memo)


def snip(messages: list[Message], *, max_block_chars: int = DEFAULT_MAX_BLOCK_CHARS) -> list[Message]:
    """Trim huge tool_result strings and model text blocks to head + tail; same messages, same blocks.

    A user message's own text (what the person typed or piped in) is never trimmed: cutting the
    middle of a prompt silently changes the question. A prompt too large for the model is
    refused before it is sent instead (loop/model_call)."""
    out = []
    for m in messages:
        key = (id(m), max_block_chars, m.role != "user")
        hit = _snipped.get(key)
        if hit is None or hit[0] is not m:   # the same message object always snips the same way
            new = _snip_blocks(m.content, max_block_chars, user_text=key[2])
            hit = _snipped[key] = (m, m if new is None else replace(m, content=new))
        out.append(hit[1])
    return out


_snipped: dict[tuple[int, int, bool], tuple[Message, Message]] = {}   # the oracle's own memo


def microcompact(messages: list[Message], *, keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS,
                 state: MicrocompactState, clearable: frozenset[str] | set[str] = CLEARABLE_TOOLS,
                 min_clear_chars: int = 0) -> list[Message]:
    """Clear results of clearable tools called before the last `keep_recent_turns` assistant turns.

    Clearing happens in batches of at least `min_clear_chars` so the cached prefix is broken
    rarely rather than a little on every turn; error results stay (they are short and explain
    what went wrong).
    """
    turn_of: dict[str, int] = {}
    names: dict[str, str] = {}
    turns, prev_id, prev_assistant = 0, None, False
    for m in messages:
        if m.role == "assistant":
            # Consecutive blocks of one response (same id) are one turn.
            if not prev_assistant or m.id is None or m.id != prev_id:
                turns += 1
            prev_id, prev_assistant = m.id, True
            for tid, name in facts(m).uses:
                turn_of[tid] = turns
                names[tid] = name
        else:
            prev_assistant = False
    cutoff = turns - keep_recent_turns   # tool_uses in turns <= cutoff are old
    fresh: list[str] = []
    fresh_chars = 0
    for m in messages:
        if m.role != "user":
            continue
        for tid, chars, is_error, stub in facts(m).results:
            if (tid not in state.cleared and not is_error and turn_of.get(tid, turns + 1) <= cutoff
                    and names.get(tid) in clearable and not stub):
                fresh.append(tid)
                fresh_chars += chars
    if fresh and fresh_chars >= min_clear_chars:
        state.cleared.update(fresh)
    if not state.cleared:
        return list(messages)
    return _rewrite(messages, state.cleared, lambda _: CLEARED_STUB, state.memo)
