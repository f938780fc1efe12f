"""The local profile's counts read from a search (issue 29, round 4): Grep's result carries a
tally of the lines and files it matched, and a question that counts the lines or files that
mention a word may be answered from it; other counts still wait for a command."""

from __future__ import annotations

from pathlib import Path

from test_local_profile import EDIT_TOOLS, _offers_answer, _turn

from codeloop.providers.base import ModelRequest
from codeloop.providers.local import LocalProvider, LocalRuntime
from codeloop.providers.request_rules import search_tally
from codeloop.session.local_profile import SHORT_DESCRIPTIONS, change_rules

TOOLS = [*EDIT_TOOLS, {"name": "Grep", "description": "", "input_schema": {
    "type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}]
HITS = "/tmp/x/journal.txt:2:Tue: rain all day\n/tmp/x/journal.txt:4:Thu: light rain\n/tmp/x/log.txt:9:rain: 3"


def _provider():
    return LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                         base_url="http://127.0.0.1:9/v1", rules=change_rules())


def test_a_search_result_is_tallied_only_when_every_line_is_a_match():
    assert search_tally(HITS) == "(3 matching lines in 2 files)"
    assert search_tally("a.py:1:import os") == "(1 matching line in 1 file)"
    assert search_tally("") == ""
    assert search_tally("No matches found") == ""
    # cut short by head_limit: the lines shown are not all there are
    assert search_tally(HITS + "\n\n(Output limited to the first 3 entries by head_limit.)") == ""
    assert search_tally("a.py\nb.py") == ""                 # file names only: no line numbers


def test_the_tally_is_shown_with_the_grep_result_and_answers_a_count_of_matching_lines():
    p = _provider()
    prompt = [{"role": "user", "content": "How many lines of journal.txt mention rain?"}]
    grep = _turn("Grep", {"pattern": "rain"}, HITS, 1)
    body = p.request_body(ModelRequest(model="local", messages=[*prompt, *grep], tools=TOOLS, max_tokens=64))
    assert "Tue: rain all day" in body["messages"][-1]["content"]
    assert "(3 matching lines in 2 files)" in body["messages"][-1]["content"]
    assert "Nothing has been measured yet" not in body["messages"][-1]["content"]
    assert _offers_answer(p, [*prompt, *grep])
    files = [{"role": "user", "content": "How many files in src contain logger?"}]
    assert _offers_answer(p, [*files, *grep])


def test_other_counts_still_wait_for_a_command_after_a_search():
    p = _provider()
    grep = _turn("Grep", {"pattern": "rain"}, HITS, 1)
    for question in ("How many words are in journal.txt?", "How many lines does journal.txt have?",
                     "Which file is the largest?"):
        assert not _offers_answer(p, [{"role": "user", "content": question}, *grep]), question
    # a search that found nothing, or an error, tallies nothing
    prompt = [{"role": "user", "content": "How many lines of journal.txt mention snow?"}]
    empty = _turn("Grep", {"pattern": "snow"}, "No matches found", 1)
    assert not _offers_answer(p, [*prompt, *empty])


def test_without_the_rules_no_tally_is_added():
    plain = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), base_url="http://127.0.0.1:9/v1")
    msgs = [{"role": "user", "content": "How many lines mention rain?"}, *_turn("Grep", {"pattern": "r"}, HITS, 1)]
    body = plain.request_body(ModelRequest(model="local", messages=msgs, tools=TOOLS, max_tokens=64))
    assert "matching lines" not in body["messages"][-1]["content"]


def _offered(p, msgs):
    body = p.request_body(ModelRequest(model="local", messages=msgs, tools=[*TOOLS, GLOB], max_tokens=64))
    return [o["properties"]["name"]["const"] if "name" in o["properties"] else "answer"
            for o in body["response_format"]["json_schema"]["schema"]["anyOf"]]


GLOB = {"name": "Glob", "description": "", "input_schema": {
    "type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}


def test_a_question_about_contents_waits_for_a_search_of_contents():
    p = _provider()
    prompt = [{"role": "user", "content": "Which .txt files in the notes folder mention budget?"}]
    glob = _turn("Glob", {"pattern": "notes/*.txt"}, "notes/jan.txt\nnotes/feb.txt", 1)
    # listed by name only: no answer yet, and only a search of contents is offered
    assert _offered(p, [*prompt, *glob]) == ["Bash", "Grep"]
    body = p.request_body(ModelRequest(model="local", messages=[*prompt, *glob], tools=TOOLS, max_tokens=64))
    assert "Nothing has been searched yet" in body["messages"][-1]["content"]
    grep = _turn("Grep", {"pattern": "budget"}, "notes/jan.txt:1:budget review", 2)
    assert "answer" in _offered(p, [*prompt, *glob, *grep])
    shell = _turn("Bash", {"command": "grep -l budget notes/*.txt"}, "notes/jan.txt", 2)
    assert "answer" in _offered(p, [*prompt, *glob, *shell])
    # the same words in a change, or a question about a file's own lines, ask for no search
    for other in ("Add a line that mentions budget to notes/jan.txt.", "What is on line one of notes/jan.txt?",
                  "How many lines does data.csv contain?"):
        assert "Nothing has been searched yet" not in p.request_body(ModelRequest(
            model="local", messages=[{"role": "user", "content": other}, *glob], tools=TOOLS,
            max_tokens=64))["messages"][-1]["content"]


def test_a_search_for_a_question_about_one_kind_of_file_searches_that_kind():
    from codeloop.session.local_fixes import fix_grep

    grep = {"pattern": "budget", "output_mode": "content"}
    assert fix_grep("Grep", grep, "Which .txt files in notes mention budget?") == {**grep, "glob": "*.txt"}
    assert fix_grep("Grep", grep, "How many .py files use logger?")["glob"] == "*.py"
    # no kind, two kinds, a file's own name, a glob of the model's own, another tool: left alone
    for request in ("Which files mention budget?", "Which .txt or .md files mention it? .txt files and .md files",
                    "Does notes/jan.txt mention budget?"):
        assert fix_grep("Grep", grep, request) == grep
    assert fix_grep("Grep", {**grep, "glob": "*.md"}, "Which .txt files mention budget?")["glob"] == "*.md"
    assert fix_grep("Glob", {"pattern": "*"}, "Which .txt files mention budget?") == {"pattern": "*"}


def test_the_kind_reaches_the_search_through_the_cli(tmp_path):
    import json

    from test_local_cli import reply, run_local

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "jan.txt").write_text("budget review\n")
    (tmp_path / "notes" / "apr.md").write_text("budget draft\n")
    r, api = run_local(tmp_path, "Which .txt files in the notes folder mention budget?",
                       reply(json.dumps({"name": "Grep", "arguments": {"pattern": "budget"}})),
                       reply(json.dumps({"answer": "notes/jan.txt"})))
    assert r.returncode == 0, r.stderr
    last = api.requests[-1].body["messages"][-1]["content"]
    assert "jan.txt:1:budget review" in last and "apr.md" not in last


def test_the_tally_says_how_many_matching_lines_are_indented_when_some_are():
    hits = ("/t/g.py:4:def circle(r):\n/t/g.py:9:    def __init__(self, w):\n/t/g.py:12:    def area(self):\n"
            "/t/g.py:16:def ring(a, b):\n/t/g.py:20:def half(x):")
    assert search_tally(hits) == "(5 matching lines in 1 file: 3 not indented (top level), 2 indented)"
    assert search_tally("/t/g.py:9:    def a(self):\n/t/g.py:12:\tdef b(self):") == "(2 matching lines in 1 file)"


def test_a_count_of_functions_or_classes_defined_in_a_file_is_answered_from_the_search():
    p = _provider()
    hits = ("/t/g.py:4:def circle(r):\n/t/g.py:9:    def __init__(self, w):\n/t/g.py:12:    def area(self):\n"
            "/t/g.py:16:def ring(a, b):")
    grep = _turn("Grep", {"pattern": "def "}, hits, 1)
    for question in ("How many top-level functions are defined in g.py?", "How many classes are defined in g.py?",
                     "What are the names of the functions defined in g.py?"):
        prompt = [{"role": "user", "content": question}]
        body = p.request_body(ModelRequest(model="local", messages=[*prompt, *grep], tools=TOOLS, max_tokens=64))
        assert "(4 matching lines in 1 file: 2 not indented (top level), 2 indented)" in body["messages"][-1]["content"]
        assert _offers_answer(p, [*prompt, *grep]), question
        # looked at by name only: the answer waits for a search of the contents
        read = _turn("Read", {"file_path": "g.py"}, "     1\tdef circle(r):", 1)
        assert not _offers_answer(p, [*prompt, *read]), question
