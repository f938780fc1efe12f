"""The seams and messages of the six recovery transitions (spec 004 §11).

The loop (`query.py`) decides *when* each transition fires, in priority order; the objects
here do the work: context collapse and reactive compaction (the context package implements
them), stop hooks (the hooks package, run through `run_stop_hooks` wherever a turn ends), and
the messages the recoveries inject.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal, Protocol, TYPE_CHECKING

from codeloop.events import Event, SystemEvent, Terminal, TerminalReason, UserEvent
from codeloop.messages import Message, api_error_message, user_message
from codeloop.providers.errors import APIStatusError, ContextOverflowError, ProviderError

if TYPE_CHECKING:   # the hooks package is loaded only when a session has Stop hooks
    from codeloop.hooks.stop import StopHookOutcome

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
    trigger: Literal["auto", "manual"] = "auto"
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
    """'prompt_too_long' | 'media' for the errors the loop holds back while it tries to recover.

    A request refused unsent for its size (loop.overflow) is a prompt-too-long answer, given
    before the API had to."""
    if isinstance(error, ContextOverflowError):
        return "prompt_too_long"
    if isinstance(error, APIStatusError):
        if error.is_prompt_too_long:
            return "prompt_too_long"
        if error.is_media_size:
            return "media"
    return None


def can_recover(error: ProviderError | None) -> bool:
    """False for a refusal no collapse or compaction can fix (what they keep alone overflows)."""
    return getattr(error, "recoverable", True)


def stop_hook_cap() -> int:
    value = os.environ.get("CODELOOP_STOP_HOOK_BLOCK_CAP", "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_STOP_HOOK_BLOCK_CAP


@dataclass
class StopVerdict:
    """What the Stop hooks decided at the end of a turn (§11.5), with the events to show first."""
    events: list[Event] = field(default_factory=list)
    terminal: Terminal | None = None         # the hooks ended the query
    blocking: list[Message] | None = None    # the model goes on with these (already among `events`)


async def run_stop_hooks(hooks: StopHooks | None, messages: list[Message], *, active: bool, blocks: int,
                         turn_count: int) -> StopVerdict:
    """Run the Stop hooks on a turn that is about to end. `blocks` counts the blocks in a row so
    far; past the cap (CODELOOP_STOP_HOOK_BLOCK_CAP) the turn ends so a hook cannot loop forever."""
    verdict = StopVerdict()
    if hooks is None:
        return verdict
    outcome = await hooks.run(messages, stop_hook_active=active)
    verdict.events += [SystemEvent("hook_warning", text, "warning") for text in outcome.system_messages]
    verdict.events += [SystemEvent("hook_error", text, "warning") for text in outcome.errors]
    if outcome.prevent_continuation:
        verdict.terminal = Terminal(TerminalReason.HOOK_STOPPED, turn_count, outcome.stop_reason)
    elif outcome.blocking_messages:
        if blocks + 1 > stop_hook_cap():
            verdict.events.append(SystemEvent("stop_hook_cap", f"Stop hooks blocked {stop_hook_cap()} times in a "
                                              "row; ending the turn so it cannot loop forever.", "warning"))
            verdict.terminal = Terminal(TerminalReason.HOOK_STOPPED, turn_count, "stop hook block cap reached")
        else:
            verdict.blocking = list(outcome.blocking_messages)
            verdict.events += [UserEvent(m) for m in verdict.blocking]
    return verdict


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
