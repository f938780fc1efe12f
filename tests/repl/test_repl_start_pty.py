"""How the REPL starts (issue 13): `codeloop "question"` submits that first prompt, and a broken
settings file stops it until the user explicitly goes on without that file."""

import json

import pexpect

from fakeapi import ScriptedAPI, sse, text
from ptyterm import Term


def test_a_prompt_argument_is_submitted_as_the_first_prompt(tmp_path):
    api = ScriptedAPI(sse(text("Answer to the first question.")))
    with api.serve() as url:
        t = Term(tmp_path, url, "what is the first question?")
        try:
            t.expect("Answer to the first question")
            t.ready()
            t.line("/exit")
            assert t.wait_exit() == 0
        finally:
            t.close()
    assert api.requests[0].messages[-1]["content"][-1]["text"] == "what is the first question?"


def _broken_user_settings(tmp_path):
    path = tmp_path / ".cfg" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"permissions": {"deny": "Read(./secret.txt)"}}')
    return path


def test_broken_settings_refuse_to_start_unless_the_user_goes_on_without_them(tmp_path):
    path = _broken_user_settings(tmp_path)
    api = ScriptedAPI(sse(text("went on")))
    with api.serve() as url:
        t = Term(tmp_path, url, "hello")
        try:
            t.expect(r"Continue without these settings files\? \[y/N\]")
            assert f"{path}:1:18: 'permissions.deny' must be a list of strings" in t.transcript
            t.line("")                                     # the default is no: refuse
            t.expect(pexpect.EOF)
            t.child.close()
            assert t.child.exitstatus == 1
        finally:
            t.close()
        assert api.requests == []
        t = Term(tmp_path, url, "hello")
        try:
            t.expect(r"\[y/N\]")
            t.line("y")                                    # explicitly go on without that file
            t.expect("settings file ignored at your request")   # the banner says so …
            t.expect("went on")                                  # … then the first prompt runs
            t.ready()
            t.line("/exit")
            assert t.wait_exit() == 0
        finally:
            t.close()
    assert len(api.requests) == 1 and "hello" in json.dumps(api.requests[0].messages)
