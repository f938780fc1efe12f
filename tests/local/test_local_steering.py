"""The local profile's call steering (issue 29): Read's line numbers taken out of what Write and
Edit write, and Edit's replace_all offered as an argument the model must decide. Units on the
rule itself, then through the real CLI against a fake model server, on real files."""

from __future__ import annotations

import json

import pytest
from test_local_cli import reply, run_local

from codeloop.providers.constrained import argument_schema, strip_read_numbers, without_read_numbers

NUMBERED = "     1\tpytest>=8\n     2\trequests>=2\n"


@pytest.mark.parametrize(("text", "expected"), [
    (NUMBERED, "pytest>=8\nrequests>=2\n"),
    ("     7\t    return x\n     8\tprint(f())", "    return x\nprint(f())"),   # indentation after the tab kept
    ("     1\tbuy milk", "buy milk"),
    ("    12\ta\n    13\tb\n", "a\nb\n"),
])
def test_reads_numbers_come_off_when_every_line_has_them(text, expected):
    assert without_read_numbers(text) == expected


@pytest.mark.parametrize("text", [
    "1\tann\n2\tbob\n",                         # a tab-separated file of its own: no Read padding
    "     1\tpytest>=8\nrequests>=2\n",         # not every line
    "     1\ta\n     3\tb\n",                   # not counting up by one
    "     2\ta\n     1\tb\n",
    "id  name\n",
    "",
])
def test_text_that_is_not_pasted_from_read_is_left_alone(text):
    assert without_read_numbers(text) is None


def test_an_edit_pasted_from_read_loses_the_numbers_on_both_sides():
    inp = {"file_path": "r.txt", "old_string": "     2\trequests>=2",
           "new_string": "     2\trequests>=2\ncoverage>=7", "replace_all": False}
    assert strip_read_numbers("Edit", inp) == {**inp, "old_string": "requests>=2",
                                               "new_string": "requests>=2\ncoverage>=7"}
    # new_string alone numbered: a list the model means to write stays as it is
    own = {"file_path": "r.txt", "old_string": "x", "new_string": "     1\tfirst"}
    assert strip_read_numbers("Edit", own) == own
    assert strip_read_numbers("Bash", {"command": "     1\tls"}) == {"command": "     1\tls"}


def test_replace_all_can_be_made_a_required_argument():
    schema = {"properties": {"file_path": {"type": "string"}, "replace_all": {"type": "boolean", "default": False}},
              "required": ["file_path"]}
    assert argument_schema(schema)["required"] == ["file_path"]
    extended = argument_schema(schema, ("replace_all",))
    assert extended["required"] == ["file_path", "replace_all"]
    assert extended["properties"]["replace_all"] == {"type": "boolean"}


def _result(stdout: str) -> dict:
    return [json.loads(x) for x in stdout.splitlines() if x.strip()][-1]


def test_a_write_pasted_from_read_lands_without_the_numbers(tmp_path):
    (tmp_path / "requirements.txt").write_text("pytest>=8\nrequests>=2\n")
    r, api = run_local(
        tmp_path, "Put mypy>=1 in requirements.txt as a third line.",
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "requirements.txt"}})),
        reply(json.dumps({"name": "Write", "arguments": {
            "file_path": "requirements.txt", "content": NUMBERED + "     3\tmypy>=1\n"}})),
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "requirements.txt"}})),
        reply(json.dumps({"answer": "requirements.txt now ends with mypy>=1."})), args=("--allowedTools", "Write"))
    assert r.returncode == 0, r.stderr
    assert _result(r.stdout)["subtype"] == "success"
    assert (tmp_path / "requirements.txt").read_text() == "pytest>=8\nrequests>=2\nmypy>=1\n"
    # the history the model sees afterwards shows the call as it was applied
    write = [m["content"] for m in api.requests[-1].body["messages"]
             if m["role"] == "assistant" and '"Write"' in m["content"]]
    assert json.loads(write[0])["arguments"]["content"] == "pytest>=8\nrequests>=2\nmypy>=1\n"


def test_edit_offers_replace_all_and_a_rename_reaches_every_use(tmp_path):
    (tmp_path / "calc.py").write_text("def half(n):\n    return n / 2\n\n\nprint(half(8))\nprint(half(half(8)))\n")
    r, api = run_local(
        tmp_path, "Rename half to halve in calc.py.",
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "calc.py"}})),
        reply(json.dumps({"name": "Edit", "arguments": {"file_path": "calc.py", "old_string": "half",
                                                        "new_string": "halve", "replace_all": True}})),
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "calc.py"}})),
        reply(json.dumps({"answer": "half is now halve in all four places."})), args=("--allowedTools", "Edit"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "calc.py").read_text() == \
        "def halve(n):\n    return n / 2\n\n\nprint(halve(8))\nprint(halve(halve(8)))\n"
    first = api.requests[0].body
    edit = next(o for o in first["response_format"]["json_schema"]["schema"]["anyOf"]
                if o["properties"].get("name", {}).get("const") == "Edit")
    assert edit["properties"]["arguments"]["required"] == ["file_path", "old_string", "new_string", "replace_all"]
    assert '"replace_all": boolean' in first["messages"][0]["content"]


def test_grep_from_the_local_model_ignores_case(tmp_path):
    (tmp_path / "members.txt").write_text("alice T1\ndana T3\n")
    r, _ = run_local(tmp_path, "Which team code does Dana have?",
                     reply(json.dumps({"name": "Grep", "arguments": {"pattern": "Dana"}})),
                     reply(json.dumps({"answer": "dana is in T3."})))
    assert r.returncode == 0, r.stderr
    results = [b for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "user"
               for b in x["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    text = results[0]["content"] if isinstance(results[0]["content"], str) else results[0]["content"][0]["text"]
    assert "members.txt:2:dana T3" in text


def test_the_results_turn_lists_the_changes_already_made():
    from codeloop.providers.constrained import render_messages
    from codeloop.session.local_profile import change_rules

    def turn(name, inp, result, i, error=False):
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name, "input": inp}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result,
                                              "is_error": error}]}]

    prompt = [{"role": "user", "content": "Rename area to size in shapes.py."}]
    failed = turn("Edit", {"file_path": "shapes.py", "old_string": "area", "new_string": "size"}, "Found 2", 1, True)
    sed = turn("Bash", {"command": "sed -i 's/area/size/g' shapes.py"}, "(no output)", 2)
    look = turn("Read", {"file_path": "shapes.py"}, "     1\tdef size(w, h):", 3)
    msgs = [*prompt, *failed, *sed, *look]
    out = render_messages([], msgs, "", remind=True, rules=change_rules())
    last = out[-1]["content"]
    assert "Changes already made for this request" in last and "sed -i 's/area/size/g' shapes.py" in last
    assert '"Edit"' not in last            # the failed Edit changed nothing
    # after a look, small models turn a working fix back ("count = '5'" made "count = 5" again)
    assert "never undo" in last
    # before any change: no such line; earlier turns render as they did (the prompt cache holds)
    before = render_messages([], [*prompt, *failed], "", remind=True, rules=change_rules())
    assert "Changes already made" not in json.dumps(before) and out[:len(before)] == before


@pytest.mark.parametrize(("text", "old", "new", "expected"), [
    # the name alone on one line, inside a longer name elsewhere: only that line changes
    ("def mean(xs):\n    return sum(xs) / len(x)\n", "x", "xs",
     ("    return sum(xs) / len(x)", "    return sum(xs) / len(xs)")),
    # several uses: the lines from the first to the last, the longer name between them kept
    ("area = 1\ntotal_area = area + 2\nprint(area)\n", "area", "size",
     ("area = 1\ntotal_area = area + 2\nprint(area)", "size = 1\ntotal_area = size + 2\nprint(size)")),
    ("n = 1\nn2 = n\n", "n", r"a\1", ("n = 1\nn2 = n", "a\\1 = 1\nn2 = a\\1")),   # new text taken literally
])
def test_replace_all_of_a_bare_name_is_narrowed_to_whole_words(text, old, new, expected):
    from codeloop.session.local_fixes import whole_word_edit

    assert whole_word_edit(text, old, new) == expected


@pytest.mark.parametrize(("text", "old"), [
    ("def dbl(n):\n    return dbl(1)\n", "dbl"),      # every use a whole word: replace_all is right as it is
    ("xs = [1]\nprint(xs)\n", "x"),                    # never a whole word: nothing to narrow
    ("a = 1\nb = len(x)\n", "len(x)"),                 # not a bare name
    ("xy = 1\nx\n", "x"),                             # the line alone ("x") is not unique in the file
])
def test_replace_all_is_left_alone_when_there_is_nothing_to_narrow(text, old):
    from codeloop.session.local_fixes import whole_word_edit

    assert whole_word_edit(text, old, "y") is None


def test_a_rename_by_replace_all_from_the_local_model_keeps_longer_names(tmp_path):
    (tmp_path / "calc.py").write_text("def mean(xs):\n    return sum(xs) / len(x)\n\n\nprint(mean([2, 4, 6]))\n")
    r, api = run_local(
        tmp_path, "Fix the NameError in calc.py.",
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "calc.py"}})),
        reply(json.dumps({"name": "Edit", "arguments": {"file_path": "calc.py", "old_string": "x",
                                                        "new_string": "xs", "replace_all": True}})),
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "calc.py"}})),
        reply(json.dumps({"answer": "len(x) is now len(xs)."})), args=("--allowedTools", "Edit"))
    assert r.returncode == 0, r.stderr
    # replaced as text, every xs would have become xss
    assert (tmp_path / "calc.py").read_text() == \
        "def mean(xs):\n    return sum(xs) / len(xs)\n\n\nprint(mean([2, 4, 6]))\n"
    # the history shows the call as it was applied
    edit = [m["content"] for m in api.requests[-1].body["messages"] if m["role"] == "assistant" and '"Edit"' in
            m["content"]]
    assert json.loads(edit[0])["arguments"]["replace_all"] is False


def test_the_tool_list_sends_copies_sizes_and_permissions_to_bash():
    from codeloop.session.local_profile import LOCAL_SYSTEM_PROMPT, SHORT_DESCRIPTIONS

    # a small model otherwise copies a file by writing it out, and answers "the largest" or
    # "which are executable" from a listing of names
    assert "(cp)" in SHORT_DESCRIPTIONS["Bash"] and "ls -l" in SHORT_DESCRIPTIONS["Bash"]
    assert "cp" in SHORT_DESCRIPTIONS["Write"] and "names only" in SHORT_DESCRIPTIONS["Glob"]
    assert "sizes or permissions: Bash" in LOCAL_SYSTEM_PROMPT
    # no kind named: the whole folder, not a kind made up (data/*.txt for a folder of .csv files)
    assert "the folder and * when it names no kind" in SHORT_DESCRIPTIONS["Glob"]
    # the worked count: the numbers come from what wc printed, its total line left out
    example = LOCAL_SYSTEM_PROMPT.split("how many lines do the .log files")[1]
    assert '"wc -l logs/*.log"' in example and "16 total" in example and "16" not in example.split('"answer"')[1]


SETTINGS = '{\n  "name": "demo",\n  "debug": false,\n  "retries": 3\n}\n'


@pytest.mark.parametrize(("text", "old", "new", "expected"), [
    (SETTINGS, "debug: false", "debug: true", ('debug": false', 'debug": true')),
    (SETTINGS, "name: demo", "name: demo2", ('name": "demo', 'name": "demo2')),   # the changed part inside quotes
    ('print("Helo, world")\n', "print(Helo, world)", "print(Hello, world)",
     ('print("Helo, world")', 'print("Hello, world")')),
    ("x = 'ab'\n", "x = ab", "x = aab", ("x = 'ab", "x = 'aab")),
])
def test_an_old_string_that_lost_its_quotes_is_matched_with_them(text, old, new, expected):
    from codeloop.session.local_fixes import requoted_edit

    assert requoted_edit(text, old, new) == expected


@pytest.mark.parametrize(("text", "old"), [
    (SETTINGS, '"debug": false'),                       # found as written: nothing to fix
    (SETTINGS, "debug: maybe"),                         # not there even without quotes
    ('a="b"\n', "=b"),                                  # too short to place
    ('"k": 1\n"k": 1\n', "k: 1"),                       # found twice
    ("count = 5\n", "count = '5'"),                    # quotes the file lacks: the model's own
])
def test_an_old_string_is_left_alone_unless_quotes_alone_kept_it_from_matching(text, old):
    from codeloop.session.local_fixes import requoted_edit

    assert requoted_edit(text, old, old + "!") is None


def test_a_json_edit_without_quotes_from_the_local_model_lands(tmp_path):
    (tmp_path / "settings.json").write_text(SETTINGS)
    r, _ = run_local(
        tmp_path, 'In settings.json, set "debug" to true.',
        reply(json.dumps({"name": "Edit", "arguments": {"file_path": "settings.json", "old_string": "debug: false",
                                                        "new_string": "debug: true", "replace_all": False}})),
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "settings.json"}})),
        reply(json.dumps({"answer": "debug is now true."})), args=("--allowedTools", "Edit"))
    assert r.returncode == 0, r.stderr
    # as written the Edit fails ("String to replace not found") and the file stays false
    assert json.loads((tmp_path / "settings.json").read_text()) == {"name": "demo", "debug": True, "retries": 3}


def test_a_change_made_again_exactly_becomes_a_look(tmp_path):
    (tmp_path / "shout.py").write_text('def shout(s)\n    return s.upper()\n')
    edit = {"name": "Edit", "arguments": {"file_path": "shout.py", "old_string": "def shout(s)",
                                          "new_string": "def shout(s):", "replace_all": False}}
    r, _ = run_local(
        tmp_path, "Fix the syntax error in shout.py.",
        reply(json.dumps(edit)),
        reply(json.dumps({"name": "Read", "arguments": {"file_path": "shout.py"}})),
        reply(json.dumps(edit)),                                   # the same Edit again
        reply(json.dumps({"answer": "def shout(s) now ends with a colon."})), args=("--allowedTools", "Edit"))
    assert r.returncode == 0, r.stderr
    # applied twice, the Edit would leave "def shout(s)::"
    assert (tmp_path / "shout.py").read_text() == 'def shout(s):\n    return s.upper()\n'
    calls = [(b["name"], b["input"]) for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "assistant"
             for b in x["message"]["content"] if b["type"] == "tool_use"]
    assert [n for n, _ in calls] == ["Edit", "Read", "Read"] and calls[2][1] == {"file_path": "shout.py"}


def test_a_fix_never_puts_unseen_file_lines_before_the_model():
    """The Edit fixes read the file outside the permission checks: a rewritten old_string is kept
    only when each of its lines was the model's own (quotes aside) or shown to it already."""
    from codeloop.providers.request_rules import reveals_nothing

    model = {"file_path": "calc.py", "old_string": "x", "new_string": "xs", "replace_all": True}
    widened = {**model, "old_string": "def mean(xs):\n    return sum(xs) / len(x)", "replace_all": False}
    read = [{"role": "user", "content": "Fix calc.py"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": "     1\tdef mean(xs):\n     2\t    return sum(xs) / len(x)"}]}]
    assert not reveals_nothing(read[:1], model, widened)          # never read: the lines stay unseen
    assert reveals_nothing(read, model, widened)                   # read first: nothing new
    quotes = {"file_path": "s.json", "old_string": "debug: false", "new_string": "debug: true"}
    assert reveals_nothing([], quotes, {**quotes, "old_string": 'debug": false'})   # only the file's quotes
    assert reveals_nothing([], model, model)


def test_a_rename_in_a_file_never_shown_is_not_widened(tmp_path):
    (tmp_path / "calc.py").write_text("def mean(xs):\n    return sum(xs) / len(x)\n")
    r, api = run_local(
        tmp_path, "Rename x to xs in the module.",   # names no file: nothing is attached
        reply(json.dumps({"name": "Edit", "arguments": {"file_path": "calc.py", "old_string": "x",
                                                        "new_string": "xs", "replace_all": True}})),
        reply(json.dumps({"answer": "done"})), args=("--allowedTools", "Edit"))
    assert r.returncode == 0, r.stderr
    calls = [json.loads(m["content"]) for m in api.requests[-1].body["messages"]
             if m["role"] == "assistant" and '"Edit"' in m["content"]]
    # the call stays the model's own: widened, it would have carried the file's lines unread
    assert calls[0]["arguments"]["old_string"] == "x" and calls[0]["arguments"]["replace_all"] is True


def test_an_edit_naming_a_fifo_never_hangs_the_fix(tmp_path, monkeypatch):
    """A FIFO planted under the name an Edit gives is not read (it would block for ever)."""
    import os

    from codeloop.session.local_fixes import fix_edit

    os.mkfifo(tmp_path / "pipe")
    monkeypatch.chdir(tmp_path)
    inp = {"file_path": "pipe", "old_string": "x", "new_string": "xs", "replace_all": True}
    assert fix_edit("Edit", inp) == inp
