"""The stream-json control protocol, as Claude Code speaks it to the Agent SDKs.

Owns the message shapes (control_request / control_response, success and error), the
answers to inbound requests that need no running query (initialize, set_permission_mode,
set_model, mcp_status, get_context_usage), the SDK hook registrations sent in `initialize`, and
the translation of `can_use_tool` answers into codeloop decisions (`hook_callback` answers are
read by the hooks package like a command's JSON output; see sdk_glue.py). The
session runner (`stream_json.py`) owns I/O, queries and interrupts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from codeloop.messages import new_uuid
from codeloop.tools.base import PermissionBehavior, PermissionDecision


class ControlSubtype(str, Enum):
    """Request subtypes codeloop answers (inbound) or sends (outbound)."""
    INITIALIZE = "initialize"
    INTERRUPT = "interrupt"
    SET_PERMISSION_MODE = "set_permission_mode"
    SET_MODEL = "set_model"
    MCP_STATUS = "mcp_status"
    GET_CONTEXT_USAGE = "get_context_usage"
    REWIND_FILES = "rewind_files"
    CAN_USE_TOOL = "can_use_tool"          # outbound
    HOOK_CALLBACK = "hook_callback"        # outbound
    MCP_MESSAGE = "mcp_message"            # outbound: JSON-RPC to an in-process SDK MCP server


class ControlError(Exception):
    """An inbound request we refuse; its text becomes the `error` of the control_response."""


def request(subtype: ControlSubtype, **fields: Any) -> tuple[str, dict[str, Any]]:
    """An outbound control_request and its id."""
    rid = new_uuid()
    return rid, {"type": "control_request", "request_id": rid, "request": {"subtype": subtype.value, **fields}}


def success(request_id: str, response: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response or {}}}


def error(request_id: str, message: str) -> dict[str, Any]:
    return {"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": message}}


# -- initialize ------------------------------------------------------------------------------------
_MODELS = [
    {"value": "default", "displayName": "Default (recommended)", "description": "Use the default model"},
    {"value": "sonnet", "displayName": "Sonnet", "description": "claude-sonnet-4-5"},
    {"value": "opus", "displayName": "Opus", "description": "claude-opus-4-5"},
    {"value": "haiku", "displayName": "Haiku", "description": "claude-haiku-4-5"},
]
_COMMANDS = [{"name": "compact", "description": "Clear conversation history but keep a summary in context",
              "argumentHint": "<optional custom summarization instructions>"}]


@dataclass
class HookRegistry:
    """Hook callbacks the SDK registered in `initialize`: event → [(matcher, callback ids, timeout)]."""
    matchers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def from_initialize(cls, hooks: Any) -> HookRegistry:
        reg = cls()
        for event, matchers in (hooks or {}).items():
            if isinstance(matchers, list):
                reg.matchers[event] = [m for m in matchers if isinstance(m, dict)]
        return reg


def initialize_response(conv: Any) -> dict[str, Any]:
    """What `initialize` answers: the fields the SDK reads (`get_server_info()`), minimal but valid."""
    return {"commands": _COMMANDS, "output_style": "default", "available_output_styles": ["default"],
            "models": _MODELS, "account": {"apiKeySource": conv.api_key_source}, "pid": os.getpid(),
            # every registered event runs; a matcher with onFailure "block" fails closed
            "hook_on_failure_supported": True}


def handle_simple(conv: Any, req: dict[str, Any]) -> dict[str, Any]:
    """Answer an inbound request that does not touch the running query. ControlError to refuse."""
    from codeloop.permissions.policy import PermissionMode

    subtype = req.get("subtype")
    if subtype == ControlSubtype.SET_PERMISSION_MODE.value:
        try:  # "manual" is Claude Code's other name for default
            conv.config.policy.mode = PermissionMode("default" if req.get("mode") == "manual" else req.get("mode"))
        except ValueError:
            raise ControlError(f"Invalid permission mode: {req.get('mode')!r} (expected one of "
                               f"{', '.join(m.value for m in PermissionMode)})") from None
        return {"mode": conv.config.policy.mode.value}
    if subtype == ControlSubtype.SET_MODEL.value:
        model = req.get("model")
        return {"model": conv.set_model(None if model is None else str(model))}
    if subtype == ControlSubtype.MCP_STATUS.value:
        return {"mcpServers": conv.mcp.statuses() if conv.mcp is not None else []}
    if subtype == ControlSubtype.GET_CONTEXT_USAGE.value:
        from codeloop.context.prompt import loaded_instruction_files
        from codeloop.context.tokens import TokenCounter
        from codeloop.input.context_usage import measure, sdk_response

        counter = TokenCounter()   # an agent costs the context its line in the Agent tool's description
        agents = [{"agentType": d.name, "source": getattr(getattr(d, "source", None), "value", "sdk"),
                   "tokens": counter.estimate_text(f"- {d.name}: {getattr(d, 'description', '')}")}
                  for d in conv.config.agent_definitions.values()]
        types = dict(loaded_instruction_files(conv.config.user_context.get("claudeMd", "")))
        return sdk_response(measure(conv), agents=agents, memory_types=types)
    if subtype == ControlSubtype.REWIND_FILES.value:  # the SDK's rewind_files (file checkpoints)
        history, uid = conv.file_history, str(req.get("user_message_id") or "")
        index = history.prompt_index(uid) if history is not None else None
        if index is None:
            raise ControlError(f"No file checkpoint for user message {uid!r}")
        return {"restoredFiles": history.rewind(index)}
    raise ControlError(f"Unsupported control request subtype: {subtype}")


# -- answers to outbound requests ------------------------------------------------------------------
def permission_decision(tool_name: str, response: dict[str, Any]) -> tuple[PermissionDecision, bool]:
    """A can_use_tool answer → (decision, interrupt?). Anything but an allow denies."""
    behavior = response.get("behavior")
    if behavior == "allow":
        updated = response.get("updatedInput")
        return PermissionDecision(PermissionBehavior.ALLOW,
                                  updated_input=updated if isinstance(updated, dict) else None), False
    message = response.get("message") or f"Permission to use {tool_name} was denied."
    return PermissionDecision(PermissionBehavior.DENY, str(message)), bool(response.get("interrupt"))

