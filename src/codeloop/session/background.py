"""The session's background tasks: one registry (tools.builtin.bash_background) shared by
background shells and background subagents, whose finished tasks become task-notification
entries in the conversation's command queue, and which is emptied when the session ends.

Kept apart from session.subagent so that wiring it costs no pydantic import at start-up.
"""

from __future__ import annotations

from typing import Any


def background_on_use(ctx: Any, queue: Any, carried: Any = None) -> None:
    """Give the session (`ctx`) its registry when something first reads `ctx.background` (most
    sessions start no background task): `carried`, a /rewind predecessor's registry whose tasks go
    on, or a fresh one; either way wired to this session's `queue` by `wire_background`. A carried
    registry is wired at once: its running tasks must report to this session from now on."""
    from codeloop.tools.made_on_use import make_on_use

    def make() -> Any:
        ctx.background = carried
        wire_background(ctx, queue)
        return ctx.background

    if carried is not None:
        make()
    else:
        make_on_use(ctx, "background", make)


def wire_background(ctx: Any, queue: Any) -> None:
    """Give the session (`ctx`, its ToolContext) its registry; each task that ends is enqueued
    as a task notification in `queue` (loop.queue.CommandQueue) for the model."""
    from codeloop.loop.continuation import task_notification
    from codeloop.tools.builtin.bash_background import registry

    from codeloop.loop.queue import QueuedCommand, QueueMode

    tasks = registry(ctx)
    # a registry carried over from a /rewind's predecessor now reports to this session only, and
    # Ctrl+B moves this session's foreground commands
    tasks.emit, tasks.session_dir, tasks.foreground = ctx.emit, ctx.session_dir, ctx.foreground
    tasks.listeners[:] = [lambda task: queue.enqueue(task_notification(task))]
    # SendMessage from a background agent to "main": read at the main thread's next turn
    tasks.inboxes["main"] = lambda text: queue.enqueue(QueuedCommand(text, mode=QueueMode.TASK_NOTIFICATION))


def open_inbox(parent_ctx: Any, agent_id: str, queue: Any) -> Any:
    """Let SendMessage reach the background agent `agent_id` (its conversation's `queue`) while it
    runs; returns the callable that closes the inbox again. Nothing for a foreground subagent."""
    from codeloop.loop.queue import QueuedCommand, QueueMode

    tasks = parent_ctx.background
    if tasks is None or tasks.get(agent_id) is None:
        return lambda: None
    tasks.inboxes[agent_id] = lambda text: queue.enqueue(
        QueuedCommand(text, mode=QueueMode.TASK_NOTIFICATION, agent_id=agent_id))
    return lambda: tasks.inboxes.pop(agent_id, None)


def stop_background(ctx: Any) -> None:
    """Kill every background shell and agent of the session (it is ending). Their ends are not
    announced: the queue goes on to a successor (/clear, /rewind), which never started them.
    A registry never made has nothing to stop, and is not made now."""
    from codeloop.tools.made_on_use import made

    tasks = made(ctx, "background")
    if tasks is not None:
        tasks.listeners.clear()
        tasks.kill_all()
