"""Spec 004 §9.1 `taskBudget: {total, remaining}`: `--task-budget N` through the real CLI against the
loopback fake API — sent as Claude Code sends it: `output_config.task_budget` with the
`task-budgets-2026-03-13` beta, `remaining` from the first compaction on, decreasing by the
replaced context's usage at each one."""

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl

BETA = "task-budgets-2026-03-13"
BIG = 9_500   # input tokens a response reports: over the autocompact threshold of a 30,000-token window
SMALL_WINDOW = {"CODELOOP_CONTEXT_WINDOW": "30000"}


def betas(req) -> list[str]:
    return [b.strip() for b in req.headers.get("anthropic-beta", "").split(",") if b.strip()]


def summary():
    return sse(text("<summary>Read the notes twice.</summary>"), input_tokens=2_000, output_tokens=100)


def test_every_request_carries_the_total_and_remaining_falls_with_each_compaction(tmp_path):
    (tmp_path / "notes.txt").write_text("some notes\n")
    read = {"file_path": str(tmp_path / "notes.txt")}
    api = ScriptedAPI(sse(tool_use("Read", read), input_tokens=BIG, output_tokens=500),   # turn 1
                      summary(),                                                          # compaction
                      sse(tool_use("Read", read), input_tokens=BIG, output_tokens=300),   # turn 2
                      summary(),                                                          # compaction
                      sse(text("done"), input_tokens=BIG, output_tokens=40))              # turn 3
    with api.serve() as url:
        r = codeloop(["-p", "read it twice", "--task-budget", "50000", "--output-format", "stream-json",
                      "--verbose"], cwd=tmp_path, base_url=url, env=SMALL_WINDOW)
    assert r.returncode == 0, r.stderr
    assert "task-budget" not in r.stderr                      # no "not supported; ignored" warning any more
    assert sum(1 for x in jsonl(r.stdout) if x.get("subtype") == "compact_boundary") == 2
    turns = [api.requests[i] for i in (0, 2, 4)]
    budgets = [t.body["output_config"]["task_budget"] for t in turns]
    # the first context: the total alone (the API counts what it is sent) ...
    assert budgets[0] == {"type": "tokens", "total": 50_000}
    # ... then, after each compaction, what the replaced context used (its last response: in + out)
    assert budgets[1] == {"type": "tokens", "total": 50_000, "remaining": 50_000 - (BIG + 500)}
    assert budgets[2] == {"type": "tokens", "total": 50_000, "remaining": 50_000 - (BIG + 500) - (BIG + 300)}
    assert all(BETA in betas(t) for t in turns)


def test_without_the_flag_nothing_is_sent(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    req = api.requests[0]
    assert "task_budget" not in (req.body.get("output_config") or {}) and BETA not in betas(req)


def test_with_effort_both_ride_in_output_config(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--task-budget", "64000", "--effort", "high", "--model", "claude-opus-4-5"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    config = api.requests[0].body["output_config"]
    assert config["effort"] == "high" and config["task_budget"] == {"type": "tokens", "total": 64_000}
    assert BETA in betas(api.requests[0])


def test_where_experimental_betas_are_off_the_field_goes_too(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--task-budget", "5000"], cwd=tmp_path, base_url=url,
                     env={"CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1"})
    assert r.returncode == 0, r.stderr
    req = api.requests[0]
    assert "output_config" not in req.body and BETA not in betas(req)


def test_a_bad_value_is_a_usage_error(tmp_path):
    for bad in ("0", "-5", "1.5", "lots"):
        r = codeloop(["-p", "hi", "--task-budget", bad], cwd=tmp_path)
        assert r.returncode == 1 and "--task-budget must be a positive integer" in r.stderr, (bad, r.stderr)
