"""Front ends show what really happened: retracted responses and failing Stop hooks (issue 14)."""

import json
import stat

from fakeapi import ScriptedAPI, sse, text
from test_print_mode import codeloop, jsonl

OVERLOADED_MID_STREAM = {"type": "overloaded_error", "message": "Overloaded"}


def test_stream_json_retracts_a_response_that_was_retried(tmp_path):
    # the first response streams a whole text block, then breaks; the retry answers in full
    api = ScriptedAPI(sse(text("half an answer"), error=OVERLOADED_MID_STREAM), sse(text("the whole answer")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--output-format", "stream-json", "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    lines = jsonl(r.stdout)
    [half] = [l for l in lines if l["type"] == "assistant" and "half an answer" in json.dumps(l)]
    [tomb] = [l for l in lines if l["type"] == "tombstone"]
    assert tomb["message"]["uuid"] == half["uuid"] and tomb["message"]["type"] == "assistant"
    assert tomb["session_id"] == half["session_id"] and tomb["uuid"] != half["uuid"]
    assert lines.index(half) < lines.index(tomb)
    # what a reader keeps after applying the tombstone is the answer, once
    retracted = {l["message"]["uuid"] for l in lines if l["type"] == "tombstone"}
    kept = [l for l in lines if l["type"] == "assistant" and l["uuid"] not in retracted]
    assert [b["text"] for l in kept for b in l["message"]["content"]] == ["the whole answer"]
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "the whole answer"


def test_text_and_json_results_never_include_retracted_text(tmp_path):
    api = ScriptedAPI(sse(text("half an answer"), error=OVERLOADED_MID_STREAM), sse(text("the whole answer")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == "the whole answer"


def test_a_stop_hook_that_fails_shows_a_warning_and_the_turn_still_ends(tmp_path):
    hook = tmp_path / "hooks" / "stop.sh"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\ncat >/dev/null; echo 'lint crashed' >&2; exit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    settings = tmp_path / ".cfg" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}))
    api = ScriptedAPI(sse(text("all done")), sse(text("all done")))
    with api.serve() as url:
        r = codeloop(["-p", "go"], cwd=tmp_path, base_url=url)
        s = codeloop(["-p", "go", "--output-format", "stream-json", "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0 and r.stdout == "all done\n"
    assert "exit code 1" in r.stderr and "lint crashed" in r.stderr   # visible, not swallowed
    assert len(api.requests) == 2    # one per run: exit 1 does not block, the model is not asked to go on
    warnings = [l for l in jsonl(s.stdout) if l.get("subtype") == "hook_error"]
    assert len(warnings) == 1 and "lint crashed" in warnings[0]["message"]
