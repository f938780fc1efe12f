"""The pre-send size check: a request that cannot fit the model's window is refused unsent, saying why.

`context_overflow` measures the history (incrementally: per-turn work must not grow with the
session), the system prompt and the CLAUDE.md user context in characters, and compares a low
token estimate with the window. A refusal is a `ContextOverflowError` the loop treats as a
prompt-too-long answer (spec 004 §11.1–§11.2: collapse drain, then reactive compaction) unless
no recovery could help: the system prompt and the latest user input survive any compaction, so
when they alone overflow, recovering would only spend a summary request. Its message names what
is big — the latest input, the system prompt and instructions, or the history and its largest
block — and suggests shortening the input only when the input is what is big.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeloop.messages import Message, extends
from codeloop.providers.errors import ContextOverflowError

CHARS_PER_TOKEN = 4   # a low estimate of tokens for prose and code: it never over-refuses


_SKIPPED = frozenset(("source", "signature"))   # images: own budget; signatures are not text


def _chars(obj: Any) -> int:
    """The length of every string in `obj` (dicts' values, lists' items, nested), keys aside.

    One loop over a stack rather than a generator per level: a resumed session's first request
    measures every block of its history here."""
    if isinstance(obj, str):
        return len(obj)
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            values = [v for k, v in o.items() if k not in _SKIPPED]
        elif isinstance(o, list):
            values = o
        else:
            continue
        for v in values:
            if isinstance(v, str):
                total += len(v)
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return total


# Per-turn work must not grow with the session: id(first message) → (the history measured, its
# chars). A history that extends the one measured last time (the same objects; the pipeline hands
# over new messages rather than editing old ones) is measured in its new messages only. A few
# conversations at once; a rewound or compacted history is measured afresh.
_sums: dict[int, tuple[list[Message], int]] = {}


def _history_chars(messages: list[Message]) -> int:
    if not messages:
        return 0
    hit = _sums.pop(id(messages[0]), None)
    start, total = (len(hit[0]), hit[1]) if hit is not None and extends(hit[0], messages) else (0, 0)
    hit = None   # a rewound history's old list need not outlive this call
    total += sum(_chars(messages[i].content) for i in range(start, len(messages)))
    while len(_sums) >= 8:
        del _sums[next(iter(_sums))]
    _sums[id(messages[0])] = (list(messages), total)
    return total


def _block_chars(block: dict[str, Any]) -> int:
    """A block's own size as a person would count it: the text, the tool output, the tool input."""
    kind = block.get("type")
    if kind == "text":
        return len(block.get("text") or "")
    if kind == "tool_result":
        return _chars(block.get("content"))
    if kind == "tool_use":
        return _chars(block.get("input"))
    return _chars(block)


class RequestTooLong(ContextOverflowError):
    """A request refused before it was sent because it cannot fit the model's window."""

    def __init__(self, message: str, *, recoverable: bool) -> None:
        super().__init__(message)
        self.message = message
        # False when what compaction keeps (system prompt, latest input) alone overflows
        self.recoverable = recoverable


@dataclass
class _Part:
    """One part of a request that may be shortened: what it is and how many characters it holds."""
    what: str
    chars: int


def _latest_input_index(messages: list[Message]) -> int | None:
    """The user's latest own words: the last non-meta user message with text and no tool result."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and not m.is_meta and any(b.get("type") == "text" for b in m.content) \
                and not any(b.get("type") == "tool_result" for b in m.content):
            return i
    return None


def _largest_block(messages: list[Message], skip: int | None) -> _Part | None:
    """The single biggest content block of the history (a tool result, a response, an attachment)."""
    names = {b.get("id"): b.get("name") for m in messages if m.role == "assistant"
             for b in m.content if b.get("type") == "tool_use"}
    best: _Part | None = None
    for i, m in enumerate(messages):
        if i == skip:
            continue
        for b in m.content:
            size = _block_chars(b)
            if best is not None and size <= best.chars:
                continue
            kind = b.get("type")
            if kind == "tool_result":
                tool = names.get(b.get("tool_use_id")) or "a tool"
                what = f"the result of {tool} (tool_use {b.get('tool_use_id')}, message {i + 1})"
            elif m.role == "assistant":
                what = f"a model response (message {i + 1})"
            elif m.is_meta:
                what = f"an attachment or injected context (message {i + 1})"
            else:
                what = f"an earlier user message (message {i + 1})"
            best = _Part(what, size)
    return best


def context_overflow(model: str, messages: list[Message], system_prompt: list[str],
                     user_context: dict[str, str] | None = None) -> RequestTooLong | None:
    """None when the request fits `model`'s window; else the refusal, naming what is big."""
    from codeloop.providers.models import context_window

    fixed = sum(len(s) for s in system_prompt) + sum(len(v) for v in (user_context or {}).values())
    history = _history_chars(messages)
    chars = history + fixed
    window = context_window(model)
    tokens = chars // CHARS_PER_TOKEN
    if tokens <= window:
        return None
    return _refusal(model, messages, fixed, history, window)


def _refusal(model: str, messages: list[Message], fixed: int, history: int, window: int) -> RequestTooLong:
    # Only here, on the way to a refusal, is the history looked at message by message.
    at = _latest_input_index(messages)
    latest = sum(_block_chars(b) for b in messages[at].content) if at is not None else 0
    total = fixed + history
    head = (f"Prompt is too long for {model}: about {total // CHARS_PER_TOKEN:,} tokens ({total:,} characters) "
            f"against a context window of {window:,} tokens: nothing was sent and nothing was cut.")

    def size(n: int) -> str:
        return f"{n:,} characters, about {n // CHARS_PER_TOKEN:,} tokens"

    recoverable = (fixed + latest) // CHARS_PER_TOKEN <= window
    if latest >= fixed and latest >= history - latest:
        body = (f" Most of it is the latest user input ({size(latest)}): shorten the input, or save it to a "
                "file and ask about the file instead.")
    elif fixed >= history - latest:
        body = (f" Most of it is the system prompt and CLAUDE.md instructions ({size(fixed)}), which every "
                "request carries: trim CLAUDE.md, the output style or the appended system prompt.")
    else:
        big = _largest_block(messages, at)
        largest = f"; the largest part is {big.what}, {size(big.chars)}" if big is not None else ""
        body = (f" Most of it is the conversation history ({size(history - latest)} over {len(messages)} "
                f"messages{largest}): /compact summarises it and /clear starts afresh; smaller pieces (a file "
                "read in parts, a narrower search) keep it from growing back.")
    return RequestTooLong(head + body, recoverable=recoverable)
