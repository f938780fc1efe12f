"""Making a loaded history valid for the API: tombstones applied, dangling tool_uses answered,
orphaned or duplicate tool_results dropped — so a resumed session never sends a broken request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from codeloop.messages import Message, tool_result_block

INTERRUPTED_TOOL_RESULT = "Tool execution was interrupted; no result was recorded (session resumed)."
# Entry types that carry a message; everything else is metadata hanging off the chain.
MESSAGE_TYPES = ("user", "assistant")
Decode = Callable[[dict[str, Any]], "Message | None"]


def messages_from_entries(entries: Iterable[dict[str, Any]], decode: Decode) -> tuple[list[Message], int]:
    """The API-valid history an entry list describes (tombstones applied, dangling tool_uses
    repaired), and how many message entries could not be read. `decode` turns one message entry
    into a Message (None when unreadable): the transcript's `entry_to_message`, passed in so this
    module stays below the transcript format."""
    messages: list[Message] = []
    tombstoned: set[Any] = set()
    corrupt = 0
    for entry in entries:
        kind = entry.get("type")
        if kind in MESSAGE_TYPES:
            msg = decode(entry)
            if msg is None:
                corrupt += 1
            else:
                messages.append(msg)
        elif kind == "tombstone":
            # Conversation writes these when the loop retracts an already-recorded message.
            tombstoned.add(entry.get("targetUuid"))
    if tombstoned:
        messages = [m for m in messages if m.uuid not in tombstoned]
    return repair_dangling_tool_uses(messages), corrupt


def repair_dangling_tool_uses(messages: list[Message]) -> list[Message]:
    """Make history valid for the API after a crash or a torn file.

    Drops tool_result blocks with no earlier tool_use (or answering one already answered), and
    gives every tool_use with no later tool_result a synthetic error result, placed right after
    the run of assistant messages that holds it.
    """
    last_result_at: dict[Any, int] = {}
    for i, msg in enumerate(messages):
        if msg.role == "user":
            for block in msg.content:
                if block.get("type") == "tool_result":
                    last_result_at[block.get("tool_use_id")] = i

    out: list[Message] = []
    # ids as the transcript has them: a torn entry may lack one (hence Any, as in last_result_at)
    seen_uses: set[Any] = set()
    answered: set[Any] = set()
    pending: list[tuple[Any, Message]] = []  # dangling tool_uses of the current assistant run

    def flush_pending() -> None:
        for tool_use_id, owner in pending:
            block = tool_result_block(tool_use_id, INTERRUPTED_TOOL_RESULT, is_error=True)
            out.append(Message(role="user", content=[block], tool_use_result=INTERRUPTED_TOOL_RESULT,
                               parent_tool_use_id=owner.parent_tool_use_id, timestamp=owner.timestamp))
            answered.add(tool_use_id)
        pending.clear()

    for i, msg in enumerate(messages):
        if msg.role == "assistant":
            for block in msg.content:
                if block.get("type") != "tool_use":
                    continue
                tool_use_id = block.get("id")
                seen_uses.add(tool_use_id)
                if last_result_at.get(tool_use_id, -1) < i:
                    pending.append((tool_use_id, msg))
            out.append(msg)
            continue
        flush_pending()
        kept = []
        for block in msg.content:
            if block.get("type") == "tool_result":
                tool_use_id = block.get("tool_use_id")
                if tool_use_id not in seen_uses or tool_use_id in answered:
                    continue
                answered.add(tool_use_id)
            kept.append(block)
        if len(kept) == len(msg.content):
            out.append(msg)
        elif kept:
            out.append(dataclasses.replace(msg, content=kept))
    flush_pending()
    return out
