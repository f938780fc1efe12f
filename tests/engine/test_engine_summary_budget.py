"""Spec 001 §3.2 (the token budget's crossing rule) and §6.3 (render_summary with the workspace
manifest), on the real loop against the scripted fake API."""

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop import QueryEngine, QueryEngineConfig
from codeloop.providers.anthropic import AnthropicProvider


def make(api, tmp_path, **cfg):
    cfg.setdefault("cwd", tmp_path)
    return QueryEngine(QueryEngineConfig(**cfg),
                       provider=AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()))


def test_exactly_at_the_budget_is_still_completed(tmp_path):
    # §3.2: max_budget_reached only when in + out > max_budget_tokens
    api = ScriptedAPI(sse(text("a"), input_tokens=100, output_tokens=20),
                      sse(text("b"), input_tokens=1, output_tokens=0))
    eng = make(api, tmp_path, max_budget_tokens=120)
    assert eng.submit_message("one").stop_reason == "completed"
    crossing = eng.submit_message("two")
    assert crossing.stop_reason == "max_budget_reached" and crossing.output == "b"   # 121 > 120: recorded
    assert eng.turn_count == 2


def test_one_token_past_the_budget_is_max_budget_reached(tmp_path):
    api = ScriptedAPI(sse(text("a"), input_tokens=100, output_tokens=20))
    eng = make(api, tmp_path, max_budget_tokens=119)
    res = eng.submit_message("one")
    assert res.stop_reason == "max_budget_reached" and res.output == "a"


def test_cache_reads_and_writes_do_not_count_toward_the_budget(tmp_path):
    # the total is input and output only: 100 + 20 = 120 of 150, whatever the cache did
    api = ScriptedAPI(sse(text("a"), input_tokens=100, output_tokens=20, cache_read=50_000, cache_write=50_000),
                      sse(text("b"), input_tokens=10, output_tokens=10, cache_read=90_000))
    eng = make(api, tmp_path, max_budget_tokens=150)
    first = eng.submit_message("one")
    assert first.stop_reason == "completed" and first.usage.cache_read_input_tokens == 50_000
    second = eng.submit_message("two")
    assert second.stop_reason == "completed" and eng.budget_tokens() == 140 and len(api.requests) == 2


def test_render_summary_reports_the_session_beside_the_workspace_manifest(tmp_path):
    (tmp_path / "main.py").write_text("print('hi')\n")
    (tmp_path / "pkg").mkdir()
    skill = tmp_path / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release-notes\ndescription: Write release notes.\n---\nSteps.\n")
    target = tmp_path / "w.txt"
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(target), "content": "x"}, id="w1")),
                      sse(text("Could not write.")))
    eng = make(api, tmp_path, max_turns=5, max_budget_tokens=10_000)
    eng.submit_message("write it")
    summary = eng.render_summary()
    lines = summary.splitlines()
    # the spec's list, in its order
    wanted = [f"Session id: {eng.session_id}", "Conversation turns stored: 1", "Permission denials tracked: 1",
              "Usage totals: in=200 out=40", "Max turns: 5", "Max budget tokens: 10000", "Transcript flushed: True"]
    found = [next(i for i, line in enumerate(lines) if w in line) for w in wanted]
    assert found == sorted(found)
    # the workspace manifest beside it
    manifest = summary[summary.index("Workspace manifest"):]
    assert f"Working directory: {tmp_path}" in manifest
    assert "main.py" in manifest and "pkg/" in manifest
    assert "Write" in manifest and "Read" in manifest           # tools offered
    assert "/compact" in manifest and "release-notes" in manifest
    assert str(eng.conv.transcript_path) in manifest


def test_transcript_flushed_follows_appends_and_persist(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    eng = make(api, tmp_path)
    eng.submit_message("hi")
    assert eng.transcript_flushed                                   # turn ends are fsynced
    eng.conv.writer.append_entry({"type": "custom-title", "customTitle": "t"})
    assert not eng.transcript_flushed and "Transcript flushed: False" in eng.render_summary()
    eng.persist_session()
    assert eng.transcript_flushed and "Transcript flushed: True" in eng.render_summary()
    eng.close()


def test_render_summary_without_a_transcript(tmp_path):
    eng = make(ScriptedAPI(), tmp_path, persist=False)
    summary = eng.render_summary()
    assert "Conversation turns stored: 0" in summary and "Transcript flushed: False" in summary
    assert "not kept" in summary and "Max budget tokens: unlimited" in summary
