"""What the stages share: swapping tool_result contents in copies of messages, and reusing the
previous call's output for an unchanged prefix of the history.

A stage's output for a message depends on the message and on the stage's decisions so far, never
on later messages. So when the new history starts with the very objects of the previous call's
input (or output: the loop feeds the pipeline's output back in, and every stage leaves its own
output unchanged) and the stage took no new decision, the previous output is the right output
for that prefix and only the tail needs work. `Reuse` records what is needed for that test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from codeloop.context.scan import carry, facts
from codeloop.messages import Message, extends


@dataclass
class Reuse:
    """One stage call: its input and output (own copies) and the settings it was made under."""
    inp: list[Message]
    out: list[Message]
    key: Any = None

    def prefix(self, messages: list[Message], key: Any) -> int:
        """How many leading messages of `messages` the previous output covers (0: none usable)."""
        if key != self.key:
            return 0
        if extends(self.out, messages) or extends(self.inp, messages):
            return len(self.inp)
        return 0


def tool_names_from(messages: Iterable[Message]) -> dict[str, str]:
    return {tid: name for m in messages if m.role == "assistant" for tid, name in facts(m).uses}


def result_text(content: Any) -> str | None:
    """The text of a tool_result, or None when it holds non-text blocks (images stay as they are)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(b.get("text") or "" for b in content)
    return None


def with_results(msg: Message, new: dict[str, Any]) -> Message:
    """A copy of `msg` with the tool_result blocks named in `new` (tool_use_id → content) swapped."""
    content = [{**b, "content": new[b["tool_use_id"]]}
               if b.get("type") == "tool_result" and b.get("tool_use_id") in new else b
               for b in msg.content]
    # dataclasses.replace re-runs __init__ and costs ~5 µs a message; a dict copy is 10× cheaper.
    out = Message.__new__(Message)
    out.__dict__.update(msg.__dict__)
    out.content = content
    return out


def rewrite(messages: list[Message], ids: dict[str, Any] | set[str], value: Any,
            memo: dict[str, tuple[Message, Message, tuple[str, ...]]]) -> list[Message]:
    """Messages with the tool_results in `ids` swapped for `value(id)`; unchanged ones shared.

    `memo` maps a message uuid to (original, rewritten) so repeated calls on the same history
    return the very same rewritten objects instead of copying them again.
    """
    out = []
    for m in messages:
        if m.role == "user":
            hits = tuple(r[0] for r in facts(m).results if r[0] in ids)
            if hits:
                cached = memo.get(m.uuid)
                # Valid only for the same object with the same set of swapped results.
                if cached is not None and cached[0] is m and cached[2] == hits:
                    m = cached[1]
                else:
                    swaps = {b["tool_use_id"]: value(b["tool_use_id"]) for b in m.content
                             if b.get("type") == "tool_result" and b.get("tool_use_id") in hits
                             and b.get("content") != value(b["tool_use_id"])}
                    if swaps:
                        new = with_results(m, swaps)
                        carry(m, new, swaps)
                        memo[m.uuid] = (m, new, hits)
                        m = new
        out.append(m)
    return out
