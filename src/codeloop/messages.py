"""Conversation messages: our own type, shaped like the Anthropic Messages API.

Content blocks stay plain dicts (text, thinking, tool_use, tool_result, image) because they
cross every boundary as JSON: the wire, the transcript and stream-json output. This module owns
the constructors, the one translation to what the API accepts (`to_api_messages`), and how text
holding bytes that are not UTF-8 crosses those boundaries (`dumps_marked`).

Undecodable bytes (file names, command output) are carried inside as lone surrogates
(surrogateescape: byte 0xff → U+DCFF). The transcript keeps them losslessly (as \\udcff JSON
escapes); everything sent out — API requests, stdout — shows them as a visible `\\xff` marker,
since UTF-8 cannot encode them and a peer may reject lone surrogate escapes.
"""

from __future__ import annotations

import json
import operator
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant"]

INTERRUPT_MESSAGE = "[Request interrupted by user]"
INTERRUPT_MESSAGE_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
ENDED_BY_MODEL_TOOL_RESULT = "Not run: the conversation was ended by the model."
# What a prompt typed while the model was busy becomes when the loop folds it in (loop.queue);
# EndConversation recognises it as the user speaking.
QUEUED_PROMPT_TEMPLATE = (
    "<system-reminder>\nThe user sent the following message while you were working:\n{value}\n\n"
    "Please address this message and continue with your tasks.\n</system-reminder>")


# How a file read for a prompt (an @-mention, a named file) opens its meta message; the local
# model's request rendering tells such text from the user's own words by it.
READ_ATTACHMENT_HEAD = "Called the Read tool with the following input"


def new_uuid() -> str:
    """A random RFC 4122 version-4 UUID, as `str(uuid.uuid4())` gives (the uuid module imports
    `platform`, a few ms of every start-up)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40   # version 4
    b[8] = (b[8] & 0x3F) | 0x80   # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def now_iso() -> str:
    """A record's timestamp: UTC, milliseconds, `Z` suffix (as Claude Code's transcripts):
    `datetime.now(UTC).isoformat(timespec="milliseconds")`'s text, without loading datetime
    (start-up does not otherwise need it)."""
    seconds, ns = divmod(time.time_ns(), 1_000_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{ns // 1_000_000:03d}Z"


@dataclass
class Message:
    """One conversation message: its role, content blocks and metadata."""
    role: Role
    content: list[dict[str, Any]]
    uuid: str = field(default_factory=new_uuid)
    # Assistant messages are yielded one content block at a time; blocks of one API response
    # share `id` and are merged back together before they are sent to the API.
    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None
    is_meta: bool = False
    # A synthetic assistant message that reports an API error to the user; never sent back.
    is_api_error: bool = False
    # Structured result of a tool call (for front ends), carried beside the tool_result block.
    tool_use_result: Any = None
    parent_tool_use_id: str | None = None
    timestamp: str | None = None
    # A prompt the host sent as a plain string (the SDK's `query("…")`): the transcript keeps it a string.
    sent_as_text: bool = False

    @property
    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    def tool_result_ids(self) -> list[str]:
        return [b["tool_use_id"] for b in self.content if b.get("type") == "tool_result"]

    def api_message(self) -> dict[str, Any]:
        """The `message` object as Claude Code prints and stores it."""
        if self.role == "user":
            return {"role": "user", "content": self.content}
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.content,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self.usage,
        }


def user_message(content: str | list[dict[str, Any]], *, is_meta: bool = False, **kw: Any) -> Message:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return Message(role="user", content=blocks, is_meta=is_meta, **kw)


def tool_result_block(tool_use_id: str, content: str | list[dict[str, Any]], is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def tool_result_message(tool_use_id: str, content: str | list[dict[str, Any]], *, is_error: bool = False,
                        tool_use_result: Any = None) -> Message:
    return Message(role="user", content=[tool_result_block(tool_use_id, content, is_error)],
                   tool_use_result=tool_use_result)


def api_error_message(text: str) -> Message:
    return Message(role="assistant", content=[{"type": "text", "text": text}], is_api_error=True,
                   model="<synthetic>", stop_reason="stop_sequence")


def missing_tool_results(assistant_messages: list[Message], error: str,
                         answered: set[str] | None = None) -> list[Message]:
    """An error tool_result for every tool_use that has none, so nothing ever dangles."""
    answered = answered or set()
    out = []
    for msg in assistant_messages:
        for block in msg.tool_uses():
            if block["id"] not in answered:
                out.append(tool_result_message(block["id"], error, is_error=True, tool_use_result=error))
                answered.add(block["id"])
    return out


def extends(prefix: list[Any], items: list[Any]) -> bool:
    """Whether `items` starts with the very objects of `prefix` (identity, at C speed): the test
    every per-turn cache uses to reuse what it made for the previous, shorter history."""
    return len(prefix) <= len(items) and all(map(operator.is_, prefix, items))


def _user_content(msg: Message) -> list[dict[str, Any]]:
    # A new list, the blocks shared (as an assistant message's are): the request's cache breakpoint
    # replaces its block in the list instead of editing it, so history is never touched, and the
    # API messages kept for the next request (to_api_messages' cache) hold no copies of the history.
    return list(msg.content)


@dataclass
class ApiMessageCache:
    """What `to_api_messages` made last time: every API message but the last one is final (only
    the last can still take a merge), so a history that extends `source` restarts from `last_start`."""
    source: list[Message] = field(default_factory=list)
    done: list[dict[str, Any]] = field(default_factory=list)   # never mutated once here
    last_start: int = 0                                         # index in `source` that began the last one


def to_api_messages(messages: list[Message], cache: ApiMessageCache | None = None) -> list[dict[str, Any]]:
    """Translate history into a valid Messages API `messages` array.

    Merges the per-block assistant messages of one response, merges adjacent user messages
    (tool results first, as the API requires), drops synthetic error messages and empty turns.
    With a `cache`, the API messages of an unchanged prefix are reused (the same dicts: callers
    treat all but the last as read-only) and only the rest is converted; the last one is always new.
    """
    out: list[dict[str, Any]] = []
    start = 0
    if cache is not None and cache.source and extends(cache.source, messages):
        out, start = list(cache.done), cache.last_start
    elif cache is not None:   # a rewound or rewritten history: let the old messages go first
        cache.source, cache.done = [], []
    last_start = start
    for i in range(start, len(messages)):
        msg = messages[i]
        if msg.is_api_error or not msg.content:
            continue
        if msg.role == "assistant":
            blocks = [b for b in msg.content if not (b.get("type") == "text" and not b.get("text"))]
            if not blocks:
                continue
            # The API requires alternation, so adjacent assistant messages always merge.
            if out and out[-1]["role"] == "assistant":
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": "assistant", "content": list(blocks)})
                last_start = i
        else:
            content = _user_content(msg)
            if out and out[-1]["role"] == "user":
                prev = out[-1]["content"]
                results = [b for b in prev + content if b.get("type") == "tool_result"]
                others = [b for b in prev + content if b.get("type") != "tool_result"]
                out[-1]["content"] = results + others
            else:
                out.append({"role": "user", "content": content})
                last_start = i
    if cache is not None:
        cache.source, cache.done, cache.last_start = list(messages), out[:-1], last_start
    return out


_SURROGATE: re.Pattern[str] | None = None   # compiled on first use: start-up time matters


def _mark(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def mark_undecodable(text: str) -> str:
    """`text` with each lone surrogate replaced by a visible escape: U+DCFF (byte 0xff) → `\\xff`."""
    global _SURROGATE
    if _SURROGATE is None:
        _SURROGATE = re.compile("[\ud800-\udfff]")
    return _SURROGATE.sub(_mark, text)


def _scrub(obj: Any) -> Any:
    if isinstance(obj, str):
        return mark_undecodable(obj)
    if isinstance(obj, dict):
        return {_scrub(k): _scrub(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_scrub(v) for v in obj]
    return obj


def dumps_marked(obj: Any, **kw: Any) -> str:
    """`json.dumps(obj, ensure_ascii=False)` whose result is always encodable as UTF-8.

    The common case costs one dump plus one encode check; only text that holds undecodable bytes
    is walked and marked."""
    kw.setdefault("ensure_ascii", False)
    text = json.dumps(obj, **kw)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(_scrub(obj), **kw)
    return text


_WIRE: json.JSONEncoder | None = None   # json.dumps builds an encoder per call with these options


def wire_json(obj: Any) -> bytes:
    """A request body as UTF-8 JSON bytes (compact, like httpx's own `json=`); `dumps_marked`'s
    marking of undecodable text, with one encoder kept and the text encoded once.

    orjson writes it once something has imported it (reading a transcript does: a resumed session's
    history encodes ~10× faster; a new session's small bodies do not wait for its import), the same JSON
    values as `json` (a float may be spelled differently: 1e-05 as 0.00001; NaN, which `json` here
    refuses, is written null — still valid JSON); what it refuses —
    lone surrogates, integers beyond 64 bits, keys that are not strings, objects json would refuse
    too — goes to `json`, which marks or raises as before."""
    global _WIRE
    from codeloop.jsonload import fast_module

    fast = fast_module(if_loaded=True)
    if fast is not None:
        try:
            # dataclasses and datetimes are refused as json refuses them (orjson would write them)
            return fast.dumps(obj, option=fast.OPT_PASSTHROUGH_DATACLASS | fast.OPT_PASSTHROUGH_DATETIME)
        except TypeError:   # orjson.JSONEncodeError
            pass
    if _WIRE is None:
        _WIRE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return _WIRE.encode(obj).encode("utf-8")
    except UnicodeEncodeError:
        return _WIRE.encode(_scrub(obj)).encode("utf-8")


def user_context_message(ctx: dict[str, str]) -> Message:
    """The user context (CLAUDE.md, date) as the meta message prepended to every request."""
    body = "\n".join(f"# {k}\n{v}" for k, v in ctx.items())
    text = ("<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
            f"{body}\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should "
            "not respond to this context unless it is highly relevant to your task.\n</system-reminder>\n")
    return user_message(text, is_meta=True)
