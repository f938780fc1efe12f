"""The local profile's note under an `ls -l` listing (issue 29, round 4): the largest regular file
and which are executable, in words, so a small model need not read permission strings."""

from __future__ import annotations

from pathlib import Path

from test_local_profile import _turn

from codeloop.providers.base import ModelRequest
from codeloop.providers.local import LocalProvider, LocalRuntime
from codeloop.providers.request_rules import listing_note
from codeloop.session.local_profile import SHORT_DESCRIPTIONS, change_rules

LISTING = ("total 12\n-rwxr-xr-x 1 ann staff   22 Dec  4 21:49 build.sh\n"
           "-rw-r--r-- 1 ann staff   19 Dec  4 21:49 clean.sh\n-rwxr-xr-x 1 ann staff   31 Dec  4  2025 test.sh\n"
           "drwxr-xr-x 2 ann staff 4096 Dec  4 21:49 sub\nlrwxrwxrwx 1 ann staff    8 Dec  4 21:49 t -> test.sh\n")
TOOLS = [{"name": n, "description": "", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
    for n in ("Read", "Bash")]


def test_a_listing_is_summed_up_in_words():
    assert listing_note(LISTING) == ("(This listing's files: largest test.sh (31 bytes); executable: build.sh, "
                                     "test.sh; not executable: clean.sh.)")
    one = "-rw-r--r-- 1 ann staff 19 Dec  4 21:49 clean.sh"
    assert listing_note(one) == "(This listing's files: executable: none; not executable: clean.sh.)"
    # a tie has no largest; anything but a listing gets no note
    tie = "-rw-r--r-- 1 a s 5 Dec 4 21:49 a\n-rw-r--r-- 1 a s 5 Dec 4 21:49 b"
    assert "largest" not in listing_note(tie)
    for other in ("", "build.sh\nclean.sh", "bin:\n" + LISTING, "7 journal.txt", LISTING + "oops"):
        assert listing_note(other) == "", other


def test_the_note_follows_a_shell_listing_in_the_results_turn():
    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())
    msgs = [{"role": "user", "content": "Which of the scripts in bin are executable?"},
            *_turn("Bash", {"command": "ls -l bin"}, LISTING, 1)]
    last = p.request_body(ModelRequest(model="local", messages=msgs, tools=TOOLS, max_tokens=64))["messages"][-1]
    assert "-rwxr-xr-x" in last["content"] and "executable: build.sh, test.sh; not executable: clean.sh" in last[
        "content"]
    # a Read of a file that happens to hold a listing is the file's text: no note
    read = [msgs[0], *_turn("Read", {"command": "notes"}, LISTING, 1)]
    last = p.request_body(ModelRequest(model="local", messages=read, tools=TOOLS, max_tokens=64))["messages"][-1]
    assert "This listing's files" not in last["content"]


def test_an_answer_that_pastes_an_edit_report_keeps_only_its_own_words(tmp_path):
    import json

    from test_local_cli import reply, run_local

    from codeloop.providers.request_rules import cut_pasted_report

    pasted = ("The file /w/greet.py has been updated. Here's the result of running `cat -n` on a snippet of the "
              "edited file:\n     1\tdef greet():\n     2\t    print('Hello, world')")
    assert cut_pasted_report(pasted) == "The file /w/greet.py has been updated."
    # own words, a quote of numbered lines, or nothing but the report: as written
    for answer in ("greet.py now says Hello.", "Lines 1-2:\n     1\ta\n     2\tb",
                   "Here's the result of running `cat -n`:\n     1\tx"):
        assert cut_pasted_report(answer) == answer
    (tmp_path / "greet.py").write_text('print("Helo")\n')
    r, _ = run_local(tmp_path, "Fix the typo in greet.py: Helo should be Hello.",
                     reply(json.dumps({"name": "Edit", "arguments": {
                         "file_path": "greet.py", "old_string": 'print("Helo")', "new_string": 'print("Hello")',
                         "replace_all": False}})),
                     reply(json.dumps({"name": "Read", "arguments": {"file_path": "greet.py"}})),
                     reply(json.dumps({"answer": pasted})), args=("--allowedTools", "Edit"))
    assert r.returncode == 0, r.stderr
    result = [json.loads(x) for x in r.stdout.splitlines() if x.strip()][-1]
    assert result["result"] == "The file /w/greet.py has been updated."
