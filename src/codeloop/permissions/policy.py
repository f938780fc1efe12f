"""Permission modes and the decision a tool call gets: allow, ask or deny.

This is the tool-name level of the policy (`--allowedTools`, `--disallowedTools`, modes);
rule specifiers like `Bash(git status:*)` are parsed and matched in `rules.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext


class PermissionMode(str, Enum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    DONT_ASK = "dontAsk"
    BYPASS = "bypassPermissions"


EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})


def _bare_names(rules: list[str]) -> set[str]:
    return {r.strip() for r in rules if r.strip() and "(" not in r}


@dataclass
class PermissionPolicy:
    mode: PermissionMode = PermissionMode.DEFAULT
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)

    def decide(self, tool: Tool, inp: BaseModel, tool_opinion: PermissionDecision) -> PermissionDecision:
        name = tool.name
        if name in _bare_names(self.deny):
            return PermissionDecision(PermissionBehavior.DENY, f"Permission to use {name} has been denied.")
        if self.mode is PermissionMode.BYPASS:
            return PermissionDecision(PermissionBehavior.ALLOW)
        if self.mode is PermissionMode.PLAN and not tool.is_read_only(inp):
            return PermissionDecision(PermissionBehavior.DENY,
                                      f"{name} is not available in plan mode: only read-only tools may run.")
        if tool_opinion.behavior is not PermissionBehavior.ASK:
            return tool_opinion
        if name in _bare_names(self.allow):
            return PermissionDecision(PermissionBehavior.ALLOW)
        if self.mode is PermissionMode.ACCEPT_EDITS and name in EDIT_TOOLS:
            return PermissionDecision(PermissionBehavior.ALLOW)
        if self.mode is PermissionMode.DONT_ASK:
            return PermissionDecision(PermissionBehavior.DENY,
                                      f"Permission to use {name} was not granted (dontAsk mode).")
        return PermissionDecision(PermissionBehavior.ASK, f"{name} requires permission.")


def denial_message(tool_name: str, decision: PermissionDecision, *, interactive: bool) -> str:
    if decision.message and decision.behavior is PermissionBehavior.DENY:
        return decision.message
    if interactive:
        return f"The user doesn't want to proceed with this tool use. The {tool_name} tool use was rejected."
    return (f"Claude requested permissions to use {tool_name}, but you haven't granted it yet. "
            f"(codeloop runs non-interactively: allow it with --allowedTools {tool_name} "
            f"or choose a --permission-mode.)")


def denial_record(tool_name: str, tool_use_id: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"tool_name": tool_name, "tool_use_id": tool_use_id, "tool_input": tool_input}
