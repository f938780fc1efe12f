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

Stages 1 (budget.py), 2 and 3 (microcompact.py) keep their previous call's input and output in
their state (rewrite.Reuse): a history that extends it by the same objects, with no new decision,
reuses the previous output for the prefix and looks only at the new messages, so a turn's work
does not grow with the session. The loop feeds this pipeline's output back in, which every stage
leaves as it is; anything else is a full pass, with the same result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codeloop.context.autocompact import (CompactTracking, autocompact, autocompact_ratio,  # noqa: F401
                                          autocompact_threshold, should_autocompact)
from codeloop.context.budget import (DEFAULT_TOOL_RESULT_BUDGET_CHARS, PREVIEW_CHARS,  # noqa: F401
                                     ContentReplacementState, apply_tool_result_budget, record_replacement,
                                     replacement_text)
from codeloop.context.collapse import ContextCollapse
from codeloop.context.microcompact import (CLEARABLE_TOOLS, DEFAULT_KEEP_RECENT_TURNS,  # noqa: F401
                                           MicrocompactState, microcompact)
from codeloop.context.rewrite import Reuse, tool_names_from  # noqa: F401
from codeloop.context.scan import CLEARED_STUB, facts, trim  # noqa: F401
from codeloop.context.tokens import TokenCounter, find_last_usage
from codeloop.events import SystemEvent
from codeloop.loop.recovery import CompactOutcome
from codeloop.messages import Message

DEFAULT_MAX_BLOCK_CHARS = 120_000


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


def _snip_blocks(blocks: list[dict[str, Any]], max_chars: int, *,
                 user_text: bool = True) -> list[dict[str, Any]] | None:
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


@dataclass
class SnipState:
    """What snip remembers between calls to reuse an unchanged prefix."""
    last: Reuse | None = None   # the previous call, for an unchanged prefix


def snip(messages: list[Message], *, max_block_chars: int = DEFAULT_MAX_BLOCK_CHARS,
         state: SnipState | None = None) -> list[Message]:
    """Trim huge tool_result strings and model text blocks to head + tail; same messages, same blocks.

    A user message's own text (what the person typed or piped in) is never trimmed: cutting the
    middle of a prompt silently changes the question. A prompt too large for the model is
    refused before it is sent instead (loop/model_call). Each message snips on its own, so with a
    `state` the previous output stands for an unchanged prefix and only the rest is looked at."""
    start = state.last.prefix(messages, max_block_chars) if state is not None and state.last is not None else 0
    out = list(state.last.out) if start and state is not None and state.last is not None else []
    if state is not None and not start:
        state.last = None   # the old lists go before a full pass builds new ones
    for i in range(start, len(messages)):
        m = messages[i]
        f, key = facts(m), (max_block_chars, m.role != "user")
        if f.snipped is None or f.snipped[0] != key:   # the same message object always snips the same way
            new = _snip_blocks(m.content, max_block_chars, user_text=key[1])
            f.snipped = (key, m if new is None else replace(m, content=new))
        out.append(f.snipped[1])
    if state is not None:
        state.last = Reuse(inp=list(messages), out=list(out), key=max_block_chars)
    return out


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
    """The context pipeline's limits and thresholds."""
    budget_chars: int = DEFAULT_TOOL_RESULT_BUDGET_CHARS
    max_block_chars: int = DEFAULT_MAX_BLOCK_CHARS
    keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS
    microcompact_min_chars: int = 20_000
    clearable_tools: frozenset[str] = CLEARABLE_TOOLS
    threshold_ratio: float | None = None      # None: CODELOOP_AUTOCOMPACT_PCT or 0.92
    output_reserve: int | None = None         # None: min(model max output, 20k)


@dataclass
class PipelineResult:
    """The messages the pipeline produced, with any compaction and replacement records."""
    messages: list[Message]
    compacted: CompactOutcome | None = None
    replacements: list[dict[str, Any]] = field(default_factory=list)   # content-replacement entries
    token_estimate: int = 0
    notices: list[SystemEvent] = field(default_factory=list)   # autocompact turned off or back on


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
        self.snip_state = SnipState()
        self.tracking = tracking or CompactTracking()
        # Every compaction the compactor makes — reactive and /compact too, which happen outside
        # this pipeline — re-arms the autocompact breaker and ends the stages' old decisions.
        listeners = getattr(compactor, "on_success", None)
        if listeners is not None:
            listeners.append(self.compacted)

    def compacted(self, outcome: CompactOutcome | None = None) -> None:
        """A compaction replaced the history: the breaker re-arms and old decisions are dropped."""
        self.tracking.succeeded()
        # Old tool_use_ids are gone from the history; their decisions need not be kept…
        self.microcompact_state.cleared.clear()
        self.microcompact_state.memo.clear()
        self.replacements.memo.clear()
        # … nor the old history itself: the next call is a full pass anyway.
        self.microcompact_state.last = self.replacements.last = self.snip_state.last = None

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
        msgs = snip(msgs, max_block_chars=cfg.max_block_chars, state=self.snip_state)
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
            return PipelineResult(messages=msgs, replacements=replacements, token_estimate=estimate,
                                  notices=self.tracking.drain_notices())
        if self.count_tokens is not None and self.compactor is not None and should_autocompact(
                estimate, model, threshold_ratio=cfg.threshold_ratio, output_reserve=cfg.output_reserve):
            exact = await self.count_tokens(msgs)
            if exact is not None:
                estimate = exact
        compacted = await autocompact(msgs, self.compactor, self.tracking, token_estimate=estimate, model=model,
                                      threshold_ratio=cfg.threshold_ratio, output_reserve=cfg.output_reserve,
                                      **compact_kwargs)
        if compacted is not None:
            self.compacted(compacted)   # (a Compactor has told us already; another compactor may not)
            msgs = compacted.messages
            estimate = self.counter.estimate(msgs)
        return PipelineResult(messages=msgs, compacted=compacted, replacements=replacements,
                              token_estimate=estimate, notices=self.tracking.drain_notices())
