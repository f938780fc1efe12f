"""The REPL with no key (issue 34), in a real pty: the embedded model serves by default and says so
in one line; where it is not installed, the REPL does not start and the error names the one install
command."""

from __future__ import annotations

import json
import os
import sys

import pytest

pytest.importorskip("pexpect")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "repl"))

from fakeapi import ScriptedAPI  # noqa: E402
from nolocal import env_without_local_model  # noqa: E402
from ptyterm import Term  # noqa: E402
from test_keyless_default import NOTICE  # noqa: E402
from test_local_cli import reply  # noqa: E402

NO_KEY = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OPENROUTER_API_KEY": ""}


def test_no_key_starts_the_embedded_model_and_says_so(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    api = ScriptedAPI(reply(json.dumps({"name": "Read", "arguments": {"file_path": "notes.txt"}})),
                      reply(json.dumps({"answer": "The second line is beta."})))
    with api.serve() as url:
        term = Term(tmp_path, "http://127.0.0.1:9", env={**NO_KEY, "CODELOOP_LOCAL_BASE_URL": url + "/v1"})
        try:
            term.ready()
            assert term.transcript.count("no API key: using the embedded local model") == 1
            assert " ".join(NOTICE.split()) in " ".join(term.transcript.split())   # the pty may wrap it
            term.line("what is on line two of notes.txt?")
            term.expect("The second line is beta")
            term.send("\x04")
            assert term.wait_exit() == 0
        finally:
            term.close()
    assert "response_format" in api.requests[0].body and "tools" not in api.requests[0].body


def test_no_key_without_the_model_is_the_one_line_error(tmp_path):
    term = Term(tmp_path, "http://127.0.0.1:9", env={**NO_KEY, **env_without_local_model(tmp_path)})
    try:
        assert term.wait_exit() == 1
        lines = [x for x in term.transcript.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: ANTHROPIC_API_KEY is not set.")
        assert "pip install 'codeloop[local,local-model]'" in lines[0]
    finally:
        term.close()
