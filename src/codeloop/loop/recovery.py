"""The seams and messages of the six recovery transitions (spec 004 §11).

The loop (`query.py`) decides *when* each transition fires, in priority order; the objects
here do the work: context collapse and reactive compaction (the context package implements
them), stop hooks (the hooks package), and the messages the recoveries inject.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from codeloop.hooks.stop import StopHookOutcome
from codeloop.messages import Message, api_error_message, user_message
from codeloop.providers.errors import APIStatusError, ProviderError

MAX_OUTPUT_TOKENS_RECOVERY_LIMIT = 3
DEFAULT_STOP_HOOK_BLOCK_CAP = 8
MAX_OUTPUT_TOKENS_RECOVERY_TEXT = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces.")


@dataclass
class DrainResult:
    """Messages after committing collapses to recover from a context overflow."""
    committed: int
    messages: list[Message]


class ContextCollapse(Protocol):
    def apply_collapses_if_needed(self, messages: list[Message]) -> list[Message]: ...

    def recover_from_overflow(self, messages: list[Message]) -> DrainResult: ...


@dataclass
class CompactOutcome:
    """The history after a compaction, with its token count before and its summary."""
    messages: list[Message]          # the post-compact history
    pre_tokens: int
    trigger: str = "auto"            # "auto" | "manual"
    summary: str = ""


class ReactiveCompact(Protocol):
    async def try_reactive_compact(self, *, has_attempted: bool, messages: list[Message],
                                   model: str) -> CompactOutcome | None: ...


class StopHooks(Protocol):
    async def run(self, messages: list[Message], *, stop_hook_active: bool) -> StopHookOutcome: ...


def recovery_message() -> Message:
    return user_message(MAX_OUTPUT_TOKENS_RECOVERY_TEXT, is_meta=True)


def max_output_tokens_error(limit: int) -> Message:
    return api_error_message(
        f"API Error: Claude's response exceeded the {limit} output token maximum. To configure this "
        "behavior, set the CODELOOP_MAX_OUTPUT_TOKENS environment variable.")


def withheld_kind(error: ProviderError | None) -> str | None:
    """'prompt_too_long' | 'media' for the errors the loop holds back while it tries to recover."""
    if isinstance(error, APIStatusError):
        if error.is_prompt_too_long:
            return "prompt_too_long"
        if error.is_media_size:
            return "media"
    return None


def strip_thinking(messages: list[Message]) -> list[Message]:
    """Thinking signatures are bound to the model that made them: drop them on fallback."""
    out = []
    for m in messages:
        if m.role == "assistant" and any(b.get("type") in ("thinking", "redacted_thinking") for b in m.content):
            kept = [b for b in m.content if b.get("type") not in ("thinking", "redacted_thinking")]
            if not kept:
                continue
            m = Message(**{**m.__dict__, "content": kept})
        out.append(m)
    return out
