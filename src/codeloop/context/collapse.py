"""Context collapse (spec 004 §8.4, §11.1): a read-time projection that folds old tool exchanges.

A *span* is a run of consecutive complete tool-use exchanges — an assistant response whose
blocks are text/thinking/tool_use, followed by user messages holding exactly the tool_results
of those tool_uses and nothing else. Spans older than the recent turns are *staged* (known,
not yet applied). *Committing* a span makes the projection replace it with one summary pair —
an assistant note naming each call (tool, key input: path, command, pattern…) and its outcome,
and a user note saying the results were folded. Stored history is never mutated: the
projection is recomputed from uuids on each call, and a committed span's summary is built once
so the projected prefix is byte-stable for prompt caching.

Pairs stay valid by construction: a span holds every tool_use with all of its tool_results, and
the latest turn is never folded. A span only folds when all of its messages are present.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from codeloop.context.tokens import TokenCounter
from codeloop.loop.recovery import DrainResult
from codeloop.messages import Message
from codeloop.providers.models import context_window, output_reserve

_KEY_INPUTS = ("file_path", "notebook_path", "path", "command", "pattern", "glob", "url", "query",
               "description", "prompt")
_MAX_LINES = 40
_FOLDABLE_ASSISTANT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})


@dataclass(frozen=True)
class Span:
    """A run of tool calls, their results and the notes between them, folded as one."""
    uuids: tuple[str, ...]
    tool_uses: tuple[dict[str, Any], ...]
    results: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]          # assistant text written between the calls


def _key_input(inp: Any) -> str:
    if not isinstance(inp, dict):
        return ""
    parts = []
    for key in _KEY_INPUTS:
        value = inp.get(key)
        if isinstance(value, str) and value:
            parts.append(f"{key}={_clip(value, 160)}")
        if len(parts) == 2:
            break
    if not parts and inp:
        parts.append(_clip(json.dumps(inp, ensure_ascii=False, default=str), 160))
    return " ".join(parts)


def _clip(s: str, n: int) -> str:
    s = " ".join(s.split()) if "\n" in s else s
    return s if len(s) <= n else s[:n - 1] + "…"


def _outcome(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        content = "\n".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")
    text = content if isinstance(content, str) else ""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if result.get("is_error"):
        return f"error: {_clip(first, 120)}"
    lines = len(text.splitlines())
    return f"ok, {lines} line{'s' if lines != 1 else ''}" + (f": {_clip(first, 80)}" if first else "")


def summary_pair(span: Span) -> list[Message]:
    by_id = {r.get("tool_use_id"): r for r in span.results}
    lines = [f"[{len(span.tool_uses)} earlier tool call(s) collapsed to save context]"]
    for note in span.notes[:3]:
        lines.append(f"(note: {_clip(note, 200)})")
    for tu in span.tool_uses[:_MAX_LINES]:
        outcome = _outcome(by_id.get(tu.get("id"), {}))
        lines.append(f"- {tu.get('name', '?')} {_key_input(tu.get('input'))} → {outcome}".replace("  ", " "))
    if len(span.tool_uses) > _MAX_LINES:
        lines.append(f"- … and {len(span.tool_uses) - _MAX_LINES} more call(s)")
    first = span.uuids[0]
    return [Message(role="assistant", content=[{"type": "text", "text": "\n".join(lines)}],
                    uuid=f"collapse-a-{first}", id=f"collapse-{first}"),
            Message(role="user", content=[{"type": "text", "text": (
                "[The full results of those tool calls were collapsed. Run the tools again if the "
                "details are needed.]")}], uuid=f"collapse-u-{first}", is_meta=True)]


def find_exchanges(messages: list[Message], *, keep_recent_turns: int) -> list[tuple[int, int]]:
    """(start, end) index ranges of complete tool exchanges older than the recent turns."""
    turn_starts = [i for i, m in enumerate(messages)
                   if m.role == "assistant" and (i == 0 or messages[i - 1].role != "assistant")]
    # Never the latest turn, whatever keep_recent_turns says.
    keep = max(1, keep_recent_turns)
    limit = turn_starts[-keep] if len(turn_starts) >= keep else 0
    out: list[tuple[int, int]] = []
    i = 0
    while i < limit:
        m = messages[i]
        if m.role != "assistant":
            i += 1
            continue
        j, ok = i, True
        ids: set[Any] = set()   # tool_use ids as the messages hold them
        while j < len(messages) and messages[j].role == "assistant":
            am = messages[j]
            if am.is_api_error or any(b.get("type") not in _FOLDABLE_ASSISTANT_BLOCKS for b in am.content):
                ok = False
            ids.update(b.get("id") for b in am.content if b.get("type") == "tool_use")
            j += 1
        pending = set(ids)
        while ok and pending and j < limit and messages[j].role == "user":
            blocks = messages[j].content
            if not blocks or any(b.get("type") != "tool_result" or b.get("tool_use_id") not in pending
                                 for b in blocks):
                break
            pending -= {b.get("tool_use_id") for b in blocks}
            j += 1
        if ok and ids and not pending:
            out.append((i, j - 1))
        i = max(j, i + 1)
    return out


def _span(messages: list[Message], start: int, end: int) -> Span:
    members = messages[start:end + 1]
    return Span(uuids=tuple(m.uuid for m in members),
                tool_uses=tuple(b for m in members if m.role == "assistant" for b in m.content
                                if b.get("type") == "tool_use"),
                results=tuple(b for m in members if m.role == "user" for b in m.content),
                notes=tuple(b["text"] for m in members if m.role == "assistant" for b in m.content
                            if b.get("type") == "text" and (b.get("text") or "").strip()))


class ContextCollapse:
    """Stages foldable spans, commits them under pressure (or all at once on overflow), projects."""

    def __init__(self, *, keep_recent_turns: int = 4, commit_ratio: float | None = 0.85,
                 max_exchanges_per_span: int = 20, counter: TokenCounter | None = None) -> None:
        self.keep_recent_turns = keep_recent_turns
        self.commit_ratio = commit_ratio
        self.max_exchanges_per_span = max_exchanges_per_span
        self.counter = counter or TokenCounter()
        self._pairs: dict[str, list[Message]] = {}     # first member uuid → summary pair
        self._spans: dict[str, tuple[str, ...]] = {}   # first member uuid → member uuids
        self._member_of: dict[str, str] = {}           # member uuid → first member uuid

    @property
    def committed_count(self) -> int:
        return len(self._spans)

    def stage(self, messages: list[Message], *, keep_recent_turns: int | None = None) -> list[Span]:
        """Spans that could be folded now, oldest first (not yet committed)."""
        keep = self.keep_recent_turns if keep_recent_turns is None else keep_recent_turns
        spans: list[Span] = []
        run: list[tuple[int, int]] = []

        def flush() -> None:
            if run:
                spans.append(_span(messages, run[0][0], run[-1][1]))
                run.clear()

        for start, end in find_exchanges(messages, keep_recent_turns=keep):
            if any(m.uuid in self._member_of for m in messages[start:end + 1]):
                flush()
                continue
            if run and (start != run[-1][1] + 1 or len(run) >= self.max_exchanges_per_span):
                flush()
            run.append((start, end))
        flush()
        return spans

    def commit(self, span: Span) -> None:
        first = span.uuids[0]
        self._spans[first] = span.uuids
        self._pairs[first] = summary_pair(span)
        for u in span.uuids:
            self._member_of[u] = first

    def project(self, messages: list[Message]) -> list[Message]:
        """Committed spans folded into their summary pairs; anything else passes through."""
        if not self._member_of:
            return list(messages)
        present: dict[str, int] = {}
        for m in messages:
            first = self._member_of.get(m.uuid)
            if first is not None:
                present[first] = present.get(first, 0) + 1
        complete = {f for f, n in present.items() if n == len(self._spans[f])}
        if not complete:
            return list(messages)
        out: list[Message] = []
        for m in messages:
            first = self._member_of.get(m.uuid)
            if first is None or first not in complete:
                out.append(m)
            elif m.uuid == first:
                out.extend(self._pairs[first])
        return out

    def apply_collapses_if_needed(self, messages: list[Message], *, token_estimate: int | None = None,
                                  model: str | None = None) -> list[Message]:
        """The projection; first commits staged spans, oldest first, while over the commit threshold."""
        if token_estimate is not None and model is not None and self.commit_ratio is not None:
            threshold = (context_window(model) - output_reserve(model)) * self.commit_ratio
            if token_estimate > threshold:
                for span in self.stage(messages):
                    if token_estimate <= threshold:
                        break
                    members = [m for m in messages if m.uuid in set(span.uuids)]
                    token_estimate -= (self.counter.estimate(members)
                                       - self.counter.estimate(summary_pair(span)))
                    self.commit(span)
        return self.project(messages)

    def recover_from_overflow(self, messages: list[Message]) -> DrainResult:
        """Commit every span but the latest turn at once (the cheap prompt-too-long recovery)."""
        spans = self.stage(messages, keep_recent_turns=1)
        for span in spans:
            self.commit(span)
        return DrainResult(committed=len(spans), messages=self.project(messages) if spans else list(messages))
