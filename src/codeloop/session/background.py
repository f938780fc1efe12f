"""The session's background tasks: one registry (tools.builtin.bash_background) shared by
background shells and background subagents, whose finished tasks become task-notification
entries in the conversation's command queue, and which is emptied when the session ends.

Kept apart from session.subagent so that wiring it costs no pydantic import at start-up.
"""

from __future__ import annotations

from typing import Any


def wire_background(ctx: Any, queue: Any) -> None:
    """Give the session (`ctx`, its ToolContext) its registry; each task that ends is enqueued
    as a task notification in `queue` (loop.queue.CommandQueue) for the model."""
    from codeloop.loop.continuation import task_notification
    from codeloop.tools.builtin.bash_background import registry

    registry(ctx).listeners.append(lambda task: queue.enqueue(task_notification(task)))


def stop_background(ctx: Any) -> None:
    """Kill every background shell and agent of the session (it is ending)."""
    if ctx.background is not None:
        ctx.background.kill_all()
