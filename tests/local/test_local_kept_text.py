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
