"""The local profile's Write fix (issue 29, round 4): a Write that would only re-create an
existing file, its final newline lost, writes the file as it is; kept only when the file's lines
were already shown to the model (a fix reads the file outside the permission checks)."""

from __future__ import annotations

import json
import os

from test_local_cli import reply, run_local

from codeloop.providers.request_rules import reveals_nothing
from codeloop.session.local_fixes import fix_write

SCRIPT = "#!/bin/sh\necho backing up\n"


def test_a_write_of_a_files_own_text_keeps_its_final_newline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "backup.sh").write_text(SCRIPT)
    lost = {"file_path": "backup.sh", "content": SCRIPT.rstrip("\n")}
    assert fix_write("Write", lost) == {**lost, "content": SCRIPT}
    assert fix_write("Write", {**lost, "content": SCRIPT + "\n\n"})["content"] == SCRIPT
    # a real change, the file's exact text, a new file, or another tool: left alone
    for inp in ({**lost, "content": "#!/bin/sh\necho done"}, {**lost, "content": SCRIPT},
                {"file_path": "new.sh", "content": "echo hi"}, {**lost, "content": ""}):
        assert fix_write("Write", inp) == inp
    assert fix_write("Edit", lost) == lost


def test_the_write_fix_is_kept_only_for_a_file_already_shown():
    before = {"file_path": "backup.sh", "content": SCRIPT.rstrip("\n")}
    after = {**before, "content": SCRIPT}
    shown = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                           "content": "     1\t#!/bin/sh\n     2\techo backing up"}]}]
    assert reveals_nothing(shown, before, after)
    # never read: that the fix fired would tell the model its guess matched the file
    assert not reveals_nothing([{"role": "user", "content": "Make backup.sh executable."}], before, after)


def test_making_an_existing_script_executable_keeps_it_whole(tmp_path):
    (tmp_path / "backup.sh").write_text(SCRIPT)
    r, _ = run_local(
        tmp_path, "Make the existing script backup.sh executable.",   # names the file: it is attached
        reply(json.dumps({"name": "Write", "arguments": {"file_path": "backup.sh",
                                                         "content": SCRIPT.rstrip("\n")}})),
        reply(json.dumps({"name": "Bash", "arguments": {"command": "chmod +x backup.sh"}})),
        reply(json.dumps({"name": "Bash", "arguments": {"command": "ls -l backup.sh"}})),
        reply(json.dumps({"answer": "backup.sh is now executable."})), args=("--allowedTools", "Write", "Bash"))
    assert r.returncode == 0, r.stderr
    # as written, the Write leaves the script without its final newline
    assert (tmp_path / "backup.sh").read_text() == SCRIPT and os.access(tmp_path / "backup.sh", os.X_OK)


def _offered(messages):
    from pathlib import Path

    from codeloop.providers.base import ModelRequest
    from codeloop.providers.local import LocalProvider, LocalRuntime
    from codeloop.session.local_profile import SHORT_DESCRIPTIONS, change_rules

    tools = [{"name": n, "description": "", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
        for n in ("Read", "Edit", "Write", "Bash")]
    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())
    body = p.request_body(ModelRequest(model="local", messages=messages, tools=tools, max_tokens=64))
    return [o["properties"]["name"]["const"] if "name" in o["properties"] else "answer"
            for o in body["response_format"]["json_schema"]["schema"]["anyOf"]]


def _prompt(words, *attached):
    from codeloop.messages import READ_ATTACHMENT_HEAD

    blocks = [{"type": "text", "text": f'{READ_ATTACHMENT_HEAD}: {{"file_path": "/w/{a}"}}\n\nResult…'}
              for a in attached]
    return [{"role": "user", "content": [*blocks, {"type": "text", "text": words}]}]


def test_a_command_a_change_needs_comes_first_when_the_files_are_there():
    assert _offered(_prompt("Make the existing script tools/backup.sh executable.", "tools/backup.sh")) == ["Bash"]
    assert _offered(_prompt("Make a.sh and b.sh executable.", "a.sh", "b.sh")) == ["Bash"]
    assert _offered(_prompt("Make ./ci/.hooks/pre.sh executable.", "ci/.hooks/pre.sh")) == ["Bash"]
    assert _offered(_prompt("Make .hooks/pre.sh executable.", "x/hooks/pre.sh")) != ["Bash"]   # not that file
    # a file still to be written, or one not attached: every tool, as before
    assert _offered(_prompt("Create run.sh that prints ready, and make it executable.")) == [
        "Read", "Edit", "Write", "Bash"]
    assert _offered(_prompt("Make a.sh and b.sh executable.", "a.sh")) == ["Read", "Edit", "Write", "Bash"]
    # once the command has run, the rest of the change may use any tool
    chmod = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                "input": {"command": "chmod +x tools/backup.sh"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}]
    assert "Write" in _offered([*_prompt("Make tools/backup.sh executable.", "tools/backup.sh"), *chmod])


def test_a_write_that_drops_the_file_for_an_addition_keeps_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "powers.py").write_text("def square(n):\n    return n * n\n")
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    cube = {"file_path": "powers.py", "content": "def cube(n):\n    return n * n * n"}
    add = "Add a function cube(n) that returns n cubed to powers.py."
    assert fix_write("Write", cube, add)["content"] == (
        "def square(n):\n    return n * n\n\n\ndef cube(n):\n    return n * n * n\n")
    top = {"file_path": "notes.txt", "content": "zero"}
    assert fix_write("Write", top, "Add the line zero at the top of notes.txt.")["content"] == "zero\none\ntwo\n"
    assert fix_write("Write", top, "Append zero to notes.txt.")["content"] == "one\ntwo\nzero\n"
    # not an addition, or the model kept some of the file (its own rewrite): left alone
    assert fix_write("Write", cube, "Replace powers.py with a cube function.") == cube
    (tmp_path / "add.py").write_text("x = 1\n")   # "add" as a file's name asks for no addition
    mine = {"file_path": "add.py", "content": "print(2)\n"}
    assert fix_write("Write", mine, "Make add.py print 2.") == mine
    whole = {"file_path": "notes.txt", "content": "one\nzero\n"}
    assert fix_write("Write", whole, "Add zero to notes.txt.") == whole


def test_the_addition_fix_is_kept_only_for_a_file_already_shown():
    before = {"file_path": "powers.py", "content": "def cube(n):\n    return n ** 3\n"}
    after = {**before, "content": "def square(n):\n    return n * n\n\n\ndef cube(n):\n    return n ** 3\n"}
    read = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                         "content": "     1\tdef square(n):\n     2\t    return n * n"}]}
    assert reveals_nothing([read], before, after)
    assert not reveals_nothing([{"role": "user", "content": "Add cube to powers.py"}], before, after)
    # a file's lines only as parts of other text are not a Read of it
    said = [{"role": "user", "content": "Add cube to powers.py; keep def square(n): and return n * n there"}]
    assert not reveals_nothing(said, before, after)
    # Read's numbers taken out of the model's own lines show nothing, shown or not
    numbered = {"file_path": "new.txt", "content": "     1\talpha\n     2\tbeta\n"}
    assert reveals_nothing([], numbered, {**numbered, "content": "alpha\nbeta\n"})


def test_adding_a_function_through_the_cli_keeps_the_file(tmp_path):
    (tmp_path / "powers.py").write_text("def square(n):\n    return n * n\n")
    r, _ = run_local(
        tmp_path, "Add a function cube(n) that returns n cubed to powers.py.",
        reply(json.dumps({"name": "Write", "arguments": {"file_path": "powers.py",
                                                         "content": "def cube(n):\n    return n * n * n"}})),
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "powers.py"}})),
        reply(json.dumps({"answer": "powers.py now has cube."})), args=("--allowedTools", "Write"))
    assert r.returncode == 0, r.stderr
    assert "def square(n)" in (tmp_path / "powers.py").read_text()
    assert "def cube(n)" in (tmp_path / "powers.py").read_text()
