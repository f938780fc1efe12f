"""`/rewind` (also Esc Esc on empty input): go back to an earlier prompt — the conversation, the
files the model changed since (from `session.checkpoints`), or both.

Rewinding the conversation goes on in the same session from the message before that prompt, as
Claude Code's does: the transcript retracts what came after (it stays on disk, append-only) and
the chain continues from the last kept message, so `-c`/`--resume` later rebuild exactly the
kept conversation (session.assembly.successor). The prompt's text is shown so it can be sent
again or edited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.messages import Message

MAX_CHOICES = 9  # the picker answers 1-9


def _prompts(messages: list[Message]) -> list[tuple[int, Message]]:
    """(index, message) of each prompt the user typed (not tool results, not meta messages)."""
    out = []
    for i, m in enumerate(messages):
        if m.role != "user" or m.is_meta or not isinstance(m.content, (str, list)):
            continue
        if isinstance(m.content, list) and any(b.get("type") == "tool_result" for b in m.content):
            continue
        text = m.text.strip()
        if text and not text.startswith("<"):  # <bash-input>, <command-name>…: harness records
            out.append((i, m))
    return out


async def rewind(host: Any, args: str, conversation_like: Callable[..., Any]) -> str:
    """What was done, for the user. `host` is the command host; `conversation_like` makes the
    conversation that continues from the kept messages (passed in: commands imports this module)."""
    conv = host.conv
    history = getattr(conv, "file_history", None)
    prompts = _prompts(conv.messages)[-MAX_CHOICES:]
    if not prompts:
        return "Nothing to rewind: no prompts in this conversation yet."
    options = []
    for _i, m in reversed(prompts):
        k = history.prompt_index(m.uuid) if history is not None else None
        changed = len(history.changed_since(k)) if history is not None and k is not None else 0
        when = (m.timestamp or "")[11:16]  # HH:MM (UTC) of the ISO timestamp
        files = f"  ({changed} file{'s' if changed != 1 else ''} changed since)" if changed else ""
        first = m.text.strip().splitlines()[0][:60]
        options.append((m.uuid, f"{when} {first}{files}".strip()))
    chosen = await host.choose("Rewind to just before which prompt?", options)
    if not chosen:
        return "Rewind cancelled."
    index, message = next((i, m) for i, m in prompts if m.uuid == chosen)
    k = history.prompt_index(chosen) if history is not None else None
    changed = history.changed_since(k) if history is not None and k is not None else []
    modes = [("both", "Restore code and conversation"), ("conversation", "Restore conversation only")]
    if changed:
        modes.insert(1, ("code", "Restore code only"))
    else:
        modes = [("conversation", "Restore conversation (no files were changed since)")]
    mode = await host.choose(f"Rewind to before “{message.text.strip()[:60]}”:", modes)
    if not mode:
        return "Rewind cancelled."
    lines = []
    if mode in ("both", "code") and k is not None and history is not None:
        restored = history.rewind(k)
        lines.append(f"Restored {len(restored)} file{'s' if len(restored) != 1 else ''}: "
                     + ", ".join(_short(p, conv.config.cwd) for p in restored))
    if mode in ("both", "conversation"):
        new = conversation_like(conv, rewind_at=index, keep_checkpoints=True)
        await host.switch_conversation(new, reason="rewind")
        lines.append(f"Conversation rewound to before that prompt ({index} messages kept). It was:\n"
                     f"  {message.text.strip()}")
    return "\n".join(lines)


def _short(path: str, cwd: Any) -> str:
    try:
        from pathlib import Path
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path
