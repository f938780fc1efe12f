"""Loop state (spec 004 §7.1), terminal reasons and transitions.

`State` is immutable: each `continue` in the loop builds the next one with `replace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from codeloop.events import TerminalReason  # noqa: F401  (re-exported: the loop's terminal vocabulary)
from codeloop.messages import Message
from codeloop.tools.base import ToolContext


class Transition(str, Enum):
    NEXT_TURN = "next_turn"
    COLLAPSE_DRAIN_RETRY = "collapse_drain_retry"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"


@dataclass(frozen=True)
class State:
    """The loop's state carried from one iteration to the next."""
    messages: list[Message]
    tool_context: ToolContext
    max_output_tokens_recovery_count: int = 0
    has_attempted_reactive_compact: bool = False
    max_output_tokens_override: int | None = None
    stop_hook_active: bool | None = None
    stop_hook_blocks: int = 0            # consecutive stop-hook blocks, capped so a hook cannot loop forever
    turn_count: int = 1
    transition: Transition | None = None
