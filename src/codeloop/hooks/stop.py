"""The loop's Stop-hook seam (`loop.recovery.StopHooks`) backed by configured Stop hooks.

A blocking Stop hook (exit 2, or `"decision": "block"`) keeps the model working: its reasons go
back to the model as a meta user message; so does `additionalContext` (non-error feedback the
model acts on). `"continue": false` ends the query instead, with the hook's stopReason. A hook's
`systemMessage` and its non-blocking errors (exit 1, a timeout) travel on the outcome too; the
loop shows them as warnings, like every other hook's.

Payloads carry `last_assistant_message` (the text of the last assistant message) and, for
SubagentStop, the subagent's `agent_id`, `agent_type` and `agent_transcript_path` — `bind()`
returns a copy for one subagent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codeloop.hooks.events import HookEvent
from codeloop.messages import Message, user_message

if TYPE_CHECKING:  # the loop imports this module for StopHookOutcome: keep it light
    from codeloop.hooks.runner import HookRunner

STOP_FEEDBACK_PREFIX = "Stop hook feedback:\n"


def last_assistant_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m.role == "assistant" and not m.is_api_error:
            return m.text
    return ""


@dataclass
class StopHookOutcome:
    """What the loop's stop_hook_blocking transition (spec 004 §11.5) needs to know."""
    blocking_messages: list[Message] = field(default_factory=list)
    prevent_continuation: bool = False
    stop_reason: str | None = None
    system_messages: list[str] = field(default_factory=list)   # shown to the user, not the model
    errors: list[str] = field(default_factory=list)            # non-blocking failures, shown too


class StopHookAdapter:
    def __init__(self, runner: HookRunner, *, event: HookEvent = HookEvent.STOP,
                 agent: dict[str, Any] | None = None) -> None:
        if event not in (HookEvent.STOP, HookEvent.SUBAGENT_STOP):
            raise ValueError(f"StopHookAdapter runs Stop or SubagentStop hooks, not {event.value}")
        self.runner = runner
        self.event = event
        self.agent = dict(agent or {})

    def bind(self, **agent: Any) -> StopHookAdapter:
        """The same hooks for one subagent: its id, type and transcript go into every payload."""
        return StopHookAdapter(self.runner, event=self.event, agent={**self.agent, **agent})

    async def run(self, messages: list[Message], *, stop_hook_active: bool) -> StopHookOutcome:
        payload = {"stop_hook_active": stop_hook_active, **self.agent,
                   "last_assistant_message": last_assistant_text(messages)}
        outcome = await self.runner.run(self.event, payload,
                                        match_value=self.agent.get("agent_type") if self.agent else None)
        shown: dict[str, Any] = {"system_messages": list(outcome.system_messages), "errors": list(outcome.errors)}
        if outcome.prevent_continuation:
            return StopHookOutcome(prevent_continuation=True, stop_reason=outcome.stop_reason, **shown)
        if outcome.blocked:
            text = STOP_FEEDBACK_PREFIX + "\n".join(outcome.block_reasons)
            return StopHookOutcome(blocking_messages=[user_message(text, is_meta=True)], **shown)
        context = [c for c in outcome.additional_context if c.strip()]
        if context:
            return StopHookOutcome(blocking_messages=[user_message(STOP_FEEDBACK_PREFIX + "\n".join(context),
                                                                   is_meta=True)], **shown)
        return StopHookOutcome(**shown)
