"""The REPL's first run without a key offers the local model (issue 19), in a real pty."""

from __future__ import annotations

import json
import os
import sys

import pytest

pytest.importorskip("pexpect")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "repl"))

from fakeapi import ScriptedAPI  # noqa: E402
from ptyterm import Term  # noqa: E402
from test_local_cli import reply  # noqa: E402


def test_declining_the_offer_exits_with_the_no_key_error(tmp_path):
    term = Term(tmp_path, "http://127.0.0.1:9", env={"ANTHROPIC_API_KEY": ""})
    try:
        term.expect("Use the local model for this session")
        assert "ANTHROPIC_API_KEY is not set" in term.transcript and "--model local" in term.transcript
        term.line("n")
        assert term.wait_exit() == 1
    finally:
        term.close()


def test_accepting_the_offer_starts_a_local_session(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    api = ScriptedAPI(reply(json.dumps({"name": "Read", "arguments": {"file_path": "notes.txt"}})),
                      reply(json.dumps({"answer": "The second line is beta."})))
    with api.serve() as url:
        term = Term(tmp_path, "http://127.0.0.1:9",
                    env={"ANTHROPIC_API_KEY": "", "CODELOOP_LOCAL_BASE_URL": url + "/v1"})
        try:
            term.expect("Use the local model for this session")
            term.line("y")
            term.ready()
            term.line("what is on line two of notes.txt?")
            term.expect("The second line is beta")
            term.send("\x04")
            assert term.wait_exit() == 0
        finally:
            term.close()
    assert "response_format" in api.requests[0].body and "tools" not in api.requests[0].body
