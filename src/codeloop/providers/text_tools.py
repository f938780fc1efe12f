"""Tool calls that a model wrote as text instead of as structured `tool_calls`.

Many open-weight models served through OpenAI-compatible servers (Ollama, vLLM, llama.cpp)
answer a tool request by writing the call out — bare JSON, a ```json fence, or Hermes-style
`<tool_call>` tags — which the server passes through as plain content. Reported as the final
answer, that blob would be a silent failure. This module owns recognising such a reply:
`could_be_call(prefix)` says whether streamed text may still turn out to be one (so the
translator holds it back), and `parse_text_calls(text)` turns a reply whose *whole* text is one
call (or a list of calls) into `TextCall`s. The close variants accepted are the ones seen in
the wild: `{"name", "arguments"|"parameters"|"args"|"input"}`, `{"tool"|"tool_name", …}`,
`{"function": {"name", "arguments"}}` (OpenAI's own shape) and arguments given as a JSON string.

`{"answer": "…"}` is the final-answer object of the schema-constrained mode (see
`constrained.py`); it is recognised only when the caller asks for it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_NAME = re.compile(r"^[A-Za-z_][\w.\-]{0,127}$")
_FENCE = re.compile(r"^```[ \t]*([A-Za-z_\-]*)[ \t]*\n?(.*?)\n?[ \t]*```$", re.S)
_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")
# keys a call object may carry besides its name and arguments
_EXTRA_KEYS = {"id", "type", "call_id"}
_FENCE_LANGS = {"", "json", "tool_call", "tool_code", "javascript", "js"}
_OPENERS = ("{", "[", "```", "<tool_call>")
ANSWER_KEY = "answer"


@dataclass
class TextCall:
    """A tool call parsed from a model's reply text."""
    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class TextReply:
    """What a whole reply text turned out to be: calls, a final answer, or neither."""
    calls: list[TextCall] = field(default_factory=list)
    answer: str | None = None


def could_be_call(text: str) -> bool:
    """False once `text` (a reply's start) can no longer be a text tool call; True while it can."""
    s = text.lstrip()
    if not s:
        return True
    if not any(s.startswith(o) or o.startswith(s) for o in _OPENERS):
        return False
    if s.startswith("```") and "\n" in s:  # a fence in another language is ordinary code
        return s[3:s.index("\n")].strip().lower() in _FENCE_LANGS
    return True


def _loads(text: str) -> Any:
    """JSON, forgiving the two slips small models make: a missing closing brace or bracket,
    and a trailing comma."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", text)
    for extra in ("", "}", "}}", "]", "}]"):
        try:
            return json.loads(fixed + extra)
        except ValueError:
            continue
    return None


def _unwrap(text: str) -> list[str] | None:
    """The JSON bodies inside the reply, or None when the reply is not wholly a call."""
    s = text.strip()
    m = _FENCE.match(s)
    if m:
        if m.group(1).lower() not in _FENCE_LANGS:
            return None
        s = m.group(2).strip()
    if s.startswith("<tool_call>"):
        bodies = _TAG.findall(s)
        rest = _TAG.sub("", s).strip()
        return bodies if bodies and not rest else None
    return [s] if s[:1] in ("{", "[") else None


def _as_call(obj: Any) -> TextCall | None:
    if not isinstance(obj, dict):
        return None
    for wrapper in ("function", "tool_call"):
        inner = obj.get(wrapper)
        if isinstance(inner, dict) and set(obj) <= {wrapper, *_EXTRA_KEYS}:
            obj = inner
            break
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name_key is None or not _NAME.match(obj[name_key]):
        return None
    arg_key = next((k for k in _ARG_KEYS if k in obj), None)
    if set(obj) - {name_key, arg_key, *_EXTRA_KEYS}:
        return None  # other keys: data that happens to have a "name", not a call
    args = obj.get(arg_key) if arg_key else {}
    if isinstance(args, str):
        args = _loads(args) if args.strip() else {}
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return TextCall(obj[name_key], args)


def parse_text_calls(text: str, *, answer_key: str | None = None) -> TextReply | None:
    """The calls (or, with `answer_key`, the final answer) a whole reply text stands for;
    None when the text is an ordinary answer."""
    bodies = _unwrap(text)
    if not bodies:
        return None
    calls: list[TextCall] = []
    for body in bodies:
        obj = _loads(body)
        if answer_key and isinstance(obj, dict) and set(obj) == {answer_key} and isinstance(obj[answer_key], str):
            return TextReply(answer=obj[answer_key]) if len(bodies) == 1 else None
        items = obj if isinstance(obj, list) and obj else [obj]
        for item in items:
            call = _as_call(item)
            if call is None:
                return None
            calls.append(call)
    return TextReply(calls=calls)
