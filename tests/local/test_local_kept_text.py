"""The local profile's Edit text kept non-empty unless the request removes something (issue 29):
the schema the constrained body sends for Edit's new_string, by request."""

from __future__ import annotations

from pathlib import Path

from codeloop.providers.base import ModelRequest
from codeloop.providers.local import LocalProvider, LocalRuntime
from codeloop.session.local_profile import SHORT_DESCRIPTIONS, change_rules

TOOLS = [{"name": "Read", "description": "", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}},
         {"name": "Edit", "description": "", "input_schema": {
             "type": "object", "properties": {k: {"type": "string"} for k in ("file_path", "old_string", "new_string")},
             "required": ["file_path", "old_string", "new_string"]}},
         {"name": "Bash", "description": "", "input_schema": {
             "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]


def _provider() -> LocalProvider:
    return LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                         base_url="http://127.0.0.1:9/v1", rules=change_rules())


def _turn(name, inp, result, i):
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name, "input": inp}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result}]}]


def _options(msgs):
    body = _provider().request_body(ModelRequest(model="local", messages=msgs, tools=TOOLS, max_tokens=64))
    return {o["properties"]["name"]["const"] if "name" in o["properties"] else "answer": o
            for o in body["response_format"]["json_schema"]["schema"]["anyOf"]}


def test_an_edit_keeps_some_text_unless_the_request_removes_something():
    read = _turn("Read", {"file_path": "main.py"}, '     1\tprint("debug")', 1)

    def new_string(request):
        edit = _options([{"role": "user", "content": request}, *read])["Edit"]
        return edit["properties"]["arguments"]["properties"]["new_string"]

    assert new_string("In main.py, comment out the line that prints debug.") == {"type": "string", "minLength": 1}
    assert new_string("In main.py, change debug to info.")["minLength"] == 1
    for request in ("In main.py, remove the line that prints debug.", "Delete the debug print from main.py.",
                    "Get rid of the debug print in main.py.", "Take out the debug line in main.py.",
                    "main.py should no longer print debug.", "Rewrite main.py without the debug print."):
        assert new_string(request) == {"type": "string"}


def test_without_the_profile_rules_nothing_is_narrowed():
    plain = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), base_url="http://127.0.0.1:9/v1")
    msgs = [{"role": "user", "content": "In main.py, comment out the debug line."}]
    body = plain.request_body(ModelRequest(model="local", messages=msgs, tools=TOOLS, max_tokens=64))
    edit = next(o for o in body["response_format"]["json_schema"]["schema"]["anyOf"]
                if o["properties"].get("name", {}).get("const") == "Edit")
    assert edit["properties"]["arguments"]["properties"]["new_string"] == {"type": "string"}


def test_a_refused_edit_is_no_change_made():
    from test_local_profile import _offers_answer

    p = _provider()
    prompt = [{"role": "user", "content": "Add a function cube(n) to powers.py."}]
    read = _turn("Read", {"file_path": "powers.py"}, "     1\tdef square(n):\n     2\t    return n * n", 1)
    refused = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {
        "file_path": "powers.py", "old_string": "def square(n):", "new_string": "def square(n):\n\ndef cube(n):"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "is_error": True,
                                             "content": "Edit not applied: line 1 opens a block"}]}]
    look = _turn("Read", {"file_path": "powers.py"}, "     1\tdef square(n):\n     2\t    return n * n", 3)
    msgs = [*prompt, *read, *refused, *look]
    assert not _offers_answer(p, msgs)                   # refused, then looked at: still nothing changed
    assert set(_options(msgs)) == {"Edit", "Bash"}       # only the tools that change files
    body = p.request_body(ModelRequest(model="local", messages=msgs, tools=TOOLS, max_tokens=64))
    assert "Nothing has been changed yet" in body["messages"][-1]["content"]
    done = _turn("Edit", {"file_path": "powers.py", "old_string": "def square(n):\n    return n * n",
                          "new_string": "def square(n):\n    return n * n\n\n\ndef cube(n):\n    return n ** 3"},
                 "The file powers.py has been updated.", 4)
    assert _offers_answer(p, [*msgs, *done, *_turn("Read", {"file_path": "powers.py"}, "     1\tdef square(n):", 5)])
