"""The continuation pipeline between turns (spec 004 §13.2) and the loop-level resources.

Owns what lives for the whole query: queued commands drained into the conversation, the
zero-wait memory prefetch, the tool-list refresh, the token-budget tracker and the asynchronous
tool-use summary (§13.1).
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from codeloop.events import AttachmentEvent, Event, SystemEvent, UserEvent
from codeloop.messages import Message, user_message


class Continuation:
    def __init__(self, p: Any) -> None:
        from codeloop.loop.budget import BudgetTracker

        self.p = p
        self.turn_output_tokens = 0
        self.budget_tracker = BudgetTracker() if p.token_budget else None
        self.summary_task: asyncio.Task | None = None
        self._summaries_shown: set[int] = set()
        self._attached_memory: set[str] = set()
        self._iteration = 0
        self.memory = None
        if p.memory_prefetch:
            from codeloop.context.memory import start_memory_prefetch
            self.memory = start_memory_prefetch(p.tool_context.project_dir)

    def record_output_tokens(self, n: int) -> None:
        self.turn_output_tokens += n
        self._iteration += 1

    # -- tool-use summary (§13.1): made during the next API call, never blocking it ----------------
    def start_summary(self, turn: Any, tool_results: list[Message]) -> None:
        self.summary_task = None
        if not self.p.tool_use_summary_model or not turn.tool_use_blocks:
            return
        from codeloop.loop.summary import start_tool_use_summary

        outputs = {m.content[0]["tool_use_id"]: m.content[0].get("content") for m in tool_results}
        calls = [{"name": b["name"], "input": b.get("input"), "output": str(outputs.get(b["id"], ""))[:300]}
                 for b in turn.tool_use_blocks]
        last_text = "".join(m.text for m in turn.assistant_messages)
        self.summary_task = start_tool_use_summary(
            self.p.side_provider or self.p.provider, model=self.p.tool_use_summary_model, tools=calls, last_assistant_text=last_text,
            tool_use_ids=[b["id"] for b in turn.tool_use_blocks])

    async def pending_summary(self, state: Any) -> AsyncIterator[Event]:
        task = state.pending_tool_use_summary
        if task is None or id(task) in self._summaries_shown:
            return
        self._summaries_shown.add(id(task))
        try:
            result = await task
        except (asyncio.CancelledError, Exception):  # a summary is a nicety: failures are ignored
            return
        if result:
            yield SystemEvent("tool_use_summary", result["summary"], "info", dict(result))

    # -- token budget (§11.6) -----------------------------------------------------------------------
    def budget_nudge(self, ctx: Any) -> Message | None:
        if self.budget_tracker is None:
            return None
        from codeloop.loop.budget import check_token_budget

        decision = check_token_budget(self.budget_tracker, agent_id=ctx.agent_id, budget=self.p.token_budget,
                                      turn_output_tokens=self.turn_output_tokens)
        if decision.action != "continue" or not decision.nudge_message:
            return None
        return user_message(decision.nudge_message, is_meta=True)

    # -- queued commands and attachments ------------------------------------------------------------
    async def attachments(self, ctx: Any) -> AsyncIterator[Event]:
        queue = self.p.queue
        if queue is not None and len(queue):
            from codeloop.loop.queue import commands_for_turn, queued_command_message

            commands = commands_for_turn(queue, agent_id=ctx.agent_id)
            for cmd in commands:
                yield AttachmentEvent({"type": "queued_command", "prompt": cmd.value, "mode": cmd.mode.value})
                yield UserEvent(queued_command_message(cmd))
            queue.remove(commands)
        if self.memory is not None and self.memory.settled_at is not None:  # zero-wait: only if already settled
            from codeloop.context.memory import attachment_message

            for att in self.memory.take_attachments(list(ctx.read_files), self._attached_memory):
                self.memory.consumed_on_iteration = self._iteration
                yield AttachmentEvent({"type": att["type"], "path": att["path"]})
                yield UserEvent(attachment_message(att))

    def refreshed_tools(self, tools: list) -> list:
        if self.p.refresh_tools is None:
            return tools
        fresh = self.p.refresh_tools()
        return fresh if fresh is not None else tools

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
        if self.summary_task is not None and not self.summary_task.done():
            self.summary_task.cancel()
