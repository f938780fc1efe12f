"""Structured output: the final answer must be JSON that validates against a schema.

Owns schema loading (`parse_schema`), pulling JSON out of a model's answer (`extract_json`),
validation (`validate`: the `jsonschema` package when importable, else a built-in validator for
the common subset), the meta message that asks the model to try again (`retry_message`), and
`run_structured`, which drives a Conversation through it: as Claude Code does, the model is first
offered the `StructuredOutput` tool whose input schema is the user's schema (one request, the
tool input is the answer); a model that answers in text instead goes through the fallback
answer → validate → retry cycle (providers or models without tool use, models that ignore it).
The retry limit counts every invalid answer, text or tool call alike (`Attempts`): a limit of N
allows N + 1 answers in all.
Front ends map the two closing `SystemEvent`s: `structured_output` carries the value,
`structured_output_failed` the errors of the last attempt (print mode: result subtype
`error_max_structured_output_retries`). It drives a whole Conversation, so it lives in the
session layer, beside what it drives.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.events import AssistantEvent, Event, SystemEvent, Terminal, TerminalReason

if TYPE_CHECKING:
    from codeloop.abort import AbortController
    from codeloop.session.conversation import Conversation


class StructuredEvent(str, Enum):
    """Subtypes of the SystemEvent that closes a structured run."""
    OUTPUT = "structured_output"
    FAILED = "structured_output_failed"


class SchemaError(ValueError):
    """The schema argument is neither valid JSON nor a readable file holding a JSON object."""


_FENCE_RE = r"```(?:json|JSON)?[ \t]*\n(.*?)\n?```"   # compiled (re.DOTALL) when an answer is first searched
_MAX_ERRORS = 20


def parse_schema(arg: str) -> dict[str, Any]:
    """A JSON schema from a JSON string or the path of a file holding one."""
    text = arg.strip()
    source = "--json-schema"
    if not text.startswith(("{", "[")):
        path = Path(text).expanduser()
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise SchemaError(f"--json-schema: {arg!r} is not JSON and not a readable file ({exc.strerror})") from None
        source = str(path)
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise SchemaError(f"{source}: invalid JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise SchemaError(f"{source}: a JSON schema must be an object, got {type(schema).__name__}")
    _check_schema(schema, source)
    return schema


def _check_schema(schema: dict[str, Any], source: str) -> None:
    try:
        from jsonschema import exceptions, validators
    except ImportError:
        return
    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        raise SchemaError(f"{source}: not a valid JSON schema: {exc.message}") from None


def extract_json(text: str) -> Any:
    """The JSON value the answer holds: the whole text, else the first ```json fenced block.

    Raises ValueError when neither parses.
    """
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for match in re.finditer(_FENCE_RE, text, re.DOTALL):
        try:
            return json.loads(match.group(1))
        except ValueError:
            continue
    raise ValueError("the answer is not JSON (send only the JSON value, or one ```json block)")


def validate(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Human-readable validation errors, empty when `instance` matches `schema`."""
    try:
        from jsonschema import validators
    except ImportError:  # pragma: no cover - exercised through builtin_validate
        return builtin_validate(instance, schema)
    cls = validators.validator_for(schema)
    errors = sorted(cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{_path(list(e.absolute_path))}: {e.message}" for e in errors[:_MAX_ERRORS]]


def _path(parts: list[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


# -- the built-in subset ---------------------------------------------------------------------------
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and not (
            isinstance(value, float) and math.isnan(value))
    expected = _TYPES.get(name)
    return expected is not None and isinstance(value, expected) and not (
        expected is not bool and isinstance(value, bool))


def builtin_validate(instance: Any, schema: Any, path: str = "$") -> list[str]:
    """type, properties, required, additionalProperties, items, enum, const, minimum/maximum,
    exclusiveMinimum/Maximum, minLength/maxLength, minItems/maxItems, pattern, anyOf/oneOf/allOf."""
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{path}: no value is allowed here"]
    errs: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_is_type(instance, n) for n in names):
            return [f"{path}: {json.dumps(instance)[:60]} is not of type {' or '.join(map(repr, names))}"]
    if "enum" in schema and instance not in schema["enum"]:
        errs.append(f"{path}: {json.dumps(instance)[:60]} is not one of {schema['enum']!r}")
    if "const" in schema and instance != schema["const"]:
        errs.append(f"{path}: {schema['const']!r} was expected")
    if isinstance(instance, (int, float)) and not isinstance(instance, bool):
        for key, bad in (("minimum", lambda v, b: v < b), ("maximum", lambda v, b: v > b),
                         ("exclusiveMinimum", lambda v, b: v <= b), ("exclusiveMaximum", lambda v, b: v >= b)):
            if isinstance(schema.get(key), (int, float)) and bad(instance, schema[key]):
                errs.append(f"{path}: {instance} violates {key} {schema[key]}")
    if isinstance(instance, str):
        if len(instance) < schema.get("minLength", 0):
            errs.append(f"{path}: {instance!r} is shorter than {schema['minLength']}")
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            errs.append(f"{path}: {instance[:40]!r} is longer than {schema['maxLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], instance):
            errs.append(f"{path}: {instance[:40]!r} does not match {schema['pattern']!r}")
    if isinstance(instance, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in instance:
                errs.append(f"{path}: {name!r} is a required property")
        extra = schema.get("additionalProperties", True)
        for key, value in instance.items():
            if key in props:
                errs += builtin_validate(value, props[key], f"{path}.{key}")
            elif extra is False:
                errs.append(f"{path}: additional property {key!r} is not allowed")
            elif isinstance(extra, dict):
                errs += builtin_validate(value, extra, f"{path}.{key}")
    if isinstance(instance, list):
        if len(instance) < schema.get("minItems", 0):
            errs.append(f"{path}: expected at least {schema['minItems']} items")
        if "maxItems" in schema and len(instance) > schema["maxItems"]:
            errs.append(f"{path}: expected at most {schema['maxItems']} items")
        if isinstance(schema.get("items"), (dict, bool)):
            for i, item in enumerate(instance):
                errs += builtin_validate(item, schema["items"], f"{path}[{i}]")
    for sub in schema.get("allOf", []):
        errs += builtin_validate(instance, sub, path)
    if "anyOf" in schema and not any(not builtin_validate(instance, s, path) for s in schema["anyOf"]):
        errs.append(f"{path}: does not match any of the anyOf schemas")
    if "oneOf" in schema:
        matches = sum(1 for s in schema["oneOf"] if not builtin_validate(instance, s, path))
        if matches != 1:
            errs.append(f"{path}: matches {matches} of the oneOf schemas, expected exactly 1")
    return errs[:_MAX_ERRORS]


# -- the retry cycle -------------------------------------------------------------------------------
def retry_message(errors: list[str], schema: dict[str, Any]) -> str:
    listed = "\n".join(f"- {e}" for e in errors[:_MAX_ERRORS]) or "- (no details)"
    return ("Your previous answer does not satisfy the required JSON schema:\n"
            f"{listed}\n\n"
            "Answer again with only a JSON value that matches this schema — no prose, no markdown "
            f"fences:\n{json.dumps(schema, indent=2)}")


def check_answer(text: str, schema: dict[str, Any]) -> tuple[Any, list[str]]:
    """(value, errors) for one final answer; errors is empty when it is valid."""
    try:
        value = extract_json(text)
    except ValueError as exc:
        return None, [str(exc)]
    return value, validate(value, schema)


def offer_tool(conv: Conversation, schema: dict[str, Any], attempts: Any = None) -> bool:
    """Put the StructuredOutput tool for `schema` in the conversation's tools (replacing one for
    another schema), its invalid calls spending `attempts`; False when the model cannot use tools,
    leaving the text cycle alone."""
    from codeloop.providers.models import capabilities
    from codeloop.tools.builtin.structured_output import NAME, StructuredOutputTool

    current = next((t for t in conv.config.tools if t.name == NAME), None)
    if isinstance(current, StructuredOutputTool) and current.schema == schema:
        current.attempts = attempts
        return True
    # a new list, not an in-place change: subagents hold the old one and are never offered it
    tools = [t for t in conv.config.tools if t.name != NAME]
    offered = capabilities(conv.config.model).supports_tools
    conv.config.tools = [*tools, StructuredOutputTool(schema, validate, attempts)] if offered else tools
    return offered


async def run_structured(conv: Conversation, prompt: Any, schema: dict[str, Any], retry_limit: int, *,
                         abort: AbortController | None = None) -> AsyncIterator[Event]:
    """Submit `prompt` with the StructuredOutput tool offered; its valid input is the answer.
    Otherwise validate the final text answer and ask again; `retry_limit` invalid answers (tool
    calls or texts) are allowed before the run fails.

    Yields every event of every attempt, then one closing SystemEvent. A turn that does not
    complete (error, interrupt, max turns) ends the cycle at once: retrying would not help, and
    the caller reports that Terminal, not a schema failure.
    """
    from codeloop.messages import user_message
    from codeloop.tools.builtin.structured_output import NAME, Attempts

    attempts = Attempts(allowed=max(0, retry_limit) + 1)
    offered = offer_tool(conv, schema, attempts)
    ctx = conv.tool_context
    next_input: Any = prompt
    try:
        while not attempts.exhausted:
            final_id, final_text, terminal = None, "", None
            ctx.structured_output = None
            ctx.ends_turn = False   # a stale mark (an interrupted turn) must not end this one
            async for ev in conv.submit(next_input, abort=abort):
                if isinstance(ev, AssistantEvent) and not ev.message.is_api_error:
                    if ev.message.id != final_id:  # only the last response's text is the answer
                        final_id, final_text = ev.message.id, ""
                    final_text += ev.message.text
                elif isinstance(ev, Terminal):
                    terminal = ev
                yield ev
            if terminal is None or terminal.reason is not TerminalReason.COMPLETED:
                return
            answer, ctx.structured_output = ctx.structured_output, None
            if answer is not None:   # the model answered through the tool (validated there)
                yield SystemEvent(StructuredEvent.OUTPUT.value, data={"structured_output": answer.value,
                                                                      "attempts": attempts.used + 1, "via": NAME})
                return
            if attempts.exhausted:    # invalid tool calls spent the last attempt and ended the turn
                break
            value, errors = check_answer(final_text, schema)
            if not errors:
                yield SystemEvent(StructuredEvent.OUTPUT.value, data={"structured_output": value,
                                                                      "attempts": attempts.used + 1})
                return
            attempts.spend(errors)
            if not attempts.exhausted:
                text = retry_message(errors, schema)
                if offered:
                    text += f"\n\n(Or call the {NAME} tool with that value as its input.)"
                next_input = user_message(text, is_meta=True)
        yield SystemEvent(StructuredEvent.FAILED.value,
                          f"The answer did not match the JSON schema after {attempts.used} attempt(s).",
                          "error", data={"errors": attempts.errors, "attempts": attempts.used})
    finally:
        tool = next((t for t in conv.config.tools if t.name == NAME), None)
        if tool is not None and getattr(tool, "attempts", None) is attempts:
            tool.attempts = None   # the tool outlives the run: later calls are not this run's attempts
