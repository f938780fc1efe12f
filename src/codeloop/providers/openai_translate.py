"""Translation between our Anthropic-shaped requests/events and OpenAI Chat Completions.

Owns both directions, with no I/O: `chat_body(request, ...)` builds the JSON body for
`POST /chat/completions`, and `StreamTranslator` turns parsed `chat.completion.chunk` objects
into the Anthropic stream events the loop consumes (message_start, content_block_*,
message_delta, message_stop). `openai_compat.py` owns the HTTP and error side.

Given the names of the offered tools, the translator also turns a reply whose whole text is a
tool call written out as text (see `text_tools.py`) into real tool_use blocks: such text is held
back while it may still be a call, and released as ordinary text as soon as it cannot be.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import Any

from codeloop.messages import new_uuid
from codeloop.providers.text_tools import could_be_call, parse_text_calls

log = logging.getLogger(__name__)


class StopReason(str, Enum):
    """Our (Anthropic) stop reasons that an OpenAI `finish_reason` maps onto."""
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"


FINISH_REASONS: dict[str, StopReason] = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


class BlockKind(str, Enum):
    TEXT = "text"
    THINKING = "thinking"
    TOOL = "tool_use"


# -- request: ModelRequest → Chat Completions body -------------------------------------------------

def _image_part(block: dict[str, Any]) -> dict[str, Any] | None:
    src = block.get("source") or {}
    if src.get("type") == "base64":
        url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
    elif src.get("type") == "url":
        url = src.get("url", "")
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def _user_parts(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text" and b.get("text"):
            parts.append({"type": "text", "text": b["text"]})
        elif kind == "image":
            part = _image_part(b)
            if part is not None:
                parts.append(part)
        elif kind == "document":
            parts.append({"type": "text",
                          "text": "[a document attachment was omitted: not supported by this provider]"})
    return parts


def _user_message(parts: list[dict[str, Any]]) -> dict[str, Any]:
    # Text-only content goes as a plain string: some local servers reject content arrays.
    if all(p["type"] == "text" for p in parts):
        return {"role": "user", "content": "\n\n".join(p["text"] for p in parts)}
    return {"role": "user", "content": parts}


def _translate_user(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    out: list[dict[str, Any]] = []
    tool_images: list[dict[str, Any]] = []
    for b in content:
        if b.get("type") != "tool_result":
            continue
        inner = b.get("content")
        text = _text_of(inner)
        images = [p for p in _user_parts(inner) if p["type"] == "image_url"] if isinstance(inner, list) else []
        if images:
            # Tool messages carry text only: images travel in the user message that follows.
            tool_images += [{"type": "text", "text": f"[image(s) returned by tool call {b.get('tool_use_id')}]"},
                            *images]
            text = text or "[image output follows in the next message]"
        if b.get("is_error"):
            text = f"Error: {text}"
        out.append({"role": "tool", "tool_call_id": b.get("tool_use_id", ""), "content": text})
    parts = tool_images + _user_parts([b for b in content if b.get("type") != "tool_result"])
    if parts:
        out.append(_user_message(parts))
    return out


def _translate_assistant(content: Any) -> dict[str, Any] | None:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    calls = [{"id": b.get("id", ""), "type": "function",
              "function": {"name": b.get("name", ""), "arguments": json.dumps(b.get("input") or {})}}
             for b in content if b.get("type") == "tool_use"]
    # thinking / redacted_thinking blocks are dropped: no Chat Completions server accepts them back.
    if not text and not calls:
        return None
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def chat_messages(system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system_text = "\n\n".join(b.get("text", "") for b in system if b.get("text"))
    if system_text:
        out.append({"role": "system", "content": system_text})
    for m in messages:
        if m.get("role") == "assistant":
            msg = _translate_assistant(m.get("content"))
            if msg is not None:
                out.append(msg)
        else:
            out.extend(_translate_user(m.get("content")))
    return out


def chat_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Anthropic server tools (web_search_…) have no input_schema and no Chat Completions form.
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t["input_schema"]}}
            for t in tools if "input_schema" in t]


def chat_body(request: Any, *, max_tokens_field: str = "max_tokens", send_tools: bool = True) -> dict[str, Any]:
    """The JSON body for POST /chat/completions from an Anthropic-shaped `ModelRequest`."""
    body: dict[str, Any] = {"model": request.model, "messages": chat_messages(request.system, request.messages),
                            "stream": True, "stream_options": {"include_usage": True},
                            max_tokens_field: request.max_tokens}
    tools = chat_tools(request.tools) if send_tools else []
    if tools:
        body["tools"] = tools
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


# -- stream: chat.completion.chunk → Anthropic events -------------------------------------------

def map_usage(usage: dict[str, Any]) -> dict[str, int]:
    """OpenAI usage → ours. prompt_tokens includes cached tokens; our input_tokens does not."""
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or usage.get("cached_tokens") or 0)
    prompt = int(usage.get("prompt_tokens") or 0)
    return {"input_tokens": max(0, prompt - cached), "output_tokens": int(usage.get("completion_tokens") or 0),
            "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0}


class _ToolCall:
    def __init__(self, key: int) -> None:
        self.key, self.id, self.name = key, "", ""
        self.fragments: list[str] = []


class StreamTranslator:
    """Feed parsed chunks with `feed(chunk)`, then `finish()`; both yield Anthropic events.

    Text and reasoning stream through as deltas. A tool call is buffered until it is complete
    (a different call index starts, another kind of content starts, or the choice finishes)
    and then emitted as one tool_use block, so a call whose arguments arrive fragmented across
    deltas and one that arrives whole in a single chunk give the same events.

    With `tool_names` (the offered tools), a reply whose whole text is a tool call becomes that
    call. A call naming a tool that was not offered is still emitted as a tool_use: the loop
    answers it with a "No such tool available" error result the model sees and can correct,
    rather than the blob being reported as a successful answer. With `answer_key`, a whole-text
    `{"<answer_key>": "…"}` object (the constrained mode's final answer) becomes plain text.
    `input_defaults` fills in arguments a text call leaves out (the constrained mode offers only
    a tool's required ones); `fix_input(name, input)`, when given, then rewrites a text call's
    input (the local profile takes Read's pasted line numbers out of what Write and Edit write),
    or returns (name, input) to make it another call (a change made again becomes a look).
    """

    def __init__(self, model: str, *, tool_names: Iterable[str] = (), answer_key: str | None = None,
                 input_defaults: dict[str, dict[str, Any]] | None = None,
                 fix_input: Callable[[str, dict[str, Any]], dict[str, Any] | tuple[str, dict[str, Any]]] | None = None,
                 fix_answer: Callable[[str], str] | None = None) -> None:
        self.model = model
        self.fix_input = fix_input
        self.fix_answer = fix_answer   # rewrites a constrained final answer (the local profile's)
        self.tool_names = frozenset(tool_names)
        self.answer_key = answer_key
        self.input_defaults = input_defaults or {}  # per tool: arguments a text call leaves out
        # text held back while it may still be a text tool call; None once the reply is decided
        self._held: list[str] | None = [] if (self.tool_names or answer_key) else None
        self.started = False
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {}
        self._index = -1                          # index of the last block opened
        self._open: BlockKind | None = None       # the text/thinking block currently open
        self._call: _ToolCall | None = None       # the tool call being accumulated
        self._done_keys: set[int] = set()
        self._saw_tool = False

    def _start(self, chunk: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if self.started:
            return
        self.started = True
        self.model = chunk.get("model") or self.model
        usage = map_usage(chunk["usage"]) if chunk.get("usage") else {"input_tokens": 0, "output_tokens": 0}
        yield {"type": "message_start", "message": {
            "id": chunk.get("id") or f"chatcmpl-{new_uuid().replace('-', '')[:24]}",
            "type": "message", "role": "assistant",
            "model": self.model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}

    def feed(self, chunk: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield from self._start(chunk)
        if chunk.get("usage"):
            self.usage = map_usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue  # we never ask for n > 1
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                yield from self._stream(BlockKind.THINKING, reasoning)
            if isinstance(delta.get("content"), str) and delta["content"]:
                yield from self._text(delta["content"])
            for tc in delta.get("tool_calls") or []:
                yield from self._tool_delta(tc)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                yield from self._close_all()

    def finish(self) -> Iterator[dict[str, Any]]:
        """Close what is open and end the message (call once the stream is over)."""
        yield from self._start({})
        yield from self._close_all()
        stop = FINISH_REASONS.get(self.finish_reason or "", StopReason.END_TURN)
        if stop is StopReason.END_TURN and self._saw_tool:
            stop = StopReason.TOOL_USE  # some servers (older Ollama) say "stop" after tool calls
        yield {"type": "message_delta", "delta": {"stop_reason": stop.value, "stop_sequence": None},
               "usage": dict(self.usage) if self.usage else {"output_tokens": 0}}
        yield {"type": "message_stop"}

    # -- text that may be a tool call ----------------------------------------------------------
    def _text(self, text: str) -> Iterator[dict[str, Any]]:
        if self._held is None:
            yield from self._stream(BlockKind.TEXT, text)
            return
        self._held.append(text)
        if not could_be_call("".join(self._held)):
            held, self._held = "".join(self._held), None
            yield from self._stream(BlockKind.TEXT, held)

    def _settle(self) -> Iterator[dict[str, Any]]:
        """Decide what the held text is (called when the text ends): calls, an answer, or text."""
        text, self._held = "".join(self._held or []), None
        reply = parse_text_calls(text, answer_key=self.answer_key)
        if reply is not None and reply.answer is not None:
            yield from self._stream(BlockKind.TEXT, self.fix_answer(reply.answer) if self.fix_answer else reply.answer)
        elif reply is not None and reply.calls and self.tool_names:
            unknown = [c.name for c in reply.calls if c.name not in self.tool_names]
            if unknown:
                log.info("text tool call names tool(s) not offered: %s", ", ".join(unknown))
            if self._open is not None:
                yield {"type": "content_block_stop", "index": self._index}
                self._open = None
            for call in reply.calls:
                self._saw_tool = True
                name, inp = call.name, {**self.input_defaults.get(call.name, {}), **call.input}
                if self.fix_input is not None:
                    fixed = self.fix_input(name, inp)
                    name, inp = fixed if isinstance(fixed, tuple) else (name, fixed)
                self._index += 1
                yield {"type": "content_block_start", "index": self._index, "content_block": {
                    "type": "tool_use", "id": f"call_{new_uuid().replace('-', '')[:24]}", "name": name,
                    "input": {}}}
                yield {"type": "content_block_delta", "index": self._index,
                       "delta": {"type": "input_json_delta",
                                 "partial_json": json.dumps(inp)}}
                yield {"type": "content_block_stop", "index": self._index}
        elif text:
            yield from self._stream(BlockKind.TEXT, text)

    # -- blocks --------------------------------------------------------------------------------
    def _stream(self, kind: BlockKind, text: str) -> Iterator[dict[str, Any]]:
        if self._open is not kind:
            yield from self._close_all()
            self._index += 1
            self._open = kind
            block = ({"type": "text", "text": ""} if kind is BlockKind.TEXT
                     # No signature: this reasoning can never be sent back (translation drops it).
                     else {"type": "thinking", "thinking": "", "signature": ""})
            yield {"type": "content_block_start", "index": self._index, "content_block": block}
        delta = ({"type": "text_delta", "text": text} if kind is BlockKind.TEXT
                 else {"type": "thinking_delta", "thinking": text})
        yield {"type": "content_block_delta", "index": self._index, "delta": delta}

    def _tool_delta(self, tc: dict[str, Any]) -> Iterator[dict[str, Any]]:
        key = tc.get("index")
        call = self._call
        if key is None:  # some dialects (Mistral) omit the index: a new id means a new call
            if call is not None and (not tc.get("id") or tc.get("id") == call.id):
                key = call.key
            else:
                key = max(self._done_keys | ({call.key} if call else set()), default=-1) + 1
        if key in self._done_keys:
            log.warning("ignoring a late fragment for tool call index %s that was already complete", key)
            return
        if call is None or call.key != key:
            yield from self._close_all()
            call = self._call = _ToolCall(key)
        fn = tc.get("function") or {}
        call.id = call.id or tc.get("id") or ""
        call.name = call.name or fn.get("name") or ""
        args = fn.get("arguments")
        if isinstance(args, (dict, list)):  # a few servers send the arguments as an object
            call.fragments = [json.dumps(args)]
        elif isinstance(args, str) and args:
            call.fragments.append(args)

    def _close_all(self) -> Iterator[dict[str, Any]]:
        if self._held:
            yield from self._settle()
        if self._open is not None:
            yield {"type": "content_block_stop", "index": self._index}
            self._open = None
        call, self._call = self._call, None
        if call is None:
            return
        self._done_keys.add(call.key)
        self._saw_tool = True
        self._index += 1
        yield {"type": "content_block_start", "index": self._index, "content_block": {
            "type": "tool_use", "id": call.id or f"call_{new_uuid().replace('-', '')[:24]}", "name": call.name,
            "input": {}}}
        for frag in call.fragments:
            yield {"type": "content_block_delta", "index": self._index,
                   "delta": {"type": "input_json_delta", "partial_json": frag}}
        yield {"type": "content_block_stop", "index": self._index}
