"""The QueryEngine's vocabulary (spec 001): its config, stop reasons, slash commands and results.

Kept apart from the engine itself so the shapes a library user sees read on one page.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.events import TerminalReason

FORMAT_VERSION = 1
ENGINE_FILE = "engine.json"


class StopReason(str, Enum):
    COMPLETED = "completed"
    MAX_TURNS_REACHED = "max_turns_reached"
    MAX_BUDGET_REACHED = "max_budget_reached"
    ENDED_BY_MODEL = "ended_by_model"
    INTERRUPTED = "interrupted"
    STRUCTURED_OUTPUT_FAILED = "max_structured_output_retries"
    ERROR = "error"


class SlashCommand(str, Enum):
    """Slash commands the engine recognises at the start of a prompt (and runs itself)."""
    COMPACT = "/compact"


TERMINAL_TO_STOP = {TerminalReason.COMPLETED: StopReason.COMPLETED,
                     TerminalReason.MAX_TURNS: StopReason.MAX_TURNS_REACHED,
                     TerminalReason.ENDED_BY_MODEL: StopReason.ENDED_BY_MODEL,
                     TerminalReason.ABORTED_STREAMING: StopReason.INTERRUPTED,
                     TerminalReason.ABORTED_TOOLS: StopReason.INTERRUPTED}


class EngineError(RuntimeError):
    """Misuse of the engine or an unreadable saved session."""


@dataclass(frozen=True)
class QueryEngineConfig:
    """How the query engine runs: turn and token limits, model, tools and output form."""
    max_turns: int = 8                        # prompts per session (hard stop)
    max_budget_tokens: int | None = None      # input + output tokens, not cache (soft stop); None: unlimited
    compact_after_turns: int | None = 12      # summarise the history every N prompts; None: never
    structured_output: bool = False           # the answer must be JSON (matching json_schema if given)
    structured_retry_limit: int = 2
    json_schema: dict[str, Any] | None = None
    model: str | None = None                  # id or alias; default $ANTHROPIC_MODEL or the built-in default
    tools: tuple[str, ...] | None = None      # names of the tools to offer; None: all built-ins
    allowed_tools: tuple[str, ...] = ()       # permission rules: allowed without asking
    disallowed_tools: tuple[str, ...] = ()
    permission_mode: str = "default"
    cwd: str | Path | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    loop_max_turns: int | None = None         # model calls per prompt (the loop's own max_turns)
    persist: bool = True


@dataclass(frozen=True)
class UsageSummary:
    """Token counts and cost of a turn or a session."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens + self.output_tokens

    @classmethod
    def of(cls, conv: Any) -> UsageSummary:
        """From a session.conversation.Conversation's totals."""
        return cls(**conv.usage.to_dict(), cost_usd=round(conv.cost_usd, 8))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PermissionDenial:
    """A tool call that was denied permission."""
    tool_name: str
    tool_use_id: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> PermissionDenial:
        return cls(str(r.get("tool_name") or ""), str(r.get("tool_use_id") or ""), dict(r.get("tool_input") or {}))


@dataclass(frozen=True)
class TurnResult:
    """What one prompt to the engine produced: output, matches, denials and usage."""
    prompt: str
    output: str
    matched_commands: tuple[str, ...]
    matched_tools: tuple[str, ...]
    permission_denials: tuple[PermissionDenial, ...]
    usage: UsageSummary
    stop_reason: str
    structured_output: Any = None


def match_commands(prompt: str) -> tuple[str, ...]:
    word = prompt.strip().split(maxsplit=1)[0] if prompt.strip() else ""
    return tuple(c.value for c in SlashCommand if c.value == word)
