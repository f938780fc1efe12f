"""The five pre-query stages (spec 004 §8), in order, and `ContextPipeline` which owns their state.

1. `apply_tool_result_budget` — aggregate tool output over a budget → preview + saved file
2. `snip`                     — oversized tool output (and model text) trimmed to head + tail,
                                 structure kept; the user's own words are never cut
3. `microcompact`             — old tool results cleared to a stub, keyed by tool_use_id
4. context collapse           — read-time folding of staged spans (see collapse.py)
5. `autocompact`              — summary compaction near the model's limit (autocompact.py)

Every stage is a pure function of (messages, state): input messages are never mutated and a
decision, once taken for a tool_use_id, is replayed identically on every later call, so the
prompt prefix stays byte-stable for prompt caching. Stage 1 runs before 3 because microcompact
works by tool_use_id without looking at content; the two compose cleanly.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

from codeloop.context.autocompact import (CompactTracking, autocompact, autocompact_ratio,  # noqa: F401
                                          autocompact_threshold, should_autocompact)
from codeloop.context.collapse import ContextCollapse
from codeloop.context.scan import CLEARED_STUB, facts, result_chars as _result_chars, trim
from codeloop.context.tokens import TokenCounter, find_last_usage
from codeloop.loop.recovery import CompactOutcome
from codeloop.messages import Message

PREVIEW_CHARS = 2_000
DEFAULT_TOOL_RESULT_BUDGET_CHARS = 300_000
DEFAULT_MAX_BLOCK_CHARS = 120_000
DEFAULT_KEEP_RECENT_TURNS = 8
CLEARABLE_TOOLS = frozenset({"Read", "Bash", "Grep", "Glob", "WebFetch", "WebSearch", "Edit", "Write",
                             "NotebookEdit", "LS"})
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


# -- shared helpers -------------------------------------------------------------------------------
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


# -- 1. tool result budget ------------------------------------------------------------------------
def record_replacement(tool_use_id: str, replacement: str) -> dict[str, Any]:
    """The transcript entry that lets a resumed session replay a replacement exactly."""
    return {"type": "content-replacement", "toolUseId": tool_use_id, "replacement": replacement}


@dataclass
class ContentReplacementState:
    replacements: dict[str, str] = field(default_factory=dict)   # tool_use_id → replacement text
    pending_records: list[dict[str, Any]] = field(default_factory=list)  # new, not yet persisted
    memo: dict[str, tuple[Message, Message, tuple[str, ...]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_entries(cls, entries: Iterable[dict[str, Any]]) -> "ContentReplacementState":
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
    path = Path(session_dir) / "tool-results" / f"{_UNSAFE_ID.sub('_', tool_use_id)}.txt"
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


# -- 2. snip ---------------------------------------------------------------------------------------
def snip_text(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    # The marker counts against the limit, so a snipped block is never snipped again (stable).
    room = max(0, max_chars - 64)
    head = room * 2 // 3
    tail = room - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n\n[... {cut:,} characters snipped ...]\n\n{text[len(text) - tail:]}"


def _snip_blocks(blocks: list[dict[str, Any]], max_chars: int, *, user_text: bool = True) -> list[dict[str, Any]] | None:
    out, changed = [], False
    for b in blocks:
        kind = b.get("type")
        if kind == "text" and user_text and len(b.get("text") or "") > max_chars:
            b, changed = {**b, "text": snip_text(b["text"], max_chars)}, True
        elif kind == "tool_result":
            inner = b.get("content")
            if isinstance(inner, str) and len(inner) > max_chars:
                b, changed = {**b, "content": snip_text(inner, max_chars)}, True
            elif isinstance(inner, list):
                new = _snip_blocks(inner, max_chars)
                if new is not None:
                    b, changed = {**b, "content": new}, True
        out.append(b)
    return out if changed else None


def snip(messages: list[Message], *, max_block_chars: int = DEFAULT_MAX_BLOCK_CHARS) -> list[Message]:
    """Trim huge tool_result strings and model text blocks to head + tail; same messages, same blocks.

    A user message's own text (what the person typed or piped in) is never trimmed: cutting the
    middle of a prompt silently changes the question. A prompt too large for the model is
    refused before it is sent instead (loop/model_call)."""
    out = []
    for m in messages:
        memo, key = facts(m).snipped, (max_block_chars, m.role != "user")
        if key not in memo:   # the same message object always snips the same way
            new = _snip_blocks(m.content, max_block_chars, user_text=key[1])
            memo[key] = m if new is None else replace(m, content=new)
        out.append(memo[key])
    return out


# -- 3. microcompact -------------------------------------------------------------------------------
@dataclass
class MicrocompactState:
    cleared: set[str] = field(default_factory=set)   # tool_use_ids whose results stay cleared
    memo: dict[str, tuple[Message, Message, tuple[str, ...]]] = field(default_factory=dict, repr=False, compare=False)


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


def _new_prompt_overflows(messages: list[Message], model: str) -> bool:
    """The newest message is the user's own text and alone cannot fit the model's window."""
    from codeloop.providers.models import context_window

    if not messages or messages[-1].role != "user":
        return False
    chars = sum(len(b.get("text") or "") for b in messages[-1].content if b.get("type") == "text")
    return chars // 4 > context_window(model)


# -- the pipeline ----------------------------------------------------------------------------------
@dataclass
class PipelineConfig:
    budget_chars: int = DEFAULT_TOOL_RESULT_BUDGET_CHARS
    max_block_chars: int = DEFAULT_MAX_BLOCK_CHARS
    keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS
    microcompact_min_chars: int = 20_000
    clearable_tools: frozenset[str] = CLEARABLE_TOOLS
    threshold_ratio: float | None = None      # None: CODELOOP_AUTOCOMPACT_PCT or 0.92
    output_reserve: int | None = None         # None: min(model max output, 20k)


@dataclass
class PipelineResult:
    messages: list[Message]
    compacted: CompactOutcome | None = None
    replacements: list[dict[str, Any]] = field(default_factory=list)   # content-replacement entries
    token_estimate: int = 0


class ContextPipeline:
    """Runs the five stages in order and owns their state for one conversation."""

    def __init__(self, *, compactor: Any = None, session_dir: Path | None = None,
                 exempt_tools: Iterable[str] = (), collapse: ContextCollapse | None = None,
                 counter: TokenCounter | None = None, config: PipelineConfig | None = None,
                 replacement_state: ContentReplacementState | None = None,
                 microcompact_state: MicrocompactState | None = None,
                 tracking: CompactTracking | None = None,
                 count_tokens: Callable[[list[Message]], Awaitable[int | None]] | None = None) -> None:
        self.compactor = compactor
        # Exact counting (/v1/messages/count_tokens) is asked only when the estimate says
        # "compact now", so an over-estimate never costs a needless summary.
        self.count_tokens = count_tokens
        self.session_dir = session_dir
        self.exempt_tools = set(exempt_tools)
        self.collapse = collapse
        self.counter = counter or TokenCounter()
        self.config = config or PipelineConfig()
        self.replacements = replacement_state or ContentReplacementState()
        self.microcompact_state = microcompact_state or MicrocompactState()
        self.tracking = tracking or CompactTracking()

    @classmethod
    def exempt_from_tools(cls, tools: Iterable[Any]) -> set[str]:
        """Names of tools with an unbounded max result size (math.inf)."""
        return {t.name for t in tools if getattr(t, "max_result_chars", 0) == float("inf")}

    async def run(self, messages: list[Message], *, model: str, last_usage: dict[str, Any] | None = None,
                  last_usage_index: int | None = None, tool_names: dict[str, str] | None = None,
                  **compact_kwargs: Any) -> PipelineResult:
        cfg = self.config
        trim(len(messages))
        msgs = apply_tool_result_budget(messages, self.replacements, session_dir=self.session_dir,
                                        budget_chars=cfg.budget_chars, exempt_tools=self.exempt_tools,
                                        tool_names=tool_names)
        msgs = snip(msgs, max_block_chars=cfg.max_block_chars)
        msgs = microcompact(msgs, keep_recent_turns=cfg.keep_recent_turns, state=self.microcompact_state,
                            clearable=cfg.clearable_tools, min_clear_chars=cfg.microcompact_min_chars)
        if last_usage is None or last_usage_index is None:
            found = find_last_usage(msgs)
            last_usage_index, last_usage = found if found else (None, None)
        # Stages 1–3 keep indices, so the usage index still points at the same response. The
        # figure is an upper bound: the usage predates whatever those stages just shrank.
        estimate = self.counter.estimate_next(msgs, last_usage_index=last_usage_index, last_usage=last_usage)
        if self.collapse is not None:
            folded = self.collapse.apply_collapses_if_needed(msgs, token_estimate=estimate, model=model)
            if len(folded) != len(msgs):
                estimate -= max(0, self.counter.estimate(msgs) - self.counter.estimate(folded))
            msgs = folded
        replacements = self.replacements.drain_records()
        if _new_prompt_overflows(msgs, model):
            # Summarising would cut the user's new prompt itself; the model call refuses it whole.
            return PipelineResult(messages=msgs, replacements=replacements, token_estimate=estimate)
        if self.count_tokens is not None and self.compactor is not None and should_autocompact(
                estimate, model, threshold_ratio=cfg.threshold_ratio, output_reserve=cfg.output_reserve):
            exact = await self.count_tokens(msgs)
            if exact is not None:
                estimate = exact
        compacted = await autocompact(msgs, self.compactor, self.tracking, token_estimate=estimate, model=model,
                                      threshold_ratio=cfg.threshold_ratio, output_reserve=cfg.output_reserve,
                                      **compact_kwargs)
        if compacted is not None:
            # Old tool_use_ids are gone from the history; their decisions need not be kept.
            self.microcompact_state.cleared.clear()
            self.microcompact_state.memo.clear()
            self.replacements.memo.clear()
            msgs = compacted.messages
            estimate = self.counter.estimate(msgs)
        return PipelineResult(messages=msgs, compacted=compacted, replacements=replacements,
                              token_estimate=estimate)
