"""Token accounting: what the next request will cost, grounded in what the API last reported.

Ground truth is the `usage` of the last response: input + cache writes + cache reads + output
tokens cover everything sent up to and including that response. Only what was appended after
it is estimated locally, so estimation error never accumulates over a long session.

The local estimate is calibrated on characters per token. Measured with count_tokens on
Claude's tokenizer: English prose and source code come out at ~3.5–4.2 characters a token
(3.8 is used), JSON (tool inputs, structured tool output) is denser at ~3.0–3.4 (3.2 is
used) because of quotes, braces and short keys. Images cost (w·h)/750 tokens, capped by the
API's resizing at ~1,600, so a fixed 1,600 is a safe upper bound. `observe(chars, tokens)`
folds real measurements into the ratio (a running total weighted against the prior), so a
session that is mostly CJK text or minified JSON converges on its own figure.

`count_tokens_api` (from providers.count_tokens, re-exported here) asks `POST
/v1/messages/count_tokens` for an exact figure and falls back to the estimate on any error
(providers without the endpoint, offline, rate limits).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from codeloop.messages import Message
from codeloop.providers.count_tokens import count_tokens_api, count_tokens_body  # noqa: F401 (re-exported)
from codeloop.providers.models import context_window

CHARS_PER_TOKEN = 3.8
JSON_CHARS_PER_TOKEN = 3.2
IMAGE_TOKENS = 1_600
DOCUMENT_TOKENS = 3_000
# Role markers and block framing the API adds around each message.
MESSAGE_OVERHEAD_TOKENS = 4
# How many tokens of evidence the prior is worth: a few observations should not swing it.
_PRIOR_WEIGHT_TOKENS = 20_000


def usage_total(usage: Mapping[str, Any] | None) -> int:
    """Tokens a response's usage accounts for: its whole prompt (cached or not) plus its output."""
    if not usage:
        return 0
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                  "cache_read_input_tokens", "output_tokens"))


def find_last_usage(messages: list[Message]) -> tuple[int, dict[str, Any]] | None:
    """(index, usage) of the last assistant message that carries API usage."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "assistant" and m.usage and not m.is_api_error:
            return i, m.usage
    return None


class TokenCounter:
    """Estimates token counts locally, re-calibrated from observed (chars, tokens) pairs."""

    def __init__(self, chars_per_token: float = CHARS_PER_TOKEN,
                 json_chars_per_token: float = JSON_CHARS_PER_TOKEN) -> None:
        self._prior = chars_per_token
        self._json_factor = json_chars_per_token / chars_per_token
        self._chars = 0.0
        self._tokens = 0.0

    @property
    def chars_per_token(self) -> float:
        return ((self._prior * _PRIOR_WEIGHT_TOKENS + self._chars)
                / (_PRIOR_WEIGHT_TOKENS + self._tokens))

    @property
    def json_chars_per_token(self) -> float:
        return self.chars_per_token * self._json_factor

    def observe(self, chars: int, tokens: int) -> None:
        """Fold in a measurement (e.g. count_tokens on a known text, or a usage delta)."""
        if chars > 0 and tokens > 0:
            self._chars += chars
            self._tokens += tokens

    # -- local estimates ------------------------------------------------------------------------
    def estimate_text(self, text: str) -> int:
        return int(len(text) / self.chars_per_token + 0.5)

    def estimate_blocks(self, blocks: list[dict[str, Any]] | str) -> int:
        text_chars, json_chars, fixed = _measure(blocks)
        return int(text_chars / self.chars_per_token + json_chars / self.json_chars_per_token + 0.5) + fixed

    def estimate_message(self, msg: Message) -> int:
        return self.estimate_blocks(msg.content) + MESSAGE_OVERHEAD_TOKENS

    def estimate(self, messages: list[Message]) -> int:
        text_chars = json_chars = fixed = 0
        for m in messages:
            t, j, f = _measure(m.content)
            text_chars += t
            json_chars += j
            fixed += f + MESSAGE_OVERHEAD_TOKENS
        return int(text_chars / self.chars_per_token + json_chars / self.json_chars_per_token + 0.5) + fixed

    def estimate_next(self, messages: list[Message], *, last_usage_index: int | None = None,
                      last_usage: Mapping[str, Any] | None = None) -> int:
        """Tokens the next request will carry: last known total + estimate of what came after.

        Without arguments the last usage is looked up in `messages`. Blocks of the same response
        that follow the usage-carrying message (same `id`) are already counted by it.
        """
        if last_usage_index is None or last_usage is None:
            found = find_last_usage(messages)
            if found is None:
                return self.estimate(messages)
            last_usage_index, last_usage = found
        if not 0 <= last_usage_index < len(messages):
            return self.estimate(messages)
        start = last_usage_index + 1
        same_id = messages[last_usage_index].id
        while (same_id is not None and start < len(messages) and messages[start].role == "assistant"
               and messages[start].id == same_id):
            start += 1
        return usage_total(last_usage) + self.estimate(messages[start:])

    def fraction_used(self, tokens: int, model: str) -> float:
        return tokens / max(1, context_window(model))


def _measure(content: list[dict[str, Any]] | str) -> tuple[int, int, int]:
    """(prose/code chars, JSON chars, fixed tokens) of message content."""
    if isinstance(content, str):
        return len(content), 0, 0
    text_chars = json_chars = fixed = 0
    for b in content:
        kind = b.get("type")
        if kind == "text":
            text_chars += len(b.get("text") or "")
        elif kind == "tool_result":
            inner = b.get("content")
            if isinstance(inner, str):
                # Tool output that looks like JSON tokenises like JSON.
                if inner[:1] in ("{", "["):
                    json_chars += len(inner)
                else:
                    text_chars += len(inner)
            elif isinstance(inner, list):
                t, j, f = _measure(inner)
                text_chars += t
                json_chars += j
                fixed += f
            fixed += 6
        elif kind == "tool_use":
            json_chars += len(b.get("name") or "") + len(json.dumps(b.get("input") or {}, ensure_ascii=False))
            fixed += 8
        elif kind == "thinking":
            text_chars += len(b.get("thinking") or "")
        elif kind == "redacted_thinking":
            text_chars += len(b.get("data") or "") // 2
        elif kind == "image":
            fixed += IMAGE_TOKENS
        elif kind == "document":
            fixed += DOCUMENT_TOKENS
        else:
            json_chars += len(json.dumps(b, ensure_ascii=False, default=str))
    return text_chars, json_chars, fixed
