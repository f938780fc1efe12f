"""Hook events, matchers, and the JSON a hook reads on stdin (Claude Code's protocol).

Configuration shape (from the merged settings):

    {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type": "command", "command": "...", "timeout": 60}]}]}

Matchers: for the tool events (PreToolUse, PostToolUse, PostToolUseFailure, PermissionRequest) a
regex full-matched against the tool name (`""`, missing or `"*"` match everything; an invalid regex
falls back to an exact compare); for PreCompact/PostCompact the trigger (manual|auto); for
SessionStart the source (startup|resume|clear|compact); for SubagentStart/SubagentStop the agent
type; for Notification the notification type; for SessionEnd the reason; every other event ignores
the matcher.

Besides shell commands, a hook can be an in-process callback (`HookCallback`): the Agent SDKs
register Python/TypeScript functions this way; their answer is read like a command's JSON stdout.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

DEFAULT_TIMEOUT_S = 60.0


class HookEvent(str, Enum):
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    NOTIFICATION = "Notification"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"
    PRE_COMPACT = "PreCompact"
    SESSION_START = "SessionStart"
    SESSION_END = "SessionEnd"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    SUBAGENT_START = "SubagentStart"
    PERMISSION_REQUEST = "PermissionRequest"
    POST_COMPACT = "PostCompact"


class CompactTrigger(str, Enum):
    MANUAL = "manual"
    AUTO = "auto"


class SessionStartSource(str, Enum):
    STARTUP = "startup"
    RESUME = "resume"
    CLEAR = "clear"
    COMPACT = "compact"


# The per-event stdin fields, with the value sent when the caller leaves one out: a hook script
# can then rely on every documented key being present.
EVENT_FIELDS: dict[HookEvent, dict[str, Any]] = {
    HookEvent.PRE_TOOL_USE: {"tool_name": "", "tool_input": {}, "tool_use_id": ""},
    HookEvent.POST_TOOL_USE: {"tool_name": "", "tool_input": {}, "tool_use_id": "", "tool_response": None},
    HookEvent.USER_PROMPT_SUBMIT: {"prompt": ""},
    HookEvent.NOTIFICATION: {"message": "", "notification_type": "permission_prompt"},
    HookEvent.STOP: {"stop_hook_active": False},
    HookEvent.SUBAGENT_STOP: {"stop_hook_active": False, "agent_id": "", "agent_type": "",
                              "agent_transcript_path": ""},
    HookEvent.PRE_COMPACT: {"trigger": CompactTrigger.AUTO.value, "custom_instructions": ""},
    HookEvent.SESSION_START: {"source": SessionStartSource.STARTUP.value},
    HookEvent.SESSION_END: {"reason": "other"},
    HookEvent.POST_TOOL_USE_FAILURE: {"tool_name": "", "tool_input": {}, "tool_use_id": "", "error": "",
                                      "is_interrupt": False},
    HookEvent.SUBAGENT_START: {"agent_id": "", "agent_type": ""},
    HookEvent.PERMISSION_REQUEST: {"tool_name": "", "tool_input": {}, "permission_suggestions": []},
    HookEvent.POST_COMPACT: {"trigger": CompactTrigger.AUTO.value, "compact_summary": ""},
}

# Which payload field a matcher is compared with, for the events that have matchers.
MATCH_FIELD: dict[HookEvent, str] = {
    HookEvent.PRE_TOOL_USE: "tool_name",
    HookEvent.POST_TOOL_USE: "tool_name",
    HookEvent.PRE_COMPACT: "trigger",
    HookEvent.SESSION_START: "source",
    HookEvent.POST_TOOL_USE_FAILURE: "tool_name",
    HookEvent.PERMISSION_REQUEST: "tool_name",
    HookEvent.POST_COMPACT: "trigger",
    HookEvent.SUBAGENT_START: "agent_type",
    HookEvent.SUBAGENT_STOP: "agent_type",
    HookEvent.NOTIFICATION: "notification_type",
    HookEvent.SESSION_END: "reason",
}


@dataclass(frozen=True)
class HookCommand:
    """A hook's shell command and its timeout."""
    command: str
    timeout: float = DEFAULT_TIMEOUT_S


class OnFailure(str, Enum):
    """What a callback that raises means (the SDK's HookMatcher.on_failure)."""
    CONTINUE = "continue"   # no decision: the action goes on
    BLOCK = "block"         # fail closed: the action is blocked


@dataclass(frozen=True)
class HookCallback:
    """An in-process hook: `call(input)` returns the JSON object a command would print."""
    label: str
    call: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    timeout: float = DEFAULT_TIMEOUT_S
    on_failure: OnFailure = OnFailure.CONTINUE


class CallbackSource:
    """Where in-process hooks come from (the SDK registrations); the base has none."""

    def callbacks_for(self, event: HookEvent, match_value: str | None) -> list[HookCallback]:
        return []


def matcher_matches(matcher: str | None, value: str | None) -> bool:
    if matcher is None or matcher.strip() in ("", "*"):
        return True
    if value is None:
        return False
    try:
        return re.fullmatch(matcher, value) is not None
    except re.error:
        return matcher == value


def _timeout(raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw <= 0:
        return DEFAULT_TIMEOUT_S
    return float(raw)


def hooks_section(config: dict[str, Any]) -> dict[str, Any]:
    """Accept either the whole settings dict (`{"hooks": {...}}`) or just its `hooks` value."""
    inner = config.get("hooks")
    return inner if isinstance(inner, dict) else config


def matching_commands(config: dict[str, Any], event: HookEvent, match_value: str | None) -> list[HookCommand]:
    """The commands to run, in configuration order, each distinct command string once."""
    groups = hooks_section(config).get(event.value)
    if not isinstance(groups, list):
        return []
    uses_matcher = event in MATCH_FIELD
    out: list[HookCommand] = []
    seen: set[str] = set()
    for group in groups:
        if not isinstance(group, dict):
            continue
        matcher = group.get("matcher")
        if uses_matcher and not matcher_matches(matcher if isinstance(matcher, str) else None, match_value):
            continue
        for h in group.get("hooks") or []:
            if not isinstance(h, dict) or h.get("type", "command") != "command":
                continue
            cmd = h.get("command")
            if not isinstance(cmd, str) or not cmd.strip() or cmd in seen:
                continue
            seen.add(cmd)
            out.append(HookCommand(cmd, _timeout(h.get("timeout"))))
    return out


def build_input(event: HookEvent, payload: dict[str, Any], *, session_id: str, transcript_path: str,
                cwd: str, permission_mode: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "permission_mode": permission_mode,
        "hook_event_name": event.value,
    }
    for key, default in EVENT_FIELDS[event].items():
        data[key] = payload.get(key, default)
    # Extra caller fields pass through (forward compatible), but never over the common ones.
    for key, value in payload.items():
        data.setdefault(key, value)
    return data
