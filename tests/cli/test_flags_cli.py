"""Print-mode flags beyond the basics: structured output, budgets, forks, settings sources,
system prompt files, extended thinking and beta headers."""

import json

from fakeapi import ScriptedAPI, sse, text, thinking
from test_print_mode import codeloop, transcripts

SCHEMA = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                     "additionalProperties": False})


def test_json_schema_retries_then_succeeds(tmp_path):
    api = ScriptedAPI(sse(text("the answer is five")), sse(text('```json\n{"n": 5}\n```')))
    with api.serve() as url:
        r = codeloop(["-p", "count", "--json-schema", SCHEMA, "--output-format", "json"], cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["subtype"] == "success" and res["structured_output"] == {"n": 5}
    retry = api.requests[1].messages[-1]["content"][-1]["text"]
    assert "JSON" in retry and "schema" in retry.lower()


def test_json_schema_exhausted(tmp_path):
    api = ScriptedAPI(*[sse(text("no json here")) for _ in range(3)])
    with api.serve() as url:
        r = codeloop(["-p", "count", "--json-schema", SCHEMA, "--output-format", "json"], cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert r.returncode == 1 and res["subtype"] == "error_max_structured_output_retries" and len(api.requests) == 3


def test_max_budget_usd_stops_the_run(tmp_path):
    from fakeapi import tool_use
    # each call costs (100k × $3 + 10k × $15) / 1M = $0.45
    api = ScriptedAPI(*[sse(tool_use("Bash", {"command": "true"}), input_tokens=100_000, output_tokens=10_000)
                        for _ in range(5)])
    with api.serve() as url:
        r = codeloop(["-p", "loop", "--max-budget-usd", "0.8", "--allowedTools", "Bash", "--output-format", "json"],
                     cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert r.returncode == 1 and res["subtype"] == "error_max_budget_usd"
    assert res["terminal_reason"] == "budget_exceeded"
    assert len(api.requests) == 2 and res["total_cost_usd"] >= 0.8


def test_fork_session_leaves_the_original_alone(tmp_path):
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    with api.serve() as url:
        first = codeloop(["-p", "first", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(first.stdout)["session_id"]
        before = transcripts(tmp_path)[0].read_bytes()
        r = codeloop(["-p", "second", "--resume", sid, "--fork-session", "--output-format", "json"], cwd=tmp_path,
                     base_url=url)
    new_sid = json.loads(r.stdout)["session_id"]
    assert new_sid != sid and len(transcripts(tmp_path)) == 2
    assert [p for p in transcripts(tmp_path) if p.stem == sid][0].read_bytes() == before
    assert "first" in json.dumps(api.requests[1].messages)


def test_setting_sources_limits_files(tmp_path):
    (tmp_path / ".cfg").mkdir()
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({"model": "claude-haiku-4-5"}))
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    with api.serve() as url:
        codeloop(["-p", "x"], cwd=tmp_path, base_url=url)
        codeloop(["-p", "x", "--setting-sources", "project,local"], cwd=tmp_path, base_url=url)
        bad = codeloop(["-p", "x", "--setting-sources", "galaxy"], cwd=tmp_path, base_url=url)
    assert [r.body["model"] for r in api.requests] == ["claude-haiku-4-5", "claude-sonnet-4-5"]
    assert bad.returncode == 1 and "galaxy" in bad.stderr


def test_system_prompt_file_thinking_and_betas(tmp_path):
    (tmp_path / "prompt.md").write_text("You are a file-born prompt.")
    api = ScriptedAPI(sse(thinking("hmm"), text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "x", "--system-prompt-file", "prompt.md", "--max-thinking-tokens", "2048",
                      "--betas", "interleaved-thinking-2025-05-14"], cwd=tmp_path, base_url=url)
    req = api.requests[0]
    assert r.returncode == 0 and req.system_text.startswith("You are a file-born prompt.")
    assert req.body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and req.body["max_tokens"] > 2048
    # issue 15: the header also carries the betas chosen per request (tools → fine-grained streaming)
    betas = req.headers["anthropic-beta"].split(",")
    assert betas.count("interleaved-thinking-2025-05-14") == 1 and "fine-grained-tool-streaming-2025-05-14" in betas
    missing = codeloop(["-p", "x", "--system-prompt-file", "nope.md"], cwd=tmp_path, base_url=url)
    assert missing.returncode == 1 and "nope.md" in missing.stderr and "Traceback" not in missing.stderr


def test_sessions_subcommand_lists_and_exports(tmp_path):
    api = ScriptedAPI(sse(text("hello there")))
    with api.serve() as url:
        greeted = codeloop(["-p", "greet me", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(greeted.stdout)["session_id"]
    listed = codeloop(["sessions", "list", "--json"], cwd=tmp_path)
    assert listed.returncode == 0 and sid in listed.stdout
    md = codeloop(["sessions", "export", sid, "--format", "markdown"], cwd=tmp_path)
    assert "greet me" in md.stdout and "hello there" in md.stdout
    bad = codeloop(["sessions", "show", "../../etc/passwd"], cwd=tmp_path)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_bad_flag_values_are_one_clear_line(tmp_path):
    for args, needle in ((["--json-schema", "{bad"], "--json-schema"),
                         (["--json-schema", '{"type": "nonsense"}'], "--json-schema"),
                         (["--max-budget-usd", "nan"], "--max-budget-usd"),
                         (["--max-budget-usd", "-1"], "--max-budget-usd"),
                         (["--allowedTools", "Bash(("], "ignored permission rule")):
        r = codeloop(["-p", "hi", *args], cwd=tmp_path)
        assert needle in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_compact_on_an_empty_session_is_not_an_error(tmp_path):
    r = codeloop(["-p", "/compact", "--output-format", "json"], cwd=tmp_path)
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["subtype"] == "success" and res["result"] == "Nothing to compact yet."


def test_compaction_costs_are_counted(tmp_path):
    api = ScriptedAPI(sse(text("a"), input_tokens=100, output_tokens=10),
                      sse(text("<summary>s</summary>"), input_tokens=5000, output_tokens=700))
    with api.serve() as url:
        sid = json.loads(codeloop(["-p", "x", "--output-format", "json"], cwd=tmp_path,
                                  base_url=url).stdout)["session_id"]
        r = codeloop(["-p", "/compact", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert res["usage"]["input_tokens"] == 5000 and res["usage"]["output_tokens"] == 700 and res["total_cost_usd"] > 0


def test_untrusted_mcp_json_is_named(tmp_path):
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"x": {"command": "true"}}}')
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url, env={"HOME": str(tmp_path / "home")})
    assert r.returncode == 0 and "ignored MCP servers" in r.stderr and ".mcp.json" in r.stderr
