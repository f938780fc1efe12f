"""Summary compaction: replace the history with a model-written summary (auto, reactive, /compact).

The post-compact history is one user message carrying the summary, followed by the last real
user request, so the model knows where it stands. Compaction must not fail for being too long:
when the summarisation request is itself too long, the oldest part of the history is dropped
(tool outputs first) and the request tried again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from codeloop.loop.recovery import CompactOutcome
from codeloop.messages import Message, to_api_messages, user_message
from codeloop.providers.assembly import ResponseAssembler
from codeloop.providers.base import ModelRequest, Provider
from codeloop.providers.errors import APIStatusError, ProviderError

COMPACT_INSTRUCTIONS = """\
Your task is to create a detailed summary of the conversation so far, paying close attention to \
the user's explicit requests and your previous actions. It must capture everything needed to \
continue the work without losing context: technical details, code patterns, decisions.

Write it with these sections:
1. Primary Request and Intent: every explicit request and intent of the user, in detail.
2. Key Technical Concepts: technologies, frameworks and concepts involved.
3. Files and Code Sections: files examined, modified or created, with why they matter and the \
important snippets.
4. Errors and Fixes: errors met and how they were fixed, including user feedback.
5. Problem Solving: problems solved and troubleshooting still going on.
6. All User Messages: every user message that is not a tool result, verbatim where short.
7. Pending Tasks: what you have been asked to do and have not done yet.
8. Current Work: precisely what was being worked on just before this summary.
9. Next Step: the next step, directly in line with the user's most recent request, quoting it.

Reply with the summary only, inside <summary></summary> tags. Do not call any tools."""

SUMMARY_PREFIX = ("This session is being continued from a previous conversation that ran out of context. "
                  "The conversation is summarized below:\n")


def estimate_tokens(messages: list[Message]) -> int:
    """A local estimate (≈4 characters a token) for what has no API usage figure yet."""
    return sum(len(json.dumps(m.content, ensure_ascii=False)) for m in messages) // 4


def last_user_request(messages: list[Message]) -> Message | None:
    for m in reversed(messages):
        if m.role == "user" and not m.is_meta and any(b.get("type") == "text" for b in m.content):
            return m
    return None


def _extract_summary(text: str) -> str:
    start, end = text.find("<summary>"), text.rfind("</summary>")
    if start != -1 and end > start:
        return text[start + len("<summary>"):end].strip()
    return text.strip()


def _drop_oldest(messages: list[Message]) -> list[Message]:
    """Make the history shorter: clear the oldest tool outputs first, then drop the oldest third."""
    out, cleared = [], False
    for m in messages:
        if not cleared and m.role == "user" and any(b.get("type") == "tool_result" and len(str(b.get("content"))) > 200
                                                     for b in m.content):
            m = Message(**{**m.__dict__, "content": [
                {**b, "content": "[tool output dropped to fit the summary request]"}
                if b.get("type") == "tool_result" else b for b in m.content]})
            cleared = True
        out.append(m)
    if cleared:
        return out
    return messages[len(messages) // 3:]


@dataclass
class Compactor:
    provider: Provider
    model: str
    max_summary_tokens: int = 8_192
    max_shrinks: int = 6

    async def _summarise(self, messages: list[Message], focus: str | None) -> str:
        instructions = COMPACT_INSTRUCTIONS + (f"\n\nFocus especially on: {focus}" if focus else "")
        history = to_api_messages([*messages, user_message(instructions)])
        request = ModelRequest(model=self.model, messages=history, max_tokens=self.max_summary_tokens,
                               system=[{"type": "text", "text": "You summarise coding sessions precisely."}])
        asm = ResponseAssembler()
        async for ev in self.provider.stream(request):
            asm.feed(ev)
        text = "".join(b.get("text", "") for b in asm.blocks if b.get("type") == "text")
        if not text.strip():
            raise ProviderError("the model returned an empty summary")
        return _extract_summary(text)

    async def compact(self, messages: list[Message], *, trigger: str = "auto", focus: str | None = None,
                      extra_context: list[Message] | None = None) -> CompactOutcome:
        pre_tokens = estimate_tokens(messages)
        attempt_messages = [m for m in messages if not m.is_api_error]
        for _ in range(self.max_shrinks + 1):
            try:
                summary = await self._summarise(attempt_messages, focus)
                break
            except APIStatusError as err:
                if not err.is_prompt_too_long or len(attempt_messages) <= 2:
                    raise
                attempt_messages = _drop_oldest(attempt_messages)
        else:
            raise ProviderError("history still too long to summarise after dropping the oldest parts")
        post = [user_message(SUMMARY_PREFIX + summary, is_meta=True)]
        post.extend(extra_context or [])
        last = last_user_request(messages)
        if last is not None:
            post.append(user_message("The user's most recent request, verbatim:\n" + last.text, is_meta=True))
        return CompactOutcome(messages=post, pre_tokens=pre_tokens, trigger=trigger, summary=summary)

    async def try_reactive_compact(self, *, has_attempted: bool, messages: list[Message],
                                   model: str) -> CompactOutcome | None:
        """Single shot (spec 004 §11.2): never twice in a turn; any failure means no recovery."""
        if has_attempted:
            return None
        try:
            return await self.compact(messages, trigger="auto")
        except ProviderError:
            return None
