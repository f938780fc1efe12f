"""/export [file]: the conversation as markdown.

With a file name it is written there (relative to the working directory). Without one it goes
to the clipboard where a clipboard tool is at hand (wl-copy under Wayland, xclip or xsel under
X, pbcopy on macOS), otherwise to a default file in the working directory named for the date and
the first prompt, as Claude Code names it; the screen says where it went.

The markdown: a heading with the session, then each message under `## User` / `## Assistant`:
text as it was, tool calls as their name and JSON input, tool results in a fenced block
(clipped), thinking left out, attachments (meta messages) reduced to a one-line note.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.input.commands import CommandHost, CommandOutcome
    from codeloop.messages import Message
    from codeloop.session.conversation import Conversation

RESULT_CLIP = 4_000


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(b.get("text", f"[{b.get('type')}]") for b in content if isinstance(b, dict))
    text = str(content or "")
    return text if len(text) <= RESULT_CLIP else text[:RESULT_CLIP] + f"\n… [{len(text) - RESULT_CLIP} chars cut]"


def _message_md(m: Message) -> list[str]:
    if m.is_meta:
        return ["_(attached context)_"]
    out = []
    for b in m.content:
        kind = b.get("type")
        if kind == "text" and b.get("text", "").strip():
            out.append(b["text"].strip())
        elif kind == "tool_use":
            out.append(f"**Tool: {b.get('name')}**\n" + _fence(json.dumps(b.get("input") or {}, indent=2)))
        elif kind == "tool_result":
            label = "Error" if b.get("is_error") else "Result"
            out.append(f"**{label}:**\n" + _fence(_result_text(b)))
        elif kind in ("image", "document"):
            out.append(f"_[{kind}]_")
    return out


def conversation_markdown(conv: Conversation) -> str:
    lines = [f"# Conversation {conv.session_id}", "",
             f"Exported {time.strftime('%Y-%m-%d %H:%M')} · model {conv.config.model} · {conv.config.cwd}", ""]
    role = None
    for m in conv.messages:
        if m.is_api_error:
            continue
        body = _message_md(m)
        if not body:
            continue
        results_only = m.role == "user" and all(b.get("type") == "tool_result" for b in m.content)
        heading = "Assistant" if m.role == "assistant" or results_only else "User"
        if heading != role:
            lines += [f"## {heading}", ""]
            role = heading
        for part in body:
            lines += [part, ""]
    return "\n".join(lines).rstrip() + "\n"


def default_name(conv: Conversation) -> str:
    first = next((m.text for m in conv.messages if m.role == "user" and not m.is_meta and m.text.strip()), "")
    slug = re.sub(r"[^a-z0-9]+", "-", first.lower()).strip("-")[:40].rstrip("-") or "conversation"
    return f"{time.strftime('%Y-%m-%d-%H%M%S')}-{slug}.md"


def clipboard_command() -> list[str] | None:
    """The clipboard tool of this desktop, if one is installed and its display is there (by its
    absolute path: never one planted in the project)."""
    from codeloop.shellpath import find_program

    if os.environ.get("WAYLAND_DISPLAY") and (wl := find_program("wl-copy")):
        return [wl]
    if os.environ.get("DISPLAY"):
        if xclip := find_program("xclip"):
            return [xclip, "-selection", "clipboard"]
        if xsel := find_program("xsel"):
            return [xsel, "--clipboard", "--input"]
    if pbcopy := find_program("pbcopy"):
        return [pbcopy]
    return None


def to_clipboard(text: str, argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, input=text.encode("utf-8"), timeout=5, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def export(conv: Conversation, target: str) -> str:
    """Write (or copy) the conversation; the line to show."""
    text = conversation_markdown(conv)
    if not target and (argv := clipboard_command()) is not None and to_clipboard(text, argv):
        return f"Conversation copied to the clipboard ({argv[0]}, {len(text):,} characters)."
    path = conv.config.cwd / os.path.expanduser(target or default_name(conv))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return f"/export: cannot write {path}: {exc}"
    return f"Conversation exported to {Path(path)}"


async def export_command(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.input.commands import CommandOutcome

    if not host.conv.messages:
        return CommandOutcome("Nothing to export yet: the conversation is empty.")
    return CommandOutcome(export(host.conv, args.strip()))
