"""Tool-use summary (spec 004 §13.1): a short label for a batch of tool calls, made on the side.

While the next model call streams, a small model turns the batch of tool calls just finished
into a git-commit-style label ("Fixed NPE in UserService") for compact UIs. This module owns
that request and the task wrapping it. It is decoration: every failure yields None, never an
exception, and the loop only ever awaits the task after it has something better to do.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from codeloop.providers.assembly import ResponseAssembler
from codeloop.providers.base import ModelRequest, Provider

SUMMARY_MODEL = "claude-haiku-4-5"
SUMMARY_MAX_TOKENS = 60
# Per field; the label needs the gist of each call, not its full output.
FIELD_CHARS = 300
INTENT_CHARS = 200

SUMMARY_SYSTEM_PROMPT = """\
Write a 3-8 word label describing what these tool calls accomplished, in the style of a \
git commit subject: past-tense verb first, then the most distinctive noun. It appears as a \
single-line row in a narrow UI, so drop articles and long paths. No punctuation at the end, \
no quotes, no preamble: reply with the label only.

Examples:
Searched auth module for token refresh
Fixed NPE in UserService
Created signup endpoint
Ran failing tests"""


def _clip(value: Any, limit: int = FIELD_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def summary_prompt(tools: list[dict[str, Any]], last_assistant_text: str) -> str:
    calls = "\n\n".join(
        f"Tool: {t.get('name', '?')}\nInput: {_clip(t.get('input', {}))}\nOutput: {_clip(t.get('output', ''))}"
        for t in tools)
    intent = last_assistant_text.strip()
    prefix = f"Assistant's last message (the intent): {_clip(intent, INTENT_CHARS)}\n\n" if intent else ""
    return f"{prefix}Tool calls completed:\n\n{calls}\n\nLabel:"


async def generate_tool_use_summary(provider: Provider, *, model: str, tools: list[dict[str, Any]],
                                    last_assistant_text: str) -> str | None:
    """The label, or None when there is nothing to summarize or anything goes wrong."""
    if not tools:
        return None
    request = ModelRequest(
        model=model, max_tokens=SUMMARY_MAX_TOKENS,
        system=[{"type": "text", "text": SUMMARY_SYSTEM_PROMPT}],
        messages=[{"role": "user", "content": [
            {"type": "text", "text": summary_prompt(tools, last_assistant_text)}]}])
    try:
        assembler = ResponseAssembler()
        events = provider.stream(request)
        try:
            async for event in events:
                assembler.feed(event)
        finally:
            # Providers are async generators; close explicitly so the HTTP stream is released now.
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        text = "".join(b.get("text", "") for b in assembler.blocks if b.get("type") == "text")
    except Exception:  # noqa: BLE001 — a missing label must never disturb the turn
        return None
    return text.strip() or None


def start_tool_use_summary(provider: Provider, *, model: str, tools: list[dict[str, Any]],
                           last_assistant_text: str,
                           tool_use_ids: list[str]) -> asyncio.Task[dict[str, Any] | None]:
    """Schedule the summary; the task's result is {"summary", "preceding_tool_use_ids"} or None.

    The loop keeps the task in `State.pending_tool_use_summary` and yields its result at the top
    of the next iteration; cancel it on abort. Inputs are copied so later mutation of the
    caller's lists cannot change which calls the label describes.
    """
    ids, tools = list(tool_use_ids), list(tools)

    async def run() -> dict[str, Any] | None:
        summary = await generate_tool_use_summary(provider, model=model, tools=tools,
                                                  last_assistant_text=last_assistant_text)
        return {"summary": summary, "preceding_tool_use_ids": ids} if summary else None

    return asyncio.get_running_loop().create_task(run(), name="tool-use-summary")
