"""Loop state (spec 004 §7.1), terminal reasons and transitions.

`State` is immutable: each `continue` in the loop builds the next one with `replace`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import Enum
from typing import Any

from codeloop.events import TerminalReason  # noqa: F401  (re-exported: the loop's terminal vocabulary)
from codeloop.messages import Message


class Transition(str, Enum):
    NEXT_TURN = "next_turn"
    COLLAPSE_DRAIN_RETRY = "collapse_drain_retry"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"
    FALLBACK = "fallback"


@dataclass(frozen=True)
class AutoCompactTracking:
    compacted: bool = False
    turn_counter: int = 0
    turn_id: str = ""
    consecutive_failures: int = 0


@dataclass(frozen=True)
class State:
    messages: list[Message]
    tool_context: Any  # codeloop.tools.base.ToolContext (kept loose to avoid an import cycle)
    auto_compact_tracking: AutoCompactTracking | None = None
    max_output_tokens_recovery_count: int = 0
    has_attempted_reactive_compact: bool = False
    max_output_tokens_override: int | None = None
    pending_tool_use_summary: "asyncio.Task[Message | None] | None" = None
    stop_hook_active: bool | None = None
    stop_hook_blocks: int = 0            # consecutive stop-hook blocks, capped so a hook cannot loop forever
    turn_count: int = 1
    transition: Transition | None = None
