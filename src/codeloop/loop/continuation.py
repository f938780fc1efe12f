"""The continuation pipeline between turns (spec 004 §13.2) and the loop-level resources.

Owns what lives for the whole query: queued commands drained into the conversation, the
zero-wait nested-memory attachments, the skill discovery prefetch (`loop.skill_prefetch`), the
tool-list refresh and the token-budget tracker; and the
producer of the queue's task-notification entries (`task_notification`): the session registers
it as a listener on its background tasks, so a task that ends is announced to the model at the
next turn boundary (or, when no query is running, at the start of the next one:
`take_task_notifications`).
Nested memory comes in as a capability (`QueryParams.memory`, a `NestedMemory` factory the
session provides), so the loop never reaches up into the context layer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from codeloop.events import AttachmentEvent, Event, SystemEvent, UserEvent
from codeloop.messages import Message, user_message


class NestedMemory(Protocol):
    """One query's view of nested CLAUDE.md files (context.memory provides it)."""

    def take(self, read_files: Mapping[str, Any]) -> list[tuple[dict[str, Any], Message]]:
        """(attachment record, meta message) pairs for files governing what was read (path → the
        record of its latest read, a new object at each read); never waits."""
        ...

    def forget_missing(self, history: list[Message], read_files: Mapping[str, Any]) -> None:
        """Attachments no longer in `history` (summarised away by a compaction) are forgotten: they
        come back when their folder is read again, not for the reads already made."""
        ...

    def close(self) -> None: ...


def task_notification(task: Any) -> Any:
    """The queue entry announcing a finished background task (a `bash_background.BackgroundTask`)."""
    from codeloop.loop.queue import Priority, QueuedCommand, QueueMode
    from codeloop.tools.builtin.bash_background import notification_text

    return QueuedCommand(notification_text(task), mode=QueueMode.TASK_NOTIFICATION, priority=Priority.NEXT)


def take_task_notifications(queue: Any) -> list[Message]:
    """Remove the main thread's pending task notifications from `queue`, as the messages they become."""
    from codeloop.loop.queue import QueueMode, queued_command_message

    pending = [c for c in queue.peek_all() if c.mode is QueueMode.TASK_NOTIFICATION and c.agent_id is None]
    queue.remove(pending)
    return [queued_command_message(c) for c in pending]


class Continuation:
    def __init__(self, p: Any) -> None:
        from codeloop.loop.budget import BudgetTracker

        self.p = p
        self.turn_output_tokens = 0
        self.budget_tracker = BudgetTracker() if p.token_budget else None
        self.budget_report: SystemEvent | None = None   # how a budgeted run went, once it ends
        self.memory: NestedMemory | None = p.memory() if p.memory is not None else None
        self.skills: Any = None    # loop.skill_prefetch.SkillPrefetch, made at the first tool batch
        if self.memory is not None:   # a compaction between queries (/compact) dropped attachments too
            self.memory.forget_missing(p.messages, p.tool_context.read_files)

    def compacted(self, history: list[Message], ctx: Any) -> None:
        """The history was just replaced by a compaction's: what it no longer holds is attached anew."""
        if self.memory is not None:
            self.memory.forget_missing(history, ctx.read_files)

    def record_output_tokens(self, n: int) -> None:
        self.turn_output_tokens += n

    # -- token budget (§11.6) -----------------------------------------------------------------------
    def budget_nudge(self, ctx: Any) -> Message | None:
        """The nudge to keep working, or None; a budgeted run that ends leaves `budget_report`."""
        if self.budget_tracker is None:
            return None
        from codeloop.loop.budget import check_token_budget

        decision = check_token_budget(self.budget_tracker, agent_id=ctx.agent_id, budget=self.p.token_budget,
                                      turn_output_tokens=self.turn_output_tokens)
        if decision.completed_budget_run:
            why = " (stopped: diminishing returns)" if decision.diminishing_returns else ""
            self.budget_report = SystemEvent(
                "token_budget", f"Token budget: {decision.pct}% of {decision.budget:,} output tokens used after "
                f"{decision.continuation_count} continuation(s) in {(decision.duration_ms or 0) / 1000:.1f}s{why}",
                "info", {"budget": decision.budget, "turn_tokens": decision.turn_tokens, "pct": decision.pct,
                         "continuations": decision.continuation_count, "duration_ms": int(decision.duration_ms or 0),
                         "diminishing_returns": decision.diminishing_returns})
        if decision.action != "continue" or not decision.nudge_message:
            return None
        return user_message(decision.nudge_message, is_meta=True)

    def start_skill_prefetch(self, ctx: Any, tools: list, tool_uses: list[dict[str, Any]],
                             results: list[Message]) -> None:
        """§13.2 step 4's prefetch, started as soon as a batch's results are in."""
        if not any(t.name == "Skill" for t in tools):
            return
        if self.skills is None:
            from codeloop.loop.skill_prefetch import SkillPrefetch

            self.skills = SkillPrefetch(self.p.messages)
        self.skills.start(ctx, tools, tool_uses, results)

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
        if self.memory is not None:  # zero-wait: nothing until the walk has settled
            for attachment, message in self.memory.take(ctx.read_files):
                yield AttachmentEvent(attachment)
                yield UserEvent(message)
        if self.skills is not None:  # awaited: it has run since the tool results came in
            for attachment, message in await self.skills.collect():
                yield AttachmentEvent(attachment)
                yield UserEvent(message)

    def refreshed_tools(self, tools: list) -> list:
        if self.p.refresh_tools is None:
            return tools
        fresh = self.p.refresh_tools()
        return fresh if fresh is not None else tools

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
        if self.skills is not None:
            self.skills.cancel()
