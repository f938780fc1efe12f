"""Hook events, matchers, and the JSON a hook reads on stdin (Claude Code's protocol).

Configuration shape (from the merged settings):

    {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type": "command", "command": "...", "timeout": 60}]}]}

All 30 of Claude Code's events are named here (`HookEvent`); which of them codeloop fires, and
where, is the README's hook table. Matchers are a regex full-matched against one payload field
(`MATCH_FIELD`: `""`, missing or `"*"` match everything; an invalid regex falls back to an exact
compare): the tool name for the tool events (PreToolUse, PostToolUse, PostToolUseFailure,
PermissionRequest, PermissionDenied); the trigger for PreCompact/PostCompact/Setup; the source for
SessionStart and ConfigChange; the agent type for SubagentStart/SubagentStop; the notification type
for Notification; the reason for SessionEnd; the error type for StopFailure; the command name for
UserPromptExpansion; the server name for Elicitation/ElicitationResult; the load reason for
InstructionsLoaded; the file's base name for FileChanged. Every other event ignores the matcher,
as Claude Code does.

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
    POST_TOOL_BATCH = "PostToolBatch"
    PERMISSION_DENIED = "PermissionDenied"
    USER_PROMPT_EXPANSION = "UserPromptExpansion"
    STOP_FAILURE = "StopFailure"
    SETUP = "Setup"
    TEAMMATE_IDLE = "TeammateIdle"
    TASK_CREATED = "TaskCreated"
    TASK_COMPLETED = "TaskCompleted"
    ELICITATION = "Elicitation"
    ELICITATION_RESULT = "ElicitationResult"
    CONFIG_CHANGE = "ConfigChange"
    WORKTREE_CREATE = "WorktreeCreate"
    WORKTREE_REMOVE = "WorktreeRemove"
    INSTRUCTIONS_LOADED = "InstructionsLoaded"
    CWD_CHANGED = "CwdChanged"
    FILE_CHANGED = "FileChanged"
    MESSAGE_DISPLAY = "MessageDisplay"


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
    # tool_calls: [{tool_name, tool_input, tool_use_id, tool_response}], tool_response being the
    # tool_result content the model sees
    HookEvent.POST_TOOL_BATCH: {"tool_calls": []},
    HookEvent.PERMISSION_DENIED: {"tool_name": "", "tool_input": {}, "tool_use_id": "", "reason": ""},
    HookEvent.USER_PROMPT_EXPANSION: {"expansion_type": "slash_command", "command_name": "", "command_args": "",
                                      "command_source": "", "prompt": ""},
    HookEvent.STOP_FAILURE: {"error": "unknown", "error_details": "", "last_assistant_message": ""},
    HookEvent.SETUP: {"trigger": "init"},
    HookEvent.TEAMMATE_IDLE: {"teammate_name": "", "team_name": ""},
    HookEvent.TASK_CREATED: {"task_id": "", "task_subject": "", "task_description": "", "teammate_name": None,
                             "team_name": None},
    HookEvent.TASK_COMPLETED: {"task_id": "", "task_subject": "", "task_description": "", "teammate_name": None,
                               "team_name": None},
    HookEvent.ELICITATION: {"mcp_server_name": "", "message": "", "mode": "form", "url": None, "elicitation_id": None,
                            "requested_schema": {}},
    HookEvent.ELICITATION_RESULT: {"mcp_server_name": "", "elicitation_id": None, "mode": "form", "action": "cancel",
                                   "content": {}},
    HookEvent.CONFIG_CHANGE: {"source": "project_settings", "file_path": ""},
    HookEvent.WORKTREE_CREATE: {"name": ""},
    HookEvent.WORKTREE_REMOVE: {"worktree_path": ""},
    HookEvent.INSTRUCTIONS_LOADED: {"file_path": "", "memory_type": "Project", "load_reason": "session_start",
                                    "globs": None, "trigger_file_path": None, "parent_file_path": None},
    HookEvent.CWD_CHANGED: {"old_cwd": "", "new_cwd": ""},
    HookEvent.FILE_CHANGED: {"file_path": "", "event": "change"},
    HookEvent.MESSAGE_DISPLAY: {"turn_id": "", "message_id": "", "index": 0, "final": True, "delta": ""},
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
    HookEvent.PERMISSION_DENIED: "tool_name",
    HookEvent.USER_PROMPT_EXPANSION: "command_name",
    HookEvent.STOP_FAILURE: "error",
    HookEvent.SETUP: "trigger",
    HookEvent.ELICITATION: "mcp_server_name",
    HookEvent.ELICITATION_RESULT: "mcp_server_name",
    HookEvent.CONFIG_CHANGE: "source",
    HookEvent.INSTRUCTIONS_LOADED: "load_reason",
    HookEvent.FILE_CHANGED: "file_path",   # compared by base name (`match_value`)
}


def match_value(event: HookEvent, payload: dict[str, Any]) -> str | None:
    """The value an event's matcher is compared with, or None for an event without matchers."""
    field = MATCH_FIELD.get(event)
    if field is None:
        return None
    value = str(payload.get(field, EVENT_FIELDS[event][field]) or "")
    if event is HookEvent.FILE_CHANGED:
        # Claude Code matches FileChanged against file names (".envrc|.env"), not whole paths
        return value.replace("\\", "/").rsplit("/", 1)[-1]
    return value


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
