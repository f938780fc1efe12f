"""Tool calls written as text (issue 19): parsing the variants, the stream translator turning a
whole-text call into a tool_use block (and leaving ordinary answers alone), and the
schema-constrained request/reply form used by the local model."""

from __future__ import annotations

import json

import pytest

from codeloop.providers.base import ModelRequest
from codeloop.providers.constrained import (argument_schema, awaiting_first_call, constrained_body,
                                            render_messages, reply_schema)
from codeloop.providers.openai_translate import StreamTranslator
from codeloop.providers.text_tools import could_be_call, parse_text_calls

READ_ARGS = {"file_path": "notes.txt"}
CALL = json.dumps({"name": "Read", "arguments": READ_ARGS})


@pytest.mark.parametrize("text", [
    CALL,
    f"  {CALL}\n",
    f"```json\n{CALL}\n```",
    f"```\n{CALL}\n```",
    f"<tool_call>\n{CALL}\n</tool_call>",
    f"<tool_call>{CALL}",                                           # closing tag never came
    json.dumps({"name": "Read", "parameters": READ_ARGS}),
    json.dumps({"tool": "Read", "args": READ_ARGS}),
    json.dumps({"type": "function", "function": {"name": "Read", "arguments": json.dumps(READ_ARGS)}}),
    json.dumps({"name": "Read", "arguments": json.dumps(READ_ARGS)}),  # arguments as a JSON string
    CALL[:-1],                                                       # the closing brace forgotten
    '{"name": "Read", "arguments": {"file_path": "notes.txt",},}',   # trailing commas
    json.dumps([{"name": "Read", "arguments": READ_ARGS}]),
])
def test_variants_parse_to_the_same_call(text):
    reply = parse_text_calls(text)
    assert reply is not None and reply.answer is None
    assert [(c.name, c.input) for c in reply.calls] == [("Read", READ_ARGS)]


def test_several_tagged_calls_parse_in_order():
    glob = json.dumps({"name": "Glob", "arguments": {"pattern": "*"}})
    text = f"<tool_call>{CALL}</tool_call>\n<tool_call>{glob}</tool_call>"
    reply = parse_text_calls(text)
    assert reply is not None and [c.name for c in reply.calls] == ["Read", "Glob"]


@pytest.mark.parametrize("text", [
    "The file says hello.",
    f"I will read it now: {CALL}",                                   # not the whole text
    f"```python\n{CALL}\n```",                                       # a fence in another language
    json.dumps({"name": "Ann", "age": 41}),                          # data that has a name
    json.dumps({"name": "Read", "arguments": READ_ARGS, "note": "x"}),
    json.dumps({"name": "Read", "arguments": [1, 2]}),
    json.dumps({"name": "not a tool name!", "arguments": {}}),
    "{not json at all",
    f"<tool_call>{CALL}</tool_call> and then some prose",
])
def test_ordinary_answers_are_not_calls(text):
    assert parse_text_calls(text) is None


def test_answer_object_only_when_asked_for():
    text = json.dumps({"answer": "It is 42."})
    assert parse_text_calls(text) is None
    reply = parse_text_calls(text, answer_key="answer")
    assert reply is not None and reply.answer == "It is 42." and reply.calls == []


@pytest.mark.parametrize("prefix,expected", [
    ("", True), ("  ", True), ("{", True), ("`", True), ("``", True), ("```js", True), ("<tool", True),
    ("```json\n{", True), ("```python\n", False), ("Hello", False), ("The answer", False), ("<b>", False),
])
def test_could_be_call(prefix, expected):
    assert could_be_call(prefix) is expected


# -- the stream translator -----------------------------------------------------------------------

def chunk(content=None, finish=None):
    delta = {"content": content} if content is not None else {}
    return {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def translate(pieces, **kw):
    tr = StreamTranslator("m", **kw)
    events = []
    per_chunk = []
    for p in pieces:
        got = list(tr.feed(chunk(p)))
        per_chunk.append(got)
        events += got
    events += list(tr.feed(chunk(finish="stop")))
    events += list(tr.finish())
    return events, per_chunk


def blocks(events):
    out = []
    for e in events:
        if e["type"] == "content_block_start":
            out.append({**e["content_block"], "_json": ""})
        elif e["type"] == "content_block_delta":
            d = e["delta"]
            if d["type"] == "text_delta":
                out[-1]["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                out[-1]["_json"] += d["partial_json"]
    return out


def stop_reason(events):
    return next(e["delta"]["stop_reason"] for e in events if e["type"] == "message_delta")


def test_fenced_call_in_fragments_becomes_a_tool_use_block():
    text = f"```json\n{CALL}\n```"
    events, per_chunk = translate([text[i:i + 7] for i in range(0, len(text), 7)], tool_names=["Read", "Bash"])
    got = blocks(events)
    assert [b["type"] for b in got] == ["tool_use"]
    assert got[0]["name"] == "Read" and json.loads(got[0]["_json"]) == READ_ARGS and got[0]["id"]
    assert stop_reason(events) == "tool_use"
    # nothing of the blob was streamed as text while it was held back
    assert not any(e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta" for e in events)


def test_ordinary_text_still_streams_as_it_arrives():
    events, per_chunk = translate(["Hello", " there", "."], tool_names=["Read"])
    assert any(e.get("delta", {}).get("text") == "Hello" for e in per_chunk[0])
    got = blocks(events)
    assert got == [{"type": "text", "text": "Hello there.", "_json": ""}] and stop_reason(events) == "end_turn"


def test_a_json_answer_that_is_not_a_call_is_released_as_text():
    data = json.dumps({"name": "Ann", "age": 41})
    events, _ = translate([data[:5], data[5:]], tool_names=["Read"])
    assert blocks(events) == [{"type": "text", "text": data, "_json": ""}]


def test_unknown_tool_is_still_a_tool_use_so_the_loop_reports_an_error():
    blob = json.dumps({"name": "FetchWeb", "arguments": {"url": "x"}})
    events, _ = translate([blob], tool_names=["Read"])
    got = blocks(events)
    assert [(b["type"], b["name"]) for b in got] == [("tool_use", "FetchWeb")] and stop_reason(events) == "tool_use"


def test_without_offered_tools_a_blob_stays_text():
    events, _ = translate([CALL], tool_names=[])
    assert blocks(events) == [{"type": "text", "text": CALL, "_json": ""}]


def test_constrained_answer_becomes_plain_text():
    answer = json.dumps({"answer": "Line two is beta."})
    events, _ = translate([answer[:9], answer[9:]], tool_names=["Read"], answer_key="answer")
    assert blocks(events) == [{"type": "text", "text": "Line two is beta.", "_json": ""}]
    assert stop_reason(events) == "end_turn"


# -- the constrained form ------------------------------------------------------------------------

TOOLS = [{"name": "Read", "description": "Reads a file.\nLong text.", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string", "description": "abs path"},
                                     "limit": {"type": "integer", "default": None}},
    "required": ["file_path"], "additionalProperties": False}},
         {"name": "Bash", "description": "Runs.", "input_schema": {
             "type": "object", "properties": {"command": {"type": "string", "minLength": 1}}, "required": ["command"]}}]


def test_argument_schema_keeps_required_properties_only():
    assert argument_schema(TOOLS[0]["input_schema"]) == {
        "type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"],
        "additionalProperties": False}


def test_reply_schema_offers_each_tool_and_the_answer():
    schema = reply_schema(TOOLS)
    names = [o["properties"].get("name", {}).get("const") for o in schema["anyOf"]]
    assert names == ["Read", "Bash", None] and schema["anyOf"][-1]["required"] == ["answer"]
    assert "answer" not in json.dumps(reply_schema(TOOLS, allow_answer=False))


def history():
    return [{"role": "user", "content": [{"type": "text", "text": "what is in notes.txt?"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": READ_ARGS}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1\talpha"}]}]


def test_history_is_rendered_in_the_json_form_the_model_writes():
    msgs = render_messages([{"type": "text", "text": "SYS"}], history(), "TOOLS")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[0]["content"] == "SYS\n\nTOOLS"
    assert json.loads(msgs[2]["content"]) == {"name": "Read", "arguments": READ_ARGS}
    assert msgs[3]["content"] == "Result of Read:\n1\talpha"


def test_constrained_body_requires_a_tool_first_then_allows_the_answer():
    first = ModelRequest(model="m", messages=history()[:1], tools=TOOLS, max_tokens=100)
    later = ModelRequest(model="m", messages=history(), tools=TOOLS, max_tokens=100)
    assert awaiting_first_call(first.messages) and not awaiting_first_call(later.messages)
    b1 = constrained_body(first, tool_first=True)
    b2 = constrained_body(later, tool_first=True)
    assert "tools" not in b1 and b1["response_format"]["type"] == "json_schema"
    opts1 = b1["response_format"]["json_schema"]["schema"]["anyOf"]
    opts2 = b2["response_format"]["json_schema"]["schema"]["anyOf"]
    assert len(opts1) == 2 and len(opts2) == 3
    assert "- Read {\"file_path\": string}: Reads a file." in b1["messages"][0]["content"]


def test_input_defaults_fill_what_a_text_call_leaves_out():
    blob = json.dumps({"name": "Grep", "arguments": {"pattern": "PORT", "output_mode": "count"}})
    events, _ = translate([blob], tool_names=["Grep"],
                          input_defaults={"Grep": {"output_mode": "content", "-n": True}})
    got = blocks(events)
    assert json.loads(got[0]["_json"]) == {"pattern": "PORT", "output_mode": "count", "-n": True}


def test_a_repeated_call_takes_that_tool_off_the_next_reply():
    grep = {"type": "tool_use", "id": "g1", "name": "Grep", "input": {"pattern": "PORT = "}}
    msgs = [{"role": "user", "content": [{"type": "text", "text": "what is PORT?"}]},
            {"role": "assistant", "content": [grep]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "g1", "content": "No files found"}]}]
    tools = [{"name": n, "input_schema": {"type": "object", "properties": {}}} for n in ("Read", "Grep")]
    once = constrained_body(ModelRequest(model="m", messages=msgs, tools=tools), tool_first=True)
    again = msgs + [{"role": "assistant", "content": [{**grep, "id": "g2"}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "g2",
                                                  "content": "No files found"}]}]
    twice = constrained_body(ModelRequest(model="m", messages=again, tools=tools), tool_first=True)

    def offered(body):
        return [o["properties"].get("name", {}).get("const", "answer")
                for o in body["response_format"]["json_schema"]["schema"]["anyOf"]]
    # nothing found yet, so no answer either
    assert offered(once) == ["Read", "Grep"]
    assert offered(twice) == ["Read"]
    # a new prompt starts afresh
    fresh = again + [{"role": "assistant", "content": [{"type": "text", "text": "none"}]},
                     {"role": "user", "content": [{"type": "text", "text": "try again"}]}]
    assert offered(constrained_body(ModelRequest(model="m", messages=fresh, tools=tools), tool_first=True)) == \
        ["Read", "Grep"]


def test_answer_waits_for_a_result_that_found_something():
    from codeloop.providers.constrained import answer_allowed

    prompt = {"role": "user", "content": [{"type": "text", "text": "where is PORT?"}]}

    def call(i):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Grep",
                                                  "input": {"pattern": f"p{i}"}}]}

    def result(i, text, err=False):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": text,
                                             "is_error": err}]}
    assert not answer_allowed([prompt])
    assert not answer_allowed([prompt, call(1), result(1, "No matches found")])
    assert not answer_allowed([prompt, call(1), result(1, "boom", err=True)])
    assert answer_allowed([prompt, call(1), result(1, "config.ini:3:PORT=8431")])
    fruitless = [prompt]
    for i in range(3):
        fruitless += [call(i), result(i, "No files found")]
    assert answer_allowed(fruitless)  # "it is not there" must stay possible


def _offered(body):
    return [o["properties"].get("name", {}).get("const", "answer")
            for o in body["response_format"]["json_schema"]["schema"]["anyOf"]]


def test_results_end_with_the_request_restated_in_the_local_profile():
    attached = "Called the Read tool with the following input: {\"file_path\": \"a.txt\"}\n\nResult of ...\n1\tx"
    msgs = [{"role": "user", "content": [{"type": "text", "text": attached},
                                         {"type": "text", "text": "What   is\nPORT?"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": READ_ARGS}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1\talpha"}]}]
    plain = render_messages([], msgs, "")
    reminded = render_messages([], msgs, "", remind=True)
    assert plain[-1]["content"] == "Result of Read:\n1\talpha"
    last = reminded[-1]["content"]
    assert last.startswith("Result of Read:\n1\talpha\n\n(The request: What is PORT?\n")
    assert '{"answer": "..."}' in last and "Called the Read tool" not in last
    # the prompt turn itself is not reminded, and the prefix stays the same for the next turn
    assert reminded[1] == plain[1]
    body = constrained_body(ModelRequest(model="m", messages=msgs, tools=TOOLS), tool_first=True)
    assert body["messages"][-1]["content"] == last


def test_a_looping_model_must_answer():
    tools = [{"name": n, "input_schema": {"type": "object", "properties": {}}} for n in ("Read", "Grep")]
    msgs = [{"role": "user", "content": [{"type": "text", "text": "what is PORT?"}]}]
    calls = [("Grep", {"pattern": "P"}), ("Read", READ_ARGS), ("Grep", {"pattern": "P"}), ("Read", READ_ARGS)]
    seen = []
    for i, (name, args) in enumerate(calls):
        msgs = msgs + [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name,
                                                          "input": args}]},
                       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                     "content": "PORT=1" if name == "Read" else "No matches found"}]}]
        seen.append(_offered(constrained_body(ModelRequest(model="m", messages=msgs, tools=tools), tool_first=True)))
    assert seen[0] == ["Read", "Grep"]              # nothing found yet: no answer
    assert seen[1] == ["Read", "Grep", "answer"]
    assert seen[2] == ["Read", "answer"]            # Grep just repeated itself
    assert seen[3] == ["answer"]                    # two repeats: going round in circles
    # outside the local profile's steering the same history offers everything
    assert _offered(constrained_body(ModelRequest(model="m", messages=msgs, tools=tools))) == \
        ["Read", "Grep", "answer"]


def test_an_attached_file_still_needs_a_tool_call_first():
    from codeloop.providers.constrained import answer_allowed

    attached = {"type": "text", "text": "Called the Read tool with the following input: {}\n\nResult:\n1\tprint(6*7)"}
    assert not answer_allowed([{"role": "user", "content": [attached, {"type": "text", "text": "run x.py"}]}])
