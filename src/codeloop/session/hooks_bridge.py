"""Where a conversation meets the user's hooks (Claude Code's protocol, run by `codeloop.hooks`).

Owns the translation between hook outcomes and conversation behaviour: UserPromptSubmit can
block (erase) a prompt or add context; SessionStart adds context; PreToolUse can deny, ask,
allow or rewrite a tool call (deny rules still win over a hook's allow); PostToolUse feedback is
shown to the model and `continue: false` stops the turn; Stop hooks drive the loop's
stop_hook_blocking transition; PreCompact, Notification and SessionEnd are told what happens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeloop.events import Event, SystemEvent
from codeloop.messages import Message, user_message


@dataclass
class PostToolFeedback:
    feedback: str | None
    prevent_continuation: bool = False
    stop_reason: str | None = None


@dataclass
class PromptVerdict:
    blocked: bool
    events: list[Event]
    context: list[Message]
    stop_reason: str | None = None


def _notices(outcome: Any) -> list[Event]:
    events: list[Event] = [SystemEvent("hook_warning", m, "warning") for m in outcome.system_messages]
    events += [SystemEvent("hook_error", e, "warning") for e in outcome.errors]
    return events


def _context_message(texts: list[str], source: str) -> list[Message]:
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        return []
    body = "\n".join(texts)
    return [user_message(f"<system-reminder>\n{source} hook additional context:\n{body}\n</system-reminder>",
                         is_meta=True)]


class ConversationHooks:
    def __init__(self, runner: Any | None) -> None:
        self.runner = runner
        self.pending_notices: list[Event] = []

    def has(self, event: str, match: str | None = None) -> bool:
        return self.runner is not None and self.runner.has_hooks(event, match)

    async def user_prompt(self, prompt: str) -> PromptVerdict:
        if not self.has("UserPromptSubmit"):
            return PromptVerdict(False, [], [])
        out = await self.runner.run("UserPromptSubmit", {"prompt": prompt})
        events = _notices(out)
        if out.blocked or out.prevent_continuation:
            why = "; ".join(out.block_reasons) or out.stop_reason or "blocked by a UserPromptSubmit hook"
            events.append(SystemEvent("hook_blocked", f"Prompt blocked by a hook: {why}", "error"))
            return PromptVerdict(True, events, [], why)
        return PromptVerdict(False, events, _context_message(out.additional_context + out.output, "UserPromptSubmit"))

    async def session_start(self, source: str) -> list[Message]:
        if not self.has("SessionStart", source):
            return []
        out = await self.runner.run("SessionStart", {"source": source}, match_value=source)
        self.pending_notices += _notices(out)
        return _context_message(out.additional_context + out.output, "SessionStart")

    async def pre_tool(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str) -> Any | None:
        if not self.has("PreToolUse", tool_name):
            return None
        out = await self.runner.run("PreToolUse", {"tool_name": tool_name, "tool_input": tool_input,
                                                   "tool_use_id": tool_use_id}, match_value=tool_name)
        self.pending_notices += _notices(out)
        return out

    async def post_tool(self, tool_name: str, tool_input: dict[str, Any], response: Any,
                        tool_use_id: str) -> PostToolFeedback | None:
        if not self.has("PostToolUse", tool_name):
            return None
        out = await self.runner.run("PostToolUse", {"tool_name": tool_name, "tool_input": tool_input,
                                                    "tool_response": response, "tool_use_id": tool_use_id},
                                    match_value=tool_name)
        self.pending_notices += _notices(out)
        parts = [f"PostToolUse hook feedback:\n{r}" for r in out.block_reasons]
        parts += list(out.additional_context)
        return PostToolFeedback("\n".join(parts) or None, out.prevent_continuation, out.stop_reason)

    def stop_hooks(self, event: str = "Stop") -> Any | None:
        """Stop hooks for the main loop, or SubagentStop hooks (`event="SubagentStop"`) for subagents."""
        if not self.has(event):
            return None
        from codeloop.hooks.events import HookEvent
        from codeloop.hooks.stop import StopHookAdapter

        return StopHookAdapter(self.runner, event=HookEvent(event))

    async def pre_compact(self, trigger: str, focus: str | None) -> None:
        if self.has("PreCompact", trigger):
            out = await self.runner.run("PreCompact", {"trigger": trigger, "custom_instructions": focus or ""},
                                        match_value=trigger)
            self.pending_notices += _notices(out)

    async def notify(self, message: str) -> None:
        if self.has("Notification"):
            await self.runner.run("Notification", {"message": message})

    async def session_end(self, reason: str) -> None:
        if self.has("SessionEnd"):
            await self.runner.run("SessionEnd", {"reason": reason})

    def drain_notices(self) -> list[Event]:
        notices, self.pending_notices = self.pending_notices, []
        return notices
