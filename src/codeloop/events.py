"""The one event stream every front end consumes: REPL, print mode, transcript writer, library.

Events are frozen dataclasses with a `type` tag. `query()` yields them and ends with `Terminal`.
Each is one occurrence, compared by identity (`eq=False`: nothing compares events by value, and
start-up does not pay for generated comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from codeloop.messages import Message
from codeloop.usage import Usage


class TerminalReason(str, Enum):
    """Why a query ended (spec 004 §7): carried by `Terminal`, so it lives with the events."""
    COMPLETED = "completed"
    MAX_TURNS = "max_turns"
    ABORTED_STREAMING = "aborted_streaming"
    ABORTED_TOOLS = "aborted_tools"
    HOOK_STOPPED = "hook_stopped"
    API_ERROR = "api_error"   # as Claude Code names it (the SDK keys ResultError on it)
    PROMPT_TOO_LONG = "prompt_too_long"
    IMAGE_ERROR = "image_error"
    ENDED_BY_MODEL = "ended_by_model"
    BUDGET_EXCEEDED = "budget_exceeded"


@dataclass(frozen=True, eq=False)
class StreamEvent:
    """A raw Messages API stream event (message_start, content_block_delta, …)."""
    raw: dict[str, Any]
    type: Literal["stream_event"] = "stream_event"


@dataclass(frozen=True, eq=False)
class AssistantEvent:
    """An assistant message as the loop yields it."""
    message: Message
    type: Literal["assistant"] = "assistant"


@dataclass(frozen=True, eq=False)
class UserEvent:
    """A user message (a prompt or tool results) as the loop yields it."""
    message: Message
    type: Literal["user"] = "user"


@dataclass(frozen=True, eq=False)
class SystemEvent:
    """Warnings, retries, compact boundaries: `subtype` names which, `data` carries the fields."""
    subtype: str
    text: str = ""
    level: Literal["info", "warning", "error"] = "info"
    data: dict[str, Any] = field(default_factory=dict)
    type: Literal["system"] = "system"


@dataclass(frozen=True, eq=False)
class Tombstone:
    """Removes an already-yielded message (e.g. an orphaned partial response after fallback)."""
    message: Message
    type: Literal["tombstone"] = "tombstone"


@dataclass(frozen=True, eq=False)
class AttachmentEvent:
    """An attachment added to the conversation."""
    attachment: dict[str, Any]
    type: Literal["attachment"] = "attachment"


@dataclass(frozen=True, eq=False)
class ApiCallEvent:
    """One completed model call: what it cost and how long it took."""
    model: str
    usage: Usage
    duration_ms: float
    stop_reason: str | None
    type: Literal["api_call"] = "api_call"


@dataclass(frozen=True, eq=False)
class PermissionDenied:
    """A tool call that permission checks refused."""
    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any]
    type: Literal["permission_denied"] = "permission_denied"


@dataclass(frozen=True, eq=False)
class CompactBoundary:
    """History was compacted: `messages` replace everything before this point."""
    trigger: Literal["auto", "manual"]
    pre_tokens: int
    messages: list[Message]
    type: Literal["compact_boundary"] = "compact_boundary"


@dataclass(frozen=True, eq=False)
class TranscriptEntry:
    """A record the loop wants kept in the transcript (e.g. a tool-result replacement)."""
    entry: dict[str, Any]
    type: Literal["transcript_entry"] = "transcript_entry"


@dataclass(frozen=True, eq=False)
class Terminal:
    """The end of a query: why it stopped and after how many turns."""
    reason: TerminalReason
    turn_count: int = 0
    error: str | None = None
    type: Literal["terminal"] = "terminal"


Event = (StreamEvent | AssistantEvent | UserEvent | SystemEvent | Tombstone | AttachmentEvent
         | ApiCallEvent | PermissionDenied | CompactBoundary | TranscriptEntry | Terminal)
