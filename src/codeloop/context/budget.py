"""Stage 1 of the pipeline: the tool result budget. When all tool output in the history adds up to
more than the budget, the largest results (oldest first among equals) are replaced by a preview
plus the path of a file holding the whole output. A replacement is decided once per tool_use_id,
recorded for the transcript (`record_replacement`) and replayed identically from then on.

Per-turn work follows what changed: the running total and the candidates are kept in the state
with the previous call's input and output, so a history that extends that input (or output) by
the same objects is measured only in its new messages. Anything else — a new replacement, a
compaction, a rewind — is a full pass, and gives the same result as one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.context.rewrite import Reuse, result_text, rewrite
from codeloop.context.scan import facts
from codeloop.messages import Message

PREVIEW_CHARS = 2_000
DEFAULT_TOOL_RESULT_BUDGET_CHARS = 300_000
_UNSAFE_ID = r"[^A-Za-z0-9_.-]"   # compiled on first use


def record_replacement(tool_use_id: str, replacement: str) -> dict[str, Any]:
    """The transcript entry that lets a resumed session replay a replacement exactly."""
    return {"type": "content-replacement", "toolUseId": tool_use_id, "replacement": replacement}


@dataclass
class _Totals(Reuse):
    """Reuse plus the running sums over `inp` (which `out` shares, replacements applied)."""
    replacements: int = 0                                      # len(state.replacements) then
    total: int = 0
    candidates: list[tuple[int, int, str]] = field(default_factory=list)   # (-size, position, id)
    names: dict[str, str] = field(default_factory=dict)       # tool_use_id → tool name


@dataclass
class ContentReplacementState:
    """Tool results replaced to stay within budget, and the records not yet persisted."""
    replacements: dict[str, str] = field(default_factory=dict)   # tool_use_id → replacement text
    pending_records: list[dict[str, Any]] = field(default_factory=list)  # new, not yet persisted
    memo: dict[str, tuple[Message, Message, tuple[str, ...]]] = field(default_factory=dict, repr=False, compare=False)
    last: _Totals | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_entries(cls, entries: Iterable[dict[str, Any]]) -> ContentReplacementState:
        state = cls()
        for e in entries:
            if (isinstance(e, dict) and e.get("type") == "content-replacement"
                    and isinstance(e.get("toolUseId"), str) and isinstance(e.get("replacement"), str)):
                state.replacements[e["toolUseId"]] = e["replacement"]
        return state

    def drain_records(self) -> list[dict[str, Any]]:
        out, self.pending_records = self.pending_records, []
        return out


def _persist(session_dir: Path | None, tool_use_id: str, text: str) -> Path | None:
    if session_dir is None:
        return None
    path = Path(session_dir) / "tool-results" / f"{re.sub(_UNSAFE_ID, '_', tool_use_id)}.txt"
    try:
        if not path.exists():  # written once: the saved output never changes under the model
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8", errors="surrogateescape")
            os.replace(tmp, path)
        return path
    except OSError:
        return None


def replacement_text(text: str, path: Path | None, preview_chars: int = PREVIEW_CHARS) -> str:
    where = (f"Full output saved to: {path}\nUse Read on that file (with offset/limit) for more."
             if path is not None else "The full output was not saved.")
    return (f"<persisted-output>\nOutput too large ({len(text):,} characters). {where}\n\n"
            f"Preview (first {preview_chars:,} characters):\n{text[:preview_chars]}\n</persisted-output>")


def _measure(messages: list[Message], start: int, run: _Totals, replaced: dict[str, str], preview_chars: int) -> None:
    """Add messages[start:] to the running total, candidates and tool names of `run`."""
    total, candidates, names = run.total, run.candidates, run.names
    for pos in range(start, len(messages)):
        m = messages[pos]
        if m.role == "assistant":
            names.update(facts(m).uses)
        if m.role != "user":
            continue
        for tid, size, _, _ in facts(m).results:
            if tid in replaced:
                total += len(replaced[tid])
            else:
                total += size
                if size > preview_chars + 500:
                    candidates.append((-size, pos, tid))
    run.total = total


def apply_tool_result_budget(messages: list[Message], state: ContentReplacementState, *,
                             session_dir: Path | None, budget_chars: int = DEFAULT_TOOL_RESULT_BUDGET_CHARS,
                             exempt_tools: set[str] | frozenset[str] = frozenset(),
                             tool_names: dict[str, str] | None = None,
                             preview_chars: int = PREVIEW_CHARS) -> list[Message]:
    """Replace the largest tool results (oldest first among equals) until the total fits."""
    run = state.last
    start = run.prefix(messages, preview_chars) if run is not None and run.replacements == len(
        state.replacements) else 0
    if not start:
        state.last = None   # the old lists go before a full pass builds new ones
        run = _Totals(inp=[], out=[], key=preview_chars, replacements=len(state.replacements))
    assert run is not None
    _measure(messages, start, run, state.replacements, preview_chars)
    decided = False
    if run.total > budget_chars:
        extra = tool_names or {}
        texts = {b.get("tool_use_id"): result_text(b.get("content")) for _, pos, _ in run.candidates
                 for b in messages[pos].content if b.get("type") == "tool_result"}
        total = run.total
        # Largest first: the fewest replacements (each one changes the cached prefix).
        for neg_size, _, tid in sorted(run.candidates):
            text = texts.get(tid)
            name = extra[tid] if tid in extra else run.names.get(tid)
            if text is None or name in exempt_tools:
                continue
            new = replacement_text(text, _persist(session_dir, tid, text), preview_chars)
            state.replacements[tid] = new
            state.pending_records.append(record_replacement(tid, new))
            decided = True
            total -= -neg_size - len(new)
            if total <= budget_chars:
                break
    if decided or not start:   # a new decision reaches back into the prefix: the full pass
        out = (rewrite(messages, state.replacements, state.replacements.__getitem__, state.memo)
               if state.replacements else list(messages))
    else:
        tail = messages[start:]
        out = [*run.out, *(rewrite(tail, state.replacements, state.replacements.__getitem__, state.memo)
                           if state.replacements else tail)]
    # After a decision the running sums are stale: the next call measures afresh.
    state.last = None if decided else _Totals(inp=list(messages), out=out, key=preview_chars,
                                              replacements=len(state.replacements), total=run.total,
                                              candidates=run.candidates, names=run.names)
    return list(out)
