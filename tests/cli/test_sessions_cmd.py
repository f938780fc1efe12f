"""`codeloop sessions list|show|export` over sessions written by a real Conversation (via the engine)."""

import io
import json

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.cli.commands.sessions import sessions_main
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.engine import QueryEngine, QueryEngineConfig


def run(argv):
    out = io.StringIO()
    code = sessions_main(argv, out=out)
    return code, out.getvalue()


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    api = ScriptedAPI(sse(text("Reading."), tool_use("Write", {"file_path": str(tmp_path / "f"), "content": "x"})),
                      sse(text("It is **done**.")))
    eng = QueryEngine(QueryEngineConfig(cwd=tmp_path),
                      provider=AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()))
    eng.submit_message("please write f")
    eng.persist_session()
    eng.close()
    return eng.session_id


def test_list_text_and_json(session, tmp_path):
    code, out = run(["list"])
    assert code == 0 and out.startswith(session) and "please write f" in out
    code, out = run(["list", "--json"])
    rows = json.loads(out)
    assert code == 0 and [r["session_id"] for r in rows] == [session] and rows[0]["first_prompt"] == "please write f"


def test_list_all_sees_other_projects(session, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    assert "No sessions found" in run(["list"])[1]
    code, out = run(["list", "--all", "--json"])
    assert code == 0 and [r["session_id"] for r in json.loads(out)] == [session]


def test_show(session):
    code, out = run(["show", session, "--json"])
    info = json.loads(out)
    assert code == 0 and info["session_id"] == session and info["permission_denials"] == 1
    assert info["assistant_entries"] == 3 and info["engine"]["turn_count"] == 1
    code, out = run(["show", session])
    assert code == 0 and "turn_count=1" in out


def test_export_json_and_markdown(session, tmp_path):
    code, out = run(["export", session])
    data = json.loads(out)
    assert code == 0 and data["session_id"] == session
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "assistant", "user", "assistant"]
    target = tmp_path / "out.md"
    code, out = run(["export", session, "--format", "markdown", "-o", str(target)])
    md = target.read_text()
    assert code == 0 and out == "" and md.startswith(f"# Session {session}")
    assert "## User\n\nplease write f" in md and "**Tool call: Write**" in md and "It is **done**." in md
    assert "**Tool error**" in md


def test_bad_and_unknown_ids(session, capsys):
    assert run(["show", "../../etc/passwd"])[0] == 1
    assert "invalid session id" in capsys.readouterr().err
    assert run(["export", "0b9c8e1e-7a43-4d7e-9c1a-3f3d6a2b1c99"])[0] == 1
    assert "No conversation found" in capsys.readouterr().err
    assert run(["frobnicate"])[0] == 2
