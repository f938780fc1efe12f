"""Summary compaction: replace the history with a model-written summary (auto, reactive, /compact).

Owns the summarisation request and the post-compact history, which keeps what matters:
the summary; the user's CLAUDE.md instructions re-injected; the todo list verbatim; the files
recently read or edited, re-read fresh from disk within a budget (only if no symbolic link leads
there now, and only regular files); the last user request.

The summary request is the conversation's own request (its tools, system prompt, user context,
thinking and history, with their cache breakpoints) with the summary instructions appended, as
Claude Code sends it: everything up to the instructions is read from the prompt cache the last
turn wrote. A model that answers it with a tool call instead of text gets the plain request
(a short system prompt, no tools) — so does any session that supplied no `RequestPrefix`.

Compaction must never fail for being too long. When the summarisation request itself is
too long: first the oldest half of the tool outputs is dropped, then all of them; then the
history is summarised in chunks — the older part first, then the rest given that summary —
splitting any chunk that is still too long.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codeloop.context.tokens import TokenCounter
from codeloop.loop.request import EPHEMERAL, build_request
from codeloop.loop.recovery import CompactOutcome
from codeloop.messages import Message, to_api_messages, user_message
from codeloop.providers.assembly import assemble, text_of
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
INSTRUCTIONS_PREFIX = ("<system-reminder>\nThe user's instructions (CLAUDE.md), re-stated after compaction. "
                       "They OVERRIDE default behaviour; follow them exactly as written.\n\n")
TODOS_PREFIX = "Your todo list at the time of compaction (verbatim, still current):\n"
LAST_REQUEST_PREFIX = "The user's most recent request, verbatim:\n"
DROPPED_OUTPUT = "[tool output dropped to fit the summary request]"
FILE_TOOLS = {"Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
              "NotebookEdit": "notebook_path"}
MAX_RECENT_FILES = 5
RECENT_FILES_BUDGET_CHARS = 50_000
_RENDER_TOOL_CHARS = 1_000
_RENDER_TEXT_CHARS = 20_000


def estimate_tokens(messages: list[Message]) -> int:
    """Tokens the history amounts to: last API usage plus a local estimate of what followed."""
    return TokenCounter().estimate_next(messages)


def last_user_request(messages: list[Message]) -> Message | None:
    for m in reversed(messages):
        if m.role == "user" and not m.is_meta and any(b.get("type") == "text" for b in m.content):
            return m
    return None


def recent_files_from_messages(messages: list[Message], limit: int = MAX_RECENT_FILES) -> list[str]:
    """Paths of files read or edited, most recent first, each once."""
    seen: list[str] = []
    for m in reversed(messages):
        if m.role != "assistant":
            continue
        for b in reversed(m.content):
            key = FILE_TOOLS.get(b.get("name", "")) if b.get("type") == "tool_use" else None
            path = (b.get("input") or {}).get(key) if key else None
            if isinstance(path, str) and path and path not in seen:
                seen.append(path)
                if len(seen) >= limit:
                    return seen
    return seen


def _resolve(path: str, cwd: Path | None) -> Path:
    p = Path(path).expanduser()
    return cwd / p if not p.is_absolute() and cwd is not None else p


def _read_fresh(p: Path, limit: int) -> tuple[str, bool] | None:
    from codeloop.permissions.project_files import read_unlinked

    # The model read this file through the permission checks; what is at the path now may have been
    # swapped (by a command) for a link to a secret or for a FIFO: only a plain file is re-read.
    raw = read_unlinked(p, limit * 4 + 1)
    if raw is None:          # vanished, a directory, a link now, unreadable: nothing to re-inject
        return None
    if b"\x00" in raw[:8192]:
        return None          # binary
    text = raw.decode("utf-8", "replace")
    return (text[:limit], True) if len(text) > limit else (text, False)


def build_post_compact_messages(summary: str, *, instructions: str | None = None,
                                todos: list[dict[str, Any]] | None = None,
                                recent_files: list[str] | None = None, last_request: Message | None = None,
                                extra_context: list[Message] | None = None, cwd: Path | None = None,
                                max_files: int = MAX_RECENT_FILES,
                                files_budget_chars: int = RECENT_FILES_BUDGET_CHARS) -> list[Message]:
    """The history that replaces everything before a compact boundary (all user/meta messages)."""
    post = [user_message(SUMMARY_PREFIX + summary, is_meta=True)]
    if instructions and instructions.strip():
        post.append(user_message(INSTRUCTIONS_PREFIX + instructions + "\n</system-reminder>", is_meta=True))
    if todos:
        post.append(user_message(TODOS_PREFIX + json.dumps(todos, indent=2, ensure_ascii=False), is_meta=True))
    budget, shown, seen = files_budget_chars, 0, set()
    for path in recent_files or []:
        if budget <= 0 or shown >= max_files:
            break
        if "\0" in path:
            continue      # a path the model wrote that no file can have
        resolved = _resolve(path, cwd)
        key = os.path.realpath(resolved)
        if key in seen:   # the same file named relatively and absolutely
            continue
        seen.add(key)
        got = _read_fresh(resolved, budget)
        if got is None:
            continue
        shown += 1
        text, truncated = got
        budget -= len(text)
        note = ", truncated to fit the budget" if truncated else ""
        post.append(user_message(f"Contents of {path} as it is now (re-read from disk after compaction{note}):\n"
                                 f"```\n{text}\n```", is_meta=True))
    post.extend(extra_context or [])
    if last_request is not None and last_request.text.strip():
        post.append(user_message(LAST_REQUEST_PREFIX + last_request.text, is_meta=True))
    return post


def _extract_summary(text: str) -> str:
    start, end = text.find("<summary>"), text.rfind("</summary>")
    if start != -1 and end > start:
        return text[start + len("<summary>"):end].strip()
    return text.strip()


def drop_old_tool_outputs(messages: list[Message], fraction: float) -> list[Message]:
    """Copy with the oldest `fraction` of sizeable tool outputs replaced by a short marker."""
    sizeable = [(i, b.get("tool_use_id")) for i, m in enumerate(messages) if m.role == "user"
                for b in m.content if b.get("type") == "tool_result" and len(str(b.get("content"))) > 200]
    victims = {tid for _, tid in sizeable[:max(0, round(len(sizeable) * fraction))]}
    if not victims:
        return list(messages)
    out = []
    for m in messages:
        if m.role == "user" and any(b.get("tool_use_id") in victims for b in m.content):
            m = Message(**{**m.__dict__, "content": [
                {**b, "content": DROPPED_OUTPUT} if b.get("type") == "tool_result"
                and b.get("tool_use_id") in victims else b for b in m.content]})
        out.append(m)
    return out


def render_transcript(messages: list[Message]) -> str:
    """Plain-text form of history for chunked summaries (no tool pairing rules to respect)."""
    lines = []
    for m in messages:
        for b in m.content:
            kind = b.get("type")
            if kind == "text" and (b.get("text") or "").strip():
                who = "User" if m.role == "user" else "Assistant"
                lines.append(f"{who}: {_clip(b['text'], _RENDER_TEXT_CHARS)}")
            elif kind == "tool_use":
                lines.append(f"Assistant called {b.get('name')}("
                             f"{_clip(json.dumps(b.get('input'), ensure_ascii=False), _RENDER_TOOL_CHARS)})")
            elif kind == "tool_result":
                content = b.get("content")
                if isinstance(content, list):
                    content = "\n".join(x.get("text") or "[image]" for x in content if isinstance(x, dict))
                flag = " (error)" if b.get("is_error") else ""
                lines.append(f"Tool result{flag}: {_clip(str(content), _RENDER_TOOL_CHARS)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class RequestPrefix:
    """What the conversation's last request was made of, but its messages: the summary request
    reuses it so that its prefix is the one already in the prompt cache."""
    system_prompt: list[str]
    user_context: dict[str, str]
    tools: list[Any]
    thinking: dict[str, Any] | None = None


def _mark_before_last(request: ModelRequest) -> None:
    """A second breakpoint on the history's last block (the one before the instructions): the
    cache entry the conversation's next request would read stays written whatever the answer.
    The message is copied, never edited: the API messages before the last are shared with the
    conversation's per-turn cache (loop.request)."""
    where = [(j, i) for j, m in enumerate(request.messages) for i in range(len(m["content"]))]
    if len(where) < 2:
        return
    j, i = where[-2]
    message = request.messages[j]
    if message["content"][i].get("type") in ("text", "tool_result", "image", "tool_use"):
        content = list(message["content"])
        content[i] = {**content[i], "cache_control": EPHEMERAL}
        request.messages[j] = {**message, "content": content}


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + f" …[{len(s) - n} more chars]"


def _too_long(err: Exception) -> bool:
    return isinstance(err, APIStatusError) and err.is_prompt_too_long


@dataclass
class Compactor:
    """Summarises the conversation history with a model call when the context runs full."""
    provider: Provider
    model: str
    max_summary_tokens: int = 8_192
    max_chunk_requests: int = 16
    # Supplies instructions / todos / recent_files / cwd when a caller (the reactive path) has none.
    context: Callable[[], dict[str, Any]] | None = None
    # Told before every compaction (the PreCompact hook): (trigger, focus) → awaitable.
    before_compact: Callable[[str, str | None], Awaitable[None]] | None = None
    # (trigger, summary) → messages to append to the compacted history (PostCompact/SessionStart hooks)
    after_compact: Callable[[str, str], Awaitable[list[Message]]] | None = None
    # Told after every compaction that succeeded, whatever its trigger (the context pipeline
    # listens: its autocompact breaker re-arms).
    on_success: list[Callable[[CompactOutcome], None]] = field(default_factory=list)
    # Told when a compaction starts, (trigger), and ends, (trigger, succeeded): stream-json's
    # `system/status` lines for the automatic ones a front end cannot see coming.
    on_start: list[Callable[[str], None]] = field(default_factory=list)
    on_end: list[Callable[[str, bool], None]] = field(default_factory=list)
    # The conversation's current request prefix (None: the plain summary request, as before).
    prefix: Callable[[], RequestPrefix | None] | None = None

    async def _request(self, api_messages: list[dict[str, Any]]) -> str:
        request = ModelRequest(model=self.model, messages=api_messages, max_tokens=self.max_summary_tokens,
                               system=[{"type": "text", "text": "You summarise coding sessions precisely."}])
        text = text_of(await assemble(self.provider, request))
        if not text.strip():
            raise ProviderError("the model returned an empty summary")
        return _extract_summary(text)

    def _instructions(self, focus: str | None) -> str:
        return COMPACT_INSTRUCTIONS + (f"\n\nFocus especially on: {focus}" if focus else "")

    async def _summarise(self, messages: list[Message], focus: str | None) -> str:
        ask = user_message(self._instructions(focus))
        prefix = self.prefix() if self.prefix is not None else None
        if prefix is not None:
            request = build_request(model=self.model, messages=[*messages, ask], system_prompt=prefix.system_prompt,
                                    user_context=prefix.user_context, tools=prefix.tools, thinking=prefix.thinking)
            _mark_before_last(request)
            answer = await assemble(self.provider, request)
            text = text_of(answer)
            # tools were on offer: a model that called one instead of writing is asked plainly
            if text.strip() or not any(b.get("type") == "tool_use" for b in answer.blocks):
                if not text.strip():
                    raise ProviderError("the model returned an empty summary")
                return _extract_summary(text)
        return await self._request(to_api_messages([*messages, ask]))

    async def _summarise_text(self, text: str, prior: str | None, focus: str | None, part: str) -> str:
        head = (f"Summary of the earlier part of the conversation:\n<previous-summary>\n{prior}\n"
                "</previous-summary>\n\nThe conversation then continued:\n" if prior else
                "Here is the conversation so far" + (" (first part)" if part != "only" else "") + ":\n")
        body = f"{head}<conversation>\n{text}\n</conversation>\n\n{self._instructions(focus)}"
        if prior:
            body += "\nMerge the previous summary and the continuation into one summary of the whole."
        return await self._request([{"role": "user", "content": [{"type": "text", "text": body}]}])

    async def _summarise_chunked(self, messages: list[Message], focus: str | None) -> str:
        mid = max(1, len(messages) // 2)
        queue = [messages[:mid], messages[mid:]] if len(messages) > 1 else [messages]
        summary: str | None = None
        for _ in range(self.max_chunk_requests):
            if not queue:
                break
            chunk = queue.pop(0)
            try:
                summary = await self._summarise_text(render_transcript(chunk), summary, focus,
                                                     "last" if not queue else "part")
            except APIStatusError as err:
                if not _too_long(err) or len(chunk) < 2:
                    raise
                half = len(chunk) // 2
                queue[:0] = [chunk[:half], chunk[half:]]
        if queue or summary is None:
            raise ProviderError("history still too long to summarise in chunks")
        return summary

    async def summarise(self, messages: list[Message], focus: str | None = None) -> str:
        """A summary whatever the history's size (see the module docstring for the fallbacks)."""
        attempt = [m for m in messages if not m.is_api_error]
        tried: list[list[Message]] = []
        for fraction in (0.0, 0.5, 1.0):
            candidate = drop_old_tool_outputs(attempt, fraction) if fraction else attempt
            if tried and all(a is b for a, b in zip(candidate, tried[-1])):
                continue     # nothing more to drop: this shape failed already
            tried.append(candidate)
            try:
                return await self._summarise(candidate, focus)
            except APIStatusError as err:
                if not _too_long(err):
                    raise
        return await self._summarise_chunked(tried[-1], focus)

    async def compact(self, messages: list[Message], *, trigger: Literal["auto", "manual"] = "auto",
                      focus: str | None = None, extra_context: list[Message] | None = None,
                      instructions: str | None = None,
                      todos: list[dict[str, Any]] | None = None, recent_files: list[str] | None = None,
                      cwd: Path | None = None) -> CompactOutcome:
        for started in list(self.on_start):
            started(trigger)
        ok = False
        try:
            outcome = await self._compact(messages, trigger=trigger, focus=focus, extra_context=extra_context,
                                          instructions=instructions, todos=todos, recent_files=recent_files, cwd=cwd)
            ok = True
            return outcome
        finally:
            for ended in list(self.on_end):
                ended(trigger, ok)

    async def _compact(self, messages: list[Message], *, trigger: Literal["auto", "manual"],
                       focus: str | None, extra_context: list[Message] | None, instructions: str | None,
                       todos: list[dict[str, Any]] | None, recent_files: list[str] | None,
                       cwd: Path | None) -> CompactOutcome:
        if self.before_compact is not None:
            await self.before_compact(trigger, focus)
        ctx = self.context() if self.context is not None else {}
        instructions = instructions if instructions is not None else ctx.get("instructions")
        todos = todos if todos is not None else ctx.get("todos")
        recent_files = recent_files if recent_files is not None else ctx.get("recent_files")
        if recent_files is None:
            recent_files = recent_files_from_messages(messages)
        cwd = cwd if cwd is not None else ctx.get("cwd")
        pre_tokens = estimate_tokens(messages)
        summary = await self.summarise(messages, focus)
        post = build_post_compact_messages(summary, instructions=instructions, todos=todos,
                                           recent_files=recent_files, last_request=last_user_request(messages),
                                           extra_context=extra_context, cwd=Path(cwd) if cwd else None)
        if self.after_compact is not None:
            post = [*post, *await self.after_compact(trigger, summary)]
        outcome = CompactOutcome(messages=post, pre_tokens=pre_tokens, trigger=trigger, summary=summary)
        for listener in self.on_success:
            listener(outcome)
        return outcome

    async def try_reactive_compact(self, *, has_attempted: bool, messages: list[Message],
                                   model: str) -> CompactOutcome | None:
        """Single shot (spec 004 §11.2): never twice in a turn; any failure means no recovery."""
        if has_attempted:
            return None
        try:
            return await self.compact(messages, trigger="auto")
        except ProviderError:
            return None
