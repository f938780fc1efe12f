"""Instructions are read per query, nested ones attached once per session (spec 004 §6.1, §13.2)."""

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop import QueryEngine, QueryEngineConfig
from codeloop.providers.anthropic import AnthropicProvider


def engine(api, cwd) -> QueryEngine:
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    return QueryEngine(QueryEngineConfig(cwd=cwd), provider=provider)


def sent_text(request) -> str:
    return " ".join(str(b.get("text", "")) for m in request.messages for b in m["content"])


def test_a_claude_md_edit_reaches_the_next_query_of_the_same_session(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Rule: answer in English.")
    api = ScriptedAPI(sse(text("ok")), sse(text("d'accord")))
    eng = engine(api, tmp_path)
    eng.submit_message("first")
    (tmp_path / "CLAUDE.md").write_text("Rule: answer in French.")
    eng.submit_message("second")
    assert "answer in English" in sent_text(api.requests[0])
    assert "answer in French" in sent_text(api.requests[1]) and "answer in English" not in sent_text(api.requests[1])
    assert eng.conv.config.user_context["claudeMd"].endswith("Rule: answer in French.")


def test_a_deleted_claude_md_stops_applying(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Rule: be terse.")
    api = ScriptedAPI(sse(text("ok")), sse(text("ok")))
    eng = engine(api, tmp_path)
    eng.submit_message("first")
    (tmp_path / "CLAUDE.md").unlink()
    eng.submit_message("second")
    assert "be terse" in sent_text(api.requests[0]) and "be terse" not in sent_text(api.requests[1])


def test_nested_claude_md_is_attached_once_per_session(tmp_path):
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "CLAUDE.md").write_text("Use tabs in pkg.")
    (sub / "m.py").write_text("x = 1\n")
    read = {"file_path": str(sub / "m.py")}
    # each prompt reads a file under pkg/ (slowly enough for the background walk to settle)
    api = ScriptedAPI(sse(tool_use("Read", read, id="r1", delay=0.3)), sse(text("one")),
                      sse(tool_use("Read", read, id="r2", delay=0.3)), sse(text("two")))
    eng = engine(api, tmp_path)
    eng.submit_message("look at pkg")
    eng.submit_message("look again")
    assert sent_text(api.requests[1]).count("Use tabs in pkg.") == 1     # attached in the first query…
    assert sent_text(api.requests[3]).count("Use tabs in pkg.") == 1     # …and not again in the second


async def test_the_cli_wires_the_per_query_reload(tmp_path, monkeypatch):
    """Every front end's session comes from session.assembly: its conversation re-reads too."""
    from codeloop.cli.startup.options import options_from_argv
    from codeloop.session.assembly import open_session

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    (tmp_path / "CLAUDE.md").write_text("Rule: version one.")
    conv, _ = await open_session(options_from_argv(["-p", "x", "--append-system-prompt", "Be kind."]))
    assert conv.config.user_context["claudeMd"].endswith("Rule: version one.")
    (tmp_path / "CLAUDE.md").write_text("Rule: version two.")
    system_prompt, user_context = conv.config.load_context()
    assert user_context["claudeMd"].endswith("Rule: version two.") and system_prompt[-1] == "Be kind."
    await conv.aclose()
