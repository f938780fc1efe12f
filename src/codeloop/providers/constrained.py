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
from typing import Any

from codeloop.providers.openai_translate import _text_of
from codeloop.providers.request_rules import (CHANGES_MADE, NOT_CHANGED_YET, NOT_MEASURED_YET,
                                              NOT_SEARCHED_YET, STILL_NEEDED, ChangeRules, call_json,
                                              change_missing, changes_made, command_first, command_missing,
                                              has_results, kept_arguments, listing_note, measure_missing, request_text,
                                              search_missing, search_tally, shell_only, since_prompt,
                                              tool_calls, unchecked_change)
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


def _narrowed(args: dict[str, Any], narrow: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    props = {k: {**v, **narrow[k]} if k in narrow else v for k, v in args["properties"].items()}
    return {**args, "properties": props}


def reply_schema(tools: list[dict[str, Any]], *, allow_answer: bool = True,
                 extra_args: Mapping[str, tuple[str, ...]] | None = None,
                 narrow: Mapping[str, Mapping[str, dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The JSON Schema every reply must match: one call object per tool, or the final answer
    (left out when a tool call is required). `extra_args`: per tool, optional arguments offered
    as required ones (`argument_schema`); `narrow`: per tool and argument, schema keywords added
    to this turn's (a `minLength`: `kept_arguments`)."""
    extra_args, narrow = extra_args or {}, narrow or {}
    options = [{"type": "object",
                "properties": {"name": {"const": t["name"]},
                               "arguments": _narrowed(argument_schema(t["input_schema"], extra_args.get(t["name"], ())),
                                                      narrow.get(t["name"], {}))},
                "required": ["name", "arguments"], "additionalProperties": False}
               for t in tools if "input_schema" in t]
    if allow_answer or not options:
        options.append({"type": "object", "properties": {ANSWER_KEY: {"type": "string"}},
                        "required": [ANSWER_KEY], "additionalProperties": False})
    return {"anyOf": options}


def _found_nothing(block: dict[str, Any]) -> bool:
    text = _text_of(block.get("content")).strip().lower()
    return bool(block.get("is_error")) or text.startswith(NOTHING_FOUND)


def answer_allowed(messages: list[dict[str, Any]]) -> bool:
    """The local profile's rule for when a final answer may be given: once a tool result since
    the prompt found something (not an error, not a search that found nothing), or after
    MAX_FRUITLESS_CALLS calls so "it is not there" stays possible. Small models otherwise answer
    from imagination, or give up after the first empty search."""
    results = [b for m in since_prompt(messages) if m.get("role") == "user" and isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result"]
    # A file attached to the prompt does not count: asked to run it, a small model that already
    # sees a script answers with a number it made up instead of running it.
    return len(results) >= MAX_FRUITLESS_CALLS or any(not _found_nothing(b) for b in results)


def awaiting_first_call(messages: list[dict[str, Any]]) -> bool:
    """True when the newest message is the user's prompt rather than tool results: the reply
    that starts working on a request."""
    if not messages or messages[-1].get("role") != "user":
        return False
    content = messages[-1].get("content")
    return isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content or [])


def _calls_since_prompt(messages: list[dict[str, Any]]) -> list[str]:
    return [json.dumps([b.get("name"), b.get("input")], sort_keys=True) for m in since_prompt(messages)
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


def _describe(tool: dict[str, Any], descriptions: Mapping[str, str] | None, extra: tuple[str, ...] = ()) -> str:
    desc = (descriptions or {}).get(tool["name"]) or tool.get("description", "").strip().split("\n")[0][:160]
    args = argument_schema(tool["input_schema"], extra)["properties"]
    sig = ", ".join(f'"{k}": {v.get("type", "string")}' for k, v in args.items())
    return f"- {tool['name']} {{{sig}}}: {desc}"


def tools_prompt(tools: list[dict[str, Any]], descriptions: Mapping[str, str] | None = None,
                 extra_args: Mapping[str, tuple[str, ...]] | None = None) -> str:
    lines = [_describe(t, descriptions, (extra_args or {}).get(t["name"], ())) for t in tools if "input_schema" in t]
    return FORMAT_RULES + ("\n\nTools:\n" + "\n".join(lines) if lines else "")


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
        if m.get("role") == "user" and not has_results(m):
            request = request_text(content)
        if m.get("role") == "assistant":
            if isinstance(content, str):
                add("assistant", json.dumps({ANSWER_KEY: content}))
                continue
            calls = [b for b in content if b.get("type") == "tool_use"]
            names.update({b.get("id", ""): b.get("name", "") for b in calls})
            text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
            add("assistant", "\n".join(call_json(b) for b in calls) if calls
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
                if remind and rules is not None and not b.get("is_error"):
                    # from the result alone: every turn renders it the same
                    text = _text_of(b.get("content"))
                    note = search_tally(text) if name == rules.search_tool else \
                        listing_note(text) if name == rules.shell_tool else ""
                    parts[-1] += "\n" + note if note else ""
            elif b.get("type") == "text" and b.get("text"):
                parts.append(b["text"])
        if remind and request and any(b.get("type") == "tool_result" for b in content):
            # computed from the history up to this turn only, so earlier turns render the same
            # every time and the server's prompt cache still covers them
            if rules is not None and change_missing(messages[:i + 1], rules):
                parts.append(NOT_CHANGED_YET)
            elif rules is not None and (made := changes_made(messages[:i + 1], rules)):
                parts.append(CHANGES_MADE.format(calls="; ".join(made)))
                if needed := command_missing(messages[:i + 1], rules):
                    parts.append(STILL_NEEDED.format(command=needed))
            elif rules is not None and search_missing(messages[:i + 1], rules):
                parts.append(NOT_SEARCHED_YET.format(tool=rules.search_tool))
            elif rules is not None and measure_missing(messages[:i + 1], rules):
                parts.append(NOT_MEASURED_YET)
            parts.append(REMINDER.format(request=request))
        add("user", "\n\n".join(parts))
    return out


def constrained_body(request: Any, *, max_tokens_field: str = "max_tokens",
                     descriptions: Mapping[str, str] | None = None, tool_first: bool = False,
                     rules: ChangeRules | None = None,
                     extra_args: Mapping[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """The POST /chat/completions body for one constrained turn (`extra_args`: see `reply_schema`).
    With `tool_first` (the local profile's steering), the final answer is offered only once a tool found something
    (`answer_allowed`), not straight after an unchecked change (`unchecked_change`) nor before a
    requested change was attempted (`change_missing`, `rules`) nor before a question that counts
    or compares files was measured by a command (`measure_missing`) nor before a command a change
    needs has run (`command_missing`, which then is all that is offered); an argument the request
    gives no reason to empty is kept non-empty (`kept_arguments`); a request only a command does
    well (`shell_only`) is offered no tool that writes files; a tool
    whose newest call repeated an earlier one is not offered for the next reply, and once the
    model loops (`looping`) only the final answer is."""
    tools = [t for t in request.tools if "input_schema" in t]
    if descriptions:  # the order of `descriptions` is the order the model sees the tools in
        rank = {name: i for i, name in enumerate(descriptions)}
        tools.sort(key=lambda t: rank.get(t["name"], len(rank)))
    repeated = repeated_tools(request.messages) if tool_first else set()
    offered = [] if tool_first and looping(request.messages) else [t for t in tools if t["name"] not in repeated]
    rules = rules or ChangeRules()
    if tool_first and shell_only(request.messages, rules):
        offered = [t for t in offered if t["name"] not in rules.check_after] or offered
    looked = bool(tool_calls(since_prompt(request.messages)))
    narrow: dict[str, dict[str, Any]] = {}
    for tool, arg in kept_arguments(request.messages, rules) if tool_first else ():
        narrow.setdefault(tool, {})[arg] = {"minLength": 1}
    if tool_first and command_first(request.messages, rules):
        # the files are there and a command is all the change needs first: only the shell
        offered = [t for t in offered if t["name"] == rules.shell_tool] or offered
    elif tool_first and looked and change_missing(request.messages, rules):
        # it has looked once and changed nothing: only the tools that change files are offered
        changing = [t for t in offered if t["name"] in (*rules.check_after, rules.shell_tool)]
        offered = changing or offered
    elif tool_first and looked and command_missing(request.messages, rules):
        # part of the change done, the command the rest needs not run: only the shell is offered
        offered = [t for t in offered if t["name"] == rules.shell_tool] or offered
    elif tool_first and unchecked_change(request.messages, rules):
        # a check is a look: offered a tool that changes files, a small model "checks" by
        # changing the file again (and undoes a finished change)
        looking = [t for t in offered if t["name"] not in (*rules.check_after, rules.shell_tool)]
        offered = looking or offered
    elif tool_first and looked and search_missing(request.messages, rules):
        # a question about contents, looked at by name only: a search of contents
        offered = [t for t in offered if t["name"] in (rules.search_tool, rules.shell_tool)] or offered
    elif tool_first and looked and measure_missing(request.messages, rules):
        # it has looked once and measured nothing: only a command that prints the numbers
        offered = [t for t in offered if t["name"] == rules.shell_tool] or offered
    allow = not tool_first or not offered or (answer_allowed(request.messages)
                                              and not unchecked_change(request.messages, rules)
                                              and not change_missing(request.messages, rules)
                                              and not command_missing(request.messages, rules)
                                              and not measure_missing(request.messages, rules)
                                              and not search_missing(request.messages, rules))
    schema = reply_schema(offered, allow_answer=allow, extra_args=extra_args, narrow=narrow)
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
