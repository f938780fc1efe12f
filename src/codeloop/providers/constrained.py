"""Schema-constrained tool calling for servers that enforce a JSON Schema on the reply.

Small local models call tools unreliably in the server's native format, but every reply they
write under a grammar is well formed. In this mode each reply must match one schema: `anyOf`
one object per offered tool (`{"name": <const>, "arguments": {...}}`) plus a final answer
(`{"answer": "..."}`). No `tools` field is sent: the tools are listed in the system prompt, and
the history is rendered in the same JSON form the model writes, tool results as user turns, so
it never depends on the server's chat template handling tool messages. The translator
(`StreamTranslator(answer_key=ANSWER_KEY)`) turns the constrained reply back into tool_use
blocks or text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codeloop.messages import READ_ATTACHMENT_HEAD
from codeloop.providers.openai_translate import _text_of
from codeloop.providers.text_tools import ANSWER_KEY

_KEEP = ("type", "enum", "items")
# how Grep and Glob say they found nothing
NOTHING_FOUND = ("no files found", "no matches found")
MAX_FRUITLESS_CALLS = 3
MAX_REPEATED_CALLS = 2
REMINDER = ("(The request: {request}\nIf it is done (the question answered, or a tool result shows the requested "
            'change made), reply {{"answer": "..."}}: your own short words with the actual names, values or text '
            "you found, never a copy of a tool's output. Otherwise make the next tool call.)")
FORMAT_RULES = (
    "Reply with exactly one JSON object and nothing else: either a tool call\n"
    '{"name": "<tool>", "arguments": {...}}\n'
    "or, when you are done, your final answer to the user\n"
    '{"answer": "<text>"}\n'
    'For example, to read notes.txt: {"name": "Read", "arguments": {"file_path": "notes.txt"}}')


def _slim(prop: dict[str, Any]) -> dict[str, Any]:
    out = {k: prop[k] for k in _KEEP if k in prop}
    if isinstance(out.get("items"), dict):
        out["items"] = _slim(out["items"])
    return out or {"type": "string"}


def argument_schema(input_schema: Mapping[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """A tool's input schema cut to its required properties, without descriptions or bounds:
    what a grammar can enforce and what a small model fills in reliably. `extra` names optional
    properties that are kept too, made required: the model then decides them on every call
    (an optional one a small model never writes)."""
    props = input_schema.get("properties") or {}
    required = [k for k in [*(input_schema.get("required") or []), *extra] if k in props]
    required = list(dict.fromkeys(required))
    return {"type": "object", "properties": {k: _slim(props[k]) for k in required},
            "required": required, "additionalProperties": False}


def reply_schema(tools: list[dict[str, Any]], *, allow_answer: bool = True,
                 extra_args: Mapping[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """The JSON Schema every reply must match: one call object per tool, or the final answer
    (left out when a tool call is required). `extra_args`: per tool, optional arguments offered
    as required ones (`argument_schema`)."""
    extra_args = extra_args or {}
    options = [{"type": "object",
                "properties": {"name": {"const": t["name"]},
                               "arguments": argument_schema(t["input_schema"], extra_args.get(t["name"], ()))},
                "required": ["name", "arguments"], "additionalProperties": False}
               for t in tools if "input_schema" in t]
    if allow_answer or not options:
        options.append({"type": "object", "properties": {ANSWER_KEY: {"type": "string"}},
                        "required": [ANSWER_KEY], "additionalProperties": False})
    return {"anyOf": options}


def _since_prompt(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user" and not _has_results(m)), default=0)
    return messages[start:]


def _found_nothing(block: dict[str, Any]) -> bool:
    text = _text_of(block.get("content")).strip().lower()
    return bool(block.get("is_error")) or text.startswith(NOTHING_FOUND)


def answer_allowed(messages: list[dict[str, Any]]) -> bool:
    """The local profile's rule for when a final answer may be given: once a tool result since
    the prompt found something (not an error, not a search that found nothing), or after
    MAX_FRUITLESS_CALLS calls so "it is not there" stays possible. Small models otherwise answer
    from imagination, or give up after the first empty search."""
    results = [b for m in _since_prompt(messages) if m.get("role") == "user" and isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result"]
    # A file attached to the prompt does not count: asked to run it, a small model that already
    # sees a script answers with a number it made up instead of running it.
    return len(results) >= MAX_FRUITLESS_CALLS or any(not _found_nothing(b) for b in results)


# What a tool says when its result shows nothing of what it did (Bash's rm, mv, chmod, sed -i).
NO_OUTPUT = "(no output)"
MAX_CHECK_CALLS = 6
NOT_CHANGED_YET = "Nothing has been changed yet: make the requested change with a tool."
CHANGES_MADE = "Changes already made for this request (they worked: never make one of them again): {calls}"


@dataclass(frozen=True)
class ChangeRules:
    """How the local profile tells a request for a change, and a call that makes one. Small
    models declare a change done without making it (a Grep, then "renamed"), or after its first
    step, and answer by pasting the tool's report; these rules hold the final answer back."""
    check_after: tuple[str, ...] = ()   # tools whose report shows a snippet, not the outcome
    request: str = ""                   # regex: the request asks for a change (not a question)
    shell_tool: str = ""                # the tool whose `command` may change files…
    commands: str = ""                  # …when it matches this regex


def _calls(since: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in since if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"] if b.get("type") == "tool_use"]


def unchecked_change(messages: list[dict[str, Any]], rules: ChangeRules) -> bool:
    """The newest result is a change nobody has looked at: a call of a `check_after` tool or a
    command that printed nothing. The next reply must then be a tool call: a check (ls, Read,
    running the program) or the rest of the change. After MAX_CHECK_CALLS calls the answer is
    allowed whatever came last."""
    since = _since_prompt(messages)
    calls = _calls(since)
    if not calls or len(calls) >= MAX_CHECK_CALLS or not _has_results(since[-1]):
        return False
    results = [b for b in since[-1]["content"] if b.get("type") == "tool_result"]
    silent = any(_text_of(b.get("content")).strip() in ("", NO_OUTPUT) and not b.get("is_error") for b in results)
    return silent or calls[-1].get("name") in rules.check_after


def _is_change(call: dict[str, Any], rules: ChangeRules) -> bool:
    return call.get("name") in rules.check_after or bool(
        rules.commands and call.get("name") == rules.shell_tool
        and re.search(rules.commands, str((call.get("input") or {}).get("command", ""))))


def changes_made(messages: list[dict[str, Any]], rules: ChangeRules) -> list[str]:
    """The change calls since the prompt that succeeded, as `Name {input}`. After a change and a
    look, small models make the same change again (a second `sed s/a/ab/` doubles the rename, an
    Edit repeated fails and the answer reports the failure); the results turn lists them."""
    since = _since_prompt(messages)
    failed = {b.get("tool_use_id") for m in since if _has_results(m) for b in m["content"]
              if b.get("type") == "tool_result" and b.get("is_error")}
    return [_call_json(c) for c in _calls(since) if _is_change(c, rules) and c.get("id") not in failed]


def change_missing(messages: list[dict[str, Any]], rules: ChangeRules) -> bool:
    """The request asks for a change (`rules.request`, and it is not a question) and no call
    since it has made one: a check_after tool, or a shell command matching `rules.commands`."""
    if not rules.request or not messages:
        return False
    since = _since_prompt(messages)
    request = _request_text(since[0].get("content")) if since else ""
    if not re.search(rules.request, request, re.I) or request.rstrip().endswith("?"):
        return False
    calls = _calls(since)
    if len(calls) >= MAX_CHECK_CALLS:
        return False
    return not any(_is_change(c, rules) for c in calls)


def awaiting_first_call(messages: list[dict[str, Any]]) -> bool:
    """True when the newest message is the user's prompt rather than tool results: the reply
    that starts working on a request."""
    if not messages or messages[-1].get("role") != "user":
        return False
    content = messages[-1].get("content")
    return isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content or [])


def _calls_since_prompt(messages: list[dict[str, Any]]) -> list[str]:
    return [json.dumps([b.get("name"), b.get("input")], sort_keys=True) for m in _since_prompt(messages)
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"] if b.get("type") == "tool_use"]


def repeated_tools(messages: list[dict[str, Any]]) -> set[str]:
    """Tools whose newest call repeats an earlier call of this request exactly (same name and
    arguments). Small models loop on a call that found nothing; the next reply may not offer
    that tool again, so the grammar enforces the prompt's "never repeat a tool call"."""
    seen = _calls_since_prompt(messages)
    if not seen or seen[-1] not in seen[:-1]:
        return set()
    return {json.loads(seen[-1])[0]}


def looping(messages: list[dict[str, Any]]) -> bool:
    """MAX_REPEATED_CALLS calls of this request repeated an earlier one exactly: the model is going
    round in circles over results it already has, so the next reply must be the final answer."""
    seen = _calls_since_prompt(messages)
    return sum(call in seen[:i] for i, call in enumerate(seen)) >= MAX_REPEATED_CALLS


# Read shows each line as its number right-aligned in six columns and a tab (`cat -n`); small
# models copy that prefix into what they write. Only this exact form, on every line and numbered
# consecutively, is taken for pasted numbers: a file's own text almost never looks like that.
_READ_PREFIX = re.compile(r"^(?=[ \d]{6}\t) *(\d+)\t")
# what each writing tool takes as file text
WRITTEN_TEXT = {"Write": ("content",), "Edit": ("old_string", "new_string")}


def without_read_numbers(text: str) -> str | None:
    """`text` with Read's line-number prefixes removed, or None unless every line carries one and
    they count up by one."""
    lines = text.split("\n")
    body = lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines
    matches = [_READ_PREFIX.match(line) for line in body]
    if not body or not all(matches):
        return None
    numbers = [int(m.group(1)) for m in matches if m]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return None
    return "\n".join(line[m.end():] for line, m in zip(body, matches) if m) + ("\n" if body is not lines else "")


def strip_read_numbers(name: str, inp: dict[str, Any]) -> dict[str, Any]:
    """A Write or Edit call with Read's line numbers taken out of the text it writes, where every
    line of that text carries them (an Edit's new_string only when its old_string did too, so a
    deliberate numbered list stays)."""
    fields = WRITTEN_TEXT.get(name, ())
    texts = {k: inp[k] for k in fields if isinstance(inp.get(k), str) and inp[k]}
    stripped = {k: without_read_numbers(v) for k, v in texts.items()}
    if name == "Edit":
        if stripped.get("old_string") is None:
            return inp
        # old_string was pasted from Read: so were the numbered lines of new_string (the lines
        # the model added carry none, or numbers that no longer count up)
        stripped["new_string"] = "\n".join(_READ_PREFIX.sub("", line, count=1)
                                            for line in str(inp.get("new_string", "")).split("\n"))
    return {**inp, **{k: v for k, v in stripped.items() if v is not None}}


def _has_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def _describe(tool: dict[str, Any], descriptions: Mapping[str, str] | None, extra: tuple[str, ...] = ()) -> str:
    desc = (descriptions or {}).get(tool["name"]) or tool.get("description", "").strip().split("\n")[0][:160]
    args = argument_schema(tool["input_schema"], extra)["properties"]
    sig = ", ".join(f'"{k}": {v.get("type", "string")}' for k, v in args.items())
    return f"- {tool['name']} {{{sig}}}: {desc}"


def tools_prompt(tools: list[dict[str, Any]], descriptions: Mapping[str, str] | None = None,
                 extra_args: Mapping[str, tuple[str, ...]] | None = None) -> str:
    lines = [_describe(t, descriptions, (extra_args or {}).get(t["name"], ())) for t in tools if "input_schema" in t]
    return FORMAT_RULES + ("\n\nTools:\n" + "\n".join(lines) if lines else "")


def _call_json(block: dict[str, Any]) -> str:
    return json.dumps({"name": block.get("name", ""), "arguments": block.get("input") or {}})


def render_messages(system: list[dict[str, Any]], messages: list[dict[str, Any]],
                    tools_text: str, *, remind: bool = False, rules: ChangeRules | None = None) -> list[dict[str, Any]]:
    """Chat messages with tool calls and results as plain text in the constrained JSON form.

    With `remind` (the local profile), each turn of tool results ends by restating the user's
    request and when to answer: a small model otherwise forgets the question after a few calls
    and keeps calling tools over results that already answer it."""
    system_text = "\n\n".join(b.get("text", "") for b in system if b.get("text"))
    out: list[dict[str, Any]] = [{"role": "system", "content": "\n\n".join(p for p in (system_text, tools_text) if p)}]
    names: dict[str, str] = {}

    def add(role: str, text: str) -> None:
        if not text:
            return
        if out[-1]["role"] == role and role != "system":
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})

    request = ""
    for i, m in enumerate(messages):
        content = m["content"]  # every API message has one (None would fail below all the same)
        if m.get("role") == "user" and not _has_results(m):
            request = _request_text(content)
        if m.get("role") == "assistant":
            if isinstance(content, str):
                add("assistant", json.dumps({ANSWER_KEY: content}))
                continue
            calls = [b for b in content if b.get("type") == "tool_use"]
            names.update({b.get("id", ""): b.get("name", "") for b in calls})
            text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
            add("assistant", "\n".join(_call_json(b) for b in calls) if calls
                else json.dumps({ANSWER_KEY: text}) if text else "")
            continue
        if isinstance(content, str):
            add("user", content)
            continue
        parts = []
        for b in content:
            if b.get("type") == "tool_result":
                name = names.get(b.get("tool_use_id", ""), "the tool")
                label = f"Error from {name}" if b.get("is_error") else f"Result of {name}"
                parts.append(f"{label}:\n{_text_of(b.get('content')) or '(no output)'}")
            elif b.get("type") == "text" and b.get("text"):
                parts.append(b["text"])
        if remind and request and any(b.get("type") == "tool_result" for b in content):
            # computed from the history up to this turn only, so earlier turns render the same
            # every time and the server's prompt cache still covers them
            if rules is not None and change_missing(messages[:i + 1], rules):
                parts.append(NOT_CHANGED_YET)
            elif rules is not None and (made := changes_made(messages[:i + 1], rules)):
                parts.append(CHANGES_MADE.format(calls="; ".join(made)))
            parts.append(REMINDER.format(request=request))
        add("user", "\n\n".join(parts))
    return out


def _request_text(content: Any) -> str:
    """The user's own words in a prompt message (the last text block: attachments come first)."""
    if isinstance(content, str):
        text = content
    else:
        texts = [b.get("text") or "" for b in content or [] if b.get("type") == "text"
                 and not (b.get("text") or "").startswith(READ_ATTACHMENT_HEAD)]
        text = texts[-1] if texts else ""
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def constrained_body(request: Any, *, max_tokens_field: str = "max_tokens",
                     descriptions: Mapping[str, str] | None = None, tool_first: bool = False,
                     rules: ChangeRules | None = None,
                     extra_args: Mapping[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """The POST /chat/completions body for one constrained turn (`extra_args`: see `reply_schema`).
    With `tool_first` (the local profile's steering), the final answer is offered only once a tool found something
    (`answer_allowed`), not straight after an unchecked change (`unchecked_change`) nor before a
    requested change was attempted (`change_missing`, `rules`), a tool
    whose newest call repeated an earlier one is not offered for the next reply, and once the
    model loops (`looping`) only the final answer is."""
    tools = [t for t in request.tools if "input_schema" in t]
    if descriptions:  # the order of `descriptions` is the order the model sees the tools in
        rank = {name: i for i, name in enumerate(descriptions)}
        tools.sort(key=lambda t: rank.get(t["name"], len(rank)))
    repeated = repeated_tools(request.messages) if tool_first else set()
    offered = [] if tool_first and looping(request.messages) else [t for t in tools if t["name"] not in repeated]
    rules = rules or ChangeRules()
    if tool_first and _calls(_since_prompt(request.messages)) and change_missing(request.messages, rules):
        # it has looked once and changed nothing: only the tools that change files are offered
        changing = [t for t in offered if t["name"] in (*rules.check_after, rules.shell_tool)]
        offered = changing or offered
    elif tool_first and unchecked_change(request.messages, rules):
        # a check is a look: offered a tool that changes files, a small model "checks" by
        # changing the file again (and undoes a finished change)
        looking = [t for t in offered if t["name"] not in (*rules.check_after, rules.shell_tool)]
        offered = looking or offered
    allow = not tool_first or not offered or (answer_allowed(request.messages)
                                              and not unchecked_change(request.messages, rules)
                                              and not change_missing(request.messages, rules))
    schema = reply_schema(offered, allow_answer=allow, extra_args=extra_args)
    body: dict[str, Any] = {
        "model": request.model, "stream": True, "stream_options": {"include_usage": True},
        "messages": render_messages(request.system, request.messages, tools_prompt(tools, descriptions, extra_args),
                                    remind=tool_first, rules=rules if tool_first else None),
        max_tokens_field: request.max_tokens,
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "reply", "strict": True, "schema": schema}}}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body
