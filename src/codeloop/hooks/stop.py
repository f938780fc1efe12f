"""The loop's Stop-hook seam (`loop.recovery.StopHooks`) backed by configured Stop hooks.

A blocking Stop hook (exit 2, or `"decision": "block"`) keeps the model working: its reasons go
back to the model as a meta user message; so does `additionalContext` (non-error feedback the
model acts on). `"continue": false` ends the query instead, with the hook's stopReason. Errors
and system messages do not fit StopHookOutcome, so the full outcome of the last run is kept on
`last_outcome` for the front end to show.

Payloads carry `last_assistant_message` (the text of the last assistant message) and, for
SubagentStop, the subagent's `agent_id`, `agent_type` and `agent_transcript_path` — `bind()`
returns a copy for one subagent.
"""

from __future__ import annotations

from typing import Any

from codeloop.hooks.events import HookEvent
from codeloop.hooks.outcome import HookOutcome
from codeloop.hooks.runner import HookRunner
from codeloop.loop.recovery import StopHookOutcome
from codeloop.messages import Message, user_message

STOP_FEEDBACK_PREFIX = "Stop hook feedback:\n"


def last_assistant_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m.role == "assistant" and not m.is_api_error:
            return m.text
    return ""


class StopHookAdapter:
    def __init__(self, runner: HookRunner, *, event: HookEvent = HookEvent.STOP,
                 agent: dict[str, Any] | None = None) -> None:
        if event not in (HookEvent.STOP, HookEvent.SUBAGENT_STOP):
            raise ValueError(f"StopHookAdapter runs Stop or SubagentStop hooks, not {event.value}")
        self.runner = runner
        self.event = event
        self.agent = dict(agent or {})
        self.last_outcome: HookOutcome | None = None

    def bind(self, **agent: Any) -> StopHookAdapter:
        """The same hooks for one subagent: its id, type and transcript go into every payload."""
        return StopHookAdapter(self.runner, event=self.event, agent={**self.agent, **agent})

    async def run(self, messages: list[Message], *, stop_hook_active: bool) -> StopHookOutcome:
        payload = {"stop_hook_active": stop_hook_active, **self.agent,
                   "last_assistant_message": last_assistant_text(messages)}
        outcome = await self.runner.run(self.event, payload,
                                        match_value=self.agent.get("agent_type") if self.agent else None)
        self.last_outcome = outcome
        if outcome.prevent_continuation:
            return StopHookOutcome(prevent_continuation=True, stop_reason=outcome.stop_reason)
        if outcome.blocked:
            text = STOP_FEEDBACK_PREFIX + "\n".join(outcome.block_reasons)
            return StopHookOutcome(blocking_messages=[user_message(text, is_meta=True)])
        context = [c for c in outcome.additional_context if c.strip()]
        if context:
            return StopHookOutcome(blocking_messages=[user_message(STOP_FEEDBACK_PREFIX + "\n".join(context),
                                                                   is_meta=True)])
        return StopHookOutcome()
