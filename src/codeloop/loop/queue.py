"""The command queue (spec 004 §3.4, §13.2): input typed while a query is running waits here.

This module owns the queued-command record, the priority-ordered queue itself, the per-turn
filter the loop applies before draining it mid-turn (`commands_for_turn`), and the user message
a drained command becomes (`queued_command_message`). It does not decide *when* to enqueue
(that is input dispatch) nor run slash commands (those wait for the turn to end).

It lives in the loop layer because the loop drains it between turns; the session owns one per
conversation and the input layer above fills it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from codeloop.messages import QUEUED_PROMPT_TEMPLATE, Message, new_uuid, user_message


class Priority(str, Enum):
    NOW = "now"
    NEXT = "next"
    LATER = "later"

    @property
    def rank(self) -> int:
        """Lower is more urgent; comparisons go through this, never through the string."""
        return _RANK[self]


_RANK = {Priority.NOW: 0, Priority.NEXT: 1, Priority.LATER: 2}


class QueueMode(str, Enum):
    PROMPT = "prompt"
    BASH = "bash"
    TASK_NOTIFICATION = "task-notification"


@dataclass
class QueuedCommand:
    """A prompt or notification waiting in the command queue."""
    value: str
    mode: QueueMode = QueueMode.PROMPT
    priority: Priority = Priority.NEXT
    # Set when the command is addressed to a subagent (task notifications for its own tasks).
    agent_id: str | None = None
    uuid: str = field(default_factory=new_uuid)
    # Pasted images keyed by paste id: {"type": "image", "content": <base64>, "media_type": ...}.
    pasted_contents: dict[Any, dict[str, Any]] | None = None
    skip_slash_commands: bool = False
    # What the user typed before paste/@-mention expansion, for history and display.
    pre_expansion_value: str | None = None

    @property
    def is_slash_command(self) -> bool:
        return (self.mode is QueueMode.PROMPT and not self.skip_slash_commands
                and self.value.strip().startswith("/"))


class CommandQueue:
    """Commands waiting for the running query, most urgent first and FIFO within a priority.

    Single event loop, so no locking. Subscribers are called after every change so a REPL can
    re-render its "queued" preview; a subscriber that raises is a bug and propagates.
    """

    def __init__(self) -> None:
        self._items: list[QueuedCommand] = []  # arrival order; priority is applied on read
        self._subscribers: list[Callable[[], None]] = []

    def __len__(self) -> int:
        return len(self._items)

    def enqueue(self, cmd: QueuedCommand) -> None:
        self._items.append(cmd)
        self._notify()

    def peek_all(self) -> list[QueuedCommand]:
        return self._ordered(self._items)

    def get_commands_by_max_priority(self, max_priority: Priority) -> list[QueuedCommand]:
        """Every command at least as urgent as `max_priority`, without removing them."""
        limit = Priority(max_priority).rank
        return self._ordered(c for c in self._items if c.priority.rank <= limit)

    def remove(self, cmds: Iterable[QueuedCommand]) -> None:
        # By uuid rather than identity so a caller holding copies can still remove.
        gone = {c.uuid for c in cmds}
        if not gone:
            return
        before = len(self._items)
        self._items = [c for c in self._items if c.uuid not in gone]
        if len(self._items) != before:
            self._notify()

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)
        return unsubscribe

    @staticmethod
    def _ordered(items: Iterable[QueuedCommand]) -> list[QueuedCommand]:
        # sorted() is stable, so arrival order survives within a priority.
        return sorted(items, key=lambda c: c.priority.rank)

    def _notify(self) -> None:
        for callback in list(self._subscribers):
            callback()


def commands_for_turn(queue: CommandQueue, *, agent_id: str | None) -> list[QueuedCommand]:
    """The §13.2 snapshot of queued commands the loop may fold into the next API call.

    `next` and `now` commands only: `later` ones wait for the query to end (Claude Code lets
    them ride along after its Sleep tool; codeloop has none). Slash commands never run mid-turn.
    The main thread takes its own commands; a subagent takes only task notifications addressed
    to it, so user prompts always reach the main thread.
    """
    snapshot = queue.get_commands_by_max_priority(Priority.NEXT)
    out = []
    for cmd in snapshot:
        if cmd.is_slash_command:
            continue
        if agent_id is None:
            if cmd.agent_id is None:
                out.append(cmd)
        elif cmd.mode is QueueMode.TASK_NOTIFICATION and cmd.agent_id == agent_id:
            out.append(cmd)
    return out


def queued_command_message(cmd: QueuedCommand) -> Message:
    """The user message a drained command becomes, so the model sees it mid-turn.

    Meta, because the wrapper text is the harness talking; front ends already showed the user
    what they typed when it was queued.
    """
    if cmd.mode is QueueMode.TASK_NOTIFICATION:
        text = cmd.value
    elif cmd.mode is QueueMode.BASH:
        text = f"<bash-input>{cmd.value}</bash-input>"
    else:
        text = QUEUED_PROMPT_TEMPLATE.format(value=cmd.value)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    blocks += _image_blocks(cmd.pasted_contents)
    return user_message(blocks, is_meta=True)


def _image_blocks(pasted: dict[Any, dict[str, Any]] | None) -> list[dict[str, Any]]:
    # Only images travel as blocks; pasted text was already expanded into `value`.
    out = []
    for item in (pasted or {}).values():
        if item.get("type") == "image" and item.get("content"):
            out.append({"type": "image", "source": {
                "type": "base64", "media_type": item.get("media_type") or "image/png",
                "data": item["content"]}})
    return out
