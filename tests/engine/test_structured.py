"""Structured output: schema loading, JSON extraction, validation (jsonschema and the built-in
subset agree), the retry message, and the answer → validate → retry cycle on a real Conversation."""

import json

import pytest

from fakeapi import ScriptedAPI, error, sse, text, tool_use
from codeloop.events import SystemEvent, Terminal, UserEvent
from codeloop.session.structured import (SchemaError, StructuredEvent, builtin_validate, extract_json, parse_schema,
                                      retry_message, run_structured, validate)
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
                                           "age": {"type": "integer", "minimum": 0},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
          "required": ["name"], "additionalProperties": False}


def test_parse_schema_from_string_and_file(tmp_path):
    assert parse_schema(json.dumps(SCHEMA)) == SCHEMA
    f = tmp_path / "schema.json"
    f.write_text(json.dumps(SCHEMA))
    assert parse_schema(str(f)) == SCHEMA
    with pytest.raises(SchemaError, match="invalid JSON"):
        parse_schema('{"type": ')
    with pytest.raises(SchemaError, match="not JSON and not a readable file"):
        parse_schema(str(tmp_path / "missing.json"))
    with pytest.raises(SchemaError, match="must be an object"):
        parse_schema("[1, 2]")
    with pytest.raises(SchemaError, match="not a valid JSON schema"):
        parse_schema('{"type": 12}')


def test_extract_json():
    assert extract_json(' {"a": 1} ') == {"a": 1}
    assert extract_json('Here you go:\n```json\n{"a": [1, 2]}\n```\nthanks') == {"a": [1, 2]}
    assert extract_json("```\n[1]\n```") == [1]
    with pytest.raises(ValueError, match="not JSON"):
        extract_json("The answer is four.")


CASES = [
    ({"name": "x"}, True), ({"name": "x", "age": 3, "tags": ["a"]}, True),
    ({}, False), ({"name": ""}, False), ({"name": "x", "age": -1}, False), ({"name": "x", "age": 1.5}, False),
    ({"name": "x", "extra": 1}, False), ({"name": "x", "tags": ["c"]}, False), ([], False), ({"name": 3}, False),
    ({"name": "x", "age": True}, False),
]


@pytest.mark.parametrize("instance,ok", CASES)
def test_validators_agree(instance, ok):
    assert (validate(instance, SCHEMA) == []) is ok
    assert (builtin_validate(instance, SCHEMA) == []) is ok


def test_builtin_combinators_and_messages():
    schema = {"anyOf": [{"type": "string"}, {"type": "number", "maximum": 5}]}
    assert builtin_validate("s", schema) == [] and builtin_validate(3, schema) == []
    assert "anyOf" in builtin_validate(9, schema)[0]
    one = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert builtin_validate(1.5, one) == [] and "exactly 1" in builtin_validate(2, one)[0]
    assert builtin_validate(2, {"allOf": [{"minimum": 1}, {"maximum": 1}]}) == ["$: 2 violates maximum 1"]
    assert builtin_validate({"a": {"b": 1}}, {"properties": {"a": {"properties": {"b": {"const": 2}}}}}) == [
        "$.a.b: 2 was expected"]
    errs = validate({"name": "x", "age": "old"}, SCHEMA)
    assert errs and errs[0].startswith("$.age")


def test_retry_message_lists_errors_and_schema():
    msg = retry_message(["$.age: 'old' is not of type 'integer'"], SCHEMA)
    assert "- $.age: 'old' is not of type 'integer'" in msg and '"additionalProperties": false' in msg
    assert "only a JSON value" in msg


def conv_for(api, tmp_path):
    cfg = ConversationConfig(cwd=tmp_path, model="claude-sonnet-4-5", tools=[], system_prompt=["t"], user_context={},
                             policy=PermissionPolicy(mode=PermissionMode.BYPASS))
    return Conversation(cfg, AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                        session_id="11111111-2222-4333-8444-555555555555")


async def collect(gen):
    return [e async for e in gen]


async def test_run_structured_retries_then_succeeds(tmp_path):
    api = ScriptedAPI(sse(text('{"name": ""}')), sse(text('{"name": "Ada", "age": 36}')))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "who?", SCHEMA, 2))
    last = events[-1]
    assert isinstance(last, SystemEvent) and last.subtype == StructuredEvent.OUTPUT.value
    assert last.data["structured_output"] == {"name": "Ada", "age": 36} and last.data["attempts"] == 2
    retry_users = [e.message for e in events if isinstance(e, UserEvent) and e.message.is_meta]
    assert len(retry_users) == 1 and "does not satisfy" in retry_users[0].text
    assert "$.name" in api.requests[1].messages[-1]["content"][-1]["text"]
    assert sum(isinstance(e, Terminal) for e in events) == 2
    assert conv.messages[-1].text == '{"name": "Ada", "age": 36}'


async def test_run_structured_gives_up_after_the_limit(tmp_path):
    api = ScriptedAPI(sse(text("nope")), sse(text("nope")), sse(text("nope")))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "json!", SCHEMA, 2))
    assert events[-1].subtype == StructuredEvent.FAILED.value and events[-1].level == "error"
    assert events[-1].data["attempts"] == 3 and "not JSON" in events[-1].data["errors"][0]
    assert len(api.requests) == 3


async def test_run_structured_stops_on_a_failed_turn(tmp_path):
    api = ScriptedAPI(error(400, "invalid_request_error", "bad"))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "json!", SCHEMA, 2))
    assert isinstance(events[-1], Terminal) and len(api.requests) == 1
    assert not any(isinstance(e, SystemEvent) and e.subtype.startswith("structured") for e in events)


# -- the StructuredOutput tool (Claude Code's approach: the schema is offered up front) -------------
def _offered(req):
    return next(t for t in req.body["tools"] if t["name"] == "StructuredOutput")


async def test_tool_answer_is_the_structured_output_in_one_request(tmp_path):
    api = ScriptedAPI(sse(tool_use("StructuredOutput", {"name": "Ada", "age": 36}, id="so1")))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "who?", SCHEMA, 2))
    assert len(api.requests) == 1                       # a valid call ends the turn: no follow-up request
    assert _offered(api.requests[0])["input_schema"] == SCHEMA
    last = events[-1]
    assert last.subtype == StructuredEvent.OUTPUT.value and last.data["structured_output"] == {"name": "Ada", "age": 36}
    assert last.data["attempts"] == 1 and last.data["via"] == "StructuredOutput"
    terminal = next(e for e in events if isinstance(e, Terminal))
    assert terminal.reason.value == "completed"
    result = conv.messages[-1].content[0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "so1" and not result.get("is_error")


async def test_invalid_tool_input_is_corrected_in_the_same_turn(tmp_path):
    api = ScriptedAPI(sse(tool_use("StructuredOutput", {"name": "Ada", "age": -3}, id="bad")),
                      sse(tool_use("StructuredOutput", {"name": "Ada", "age": 3}, id="good")))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "who?", SCHEMA, 2))
    # the invalid call was an attempt too (the retry limit counts it)
    assert events[-1].data["structured_output"] == {"name": "Ada", "age": 3} and events[-1].data["attempts"] == 2
    err = api.requests[1].messages[-1]["content"][0]
    assert err["is_error"] is True and "$.age" in err["content"]
    assert "does not match the required schema" in err["content"]
    assert sum(isinstance(e, Terminal) for e in events) == 1 and len(api.requests) == 2


async def test_non_object_schema_is_wrapped_and_unwrapped(tmp_path):
    schema = {"type": "array", "items": {"type": "integer"}}
    api = ScriptedAPI(sse(tool_use("StructuredOutput", {"value": [1, 2, 3]}, id="so")))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "numbers", schema, 1))
    offered = _offered(api.requests[0])["input_schema"]
    assert offered["type"] == "object" and offered["properties"]["value"] == schema
    assert events[-1].data["structured_output"] == [1, 2, 3]


async def test_text_answer_still_falls_back_and_the_retry_names_the_tool(tmp_path):
    api = ScriptedAPI(sse(text("not json")), sse(text('{"name": "Bo"}')))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "who?", SCHEMA, 2))
    assert events[-1].data["structured_output"] == {"name": "Bo"} and events[-1].data["attempts"] == 2
    assert "StructuredOutput" in api.requests[1].messages[-1]["content"][-1]["text"]


async def test_tool_not_offered_to_a_model_without_tool_use(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_MODEL_CAPABILITIES", json.dumps({"claude-sonnet-4-5": {"supports_tools": False}}))
    api = ScriptedAPI(sse(text('{"name": "Cy"}')))
    conv = conv_for(api, tmp_path)
    events = await collect(run_structured(conv, "who?", SCHEMA, 2))
    assert "StructuredOutput" not in api.requests[0].tool_names
    assert events[-1].data["structured_output"] == {"name": "Cy"}


async def test_tool_schema_shapes_and_validation_errors(tmp_path):
    from codeloop.tools.base import StructuredAnswer, ToolContext, ToolError
    from codeloop.tools.builtin.structured_output import StructuredOutputTool

    untyped = {"properties": {"a": {"type": "integer"}}, "required": ["a"]}
    tool = StructuredOutputTool(untyped, validate)
    assert tool.input_schema() == {"type": "object", **untyped} and not tool.wrapped
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    with pytest.raises(ToolError, match=r"\$\.a"):
        await tool.call(tool.input_model.model_validate({"a": "x"}), ctx)
    assert ctx.structured_output is None and not ctx.ends_turn
    result = await tool.call(tool.input_model.model_validate({"a": 2}), ctx)
    assert ctx.structured_output == StructuredAnswer({"a": 2}) and ctx.ends_turn is True
    assert result.data == {"structured_output": {"a": 2}} and not result.is_error
    wrapped = StructuredOutputTool({"type": "string"}, validate)
    with pytest.raises(ToolError, match="'value' is a required property"):
        await wrapped.call(wrapped.input_model.model_validate({}), ctx)
