"""The local profile's check by running a changed program, and the Edit text kept non-empty
(issue 29): what the constrained body offers after an Edit, and for which requests."""

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


def _edit(path):
    return _turn("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "The file has been updated.", 2)


def test_a_changed_program_may_be_checked_by_running_it_and_only_that():
    prompt = [{"role": "user", "content": "loop.py should print 1 to 3 but prints 1 to 2. Fix it."}]
    read = _turn("Read", {"file_path": "loop.py"}, "     1\tfor i in range(1, 3): print(i)", 1)
    after = _options([*prompt, *read, *_edit("loop.py")])
    assert list(after) == ["Read", "Bash"]           # a look, or the run; no answer, no second change
    assert after["Bash"]["properties"]["arguments"]["properties"]["command"]["enum"] == ["python3 loop.py"]
    assert _options([*prompt, *read, *_edit("sub dir/x.sh")])["Bash"]["properties"]["arguments"][
        "properties"]["command"]["enum"] == ["sh 'sub dir/x.sh'"]   # quoted for the shell
    # a file that is no program is only looked at, as before
    assert list(_options([*prompt, *read, *_edit("notes.txt")])) == ["Read"]
    # once the run printed something the change is checked: every tool and the answer again,
    # the shell unpinned
    ran = _turn("Bash", {"command": "python3 loop.py"}, "1\n2\n3", 3)
    later = _options([*prompt, *read, *_edit("loop.py"), *ran])
    assert list(later) == ["Read", "Edit", "Bash", "answer"]
    assert "enum" not in later["Bash"]["properties"]["arguments"]["properties"]["command"]


def test_an_edit_keeps_some_text_unless_the_request_removes_something():
    read = _turn("Read", {"file_path": "main.py"}, '     1\tprint("debug")', 1)

    def new_string(request):
        edit = _options([{"role": "user", "content": request}, *read])["Edit"]
        return edit["properties"]["arguments"]["properties"]["new_string"]

    assert new_string("In main.py, comment out the line that prints debug.") == {"type": "string", "minLength": 1}
    assert new_string("In main.py, change debug to info.")["minLength"] == 1
    for request in ("In main.py, remove the line that prints debug.", "Delete the debug print from main.py."):
        assert new_string(request) == {"type": "string"}
