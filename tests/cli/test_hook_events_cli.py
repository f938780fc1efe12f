"""Issue 26: the newer hook events through the CLI as a subprocess — settings hooks that are real
shell commands saving their stdin, against the loopback fake API."""

from __future__ import annotations

import json

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, transcripts


def recorder(root, name: str, answer: str = "") -> dict:
    """A hook whose command saves each payload in a file of its own under `name`/, then answers."""
    log = root / name
    log.mkdir(exist_ok=True)
    script = root / f"{name}.sh"
    script.write_text(f"#!/bin/sh\ncat > \"$(mktemp '{log}/call.XXXXXX')\"\n"
                      + (f"cat <<'JSON'\n{answer}\nJSON\n" if answer else ""))
    script.chmod(0o755)
    return {"hooks": [{"type": "command", "command": str(script)}]}


def calls(root, name: str) -> list[dict]:
    path = root / name
    files = sorted(path.iterdir(), key=lambda f: f.stat().st_mtime_ns) if path.exists() else []
    return [json.loads(f.read_text()) for f in files]


def test_print_mode_fires_post_tool_batch_instructions_loaded_and_message_display(tmp_path):
    logs = tmp_path.parent / f"{tmp_path.name}-logs"
    logs.mkdir()
    redact = json.dumps({"hookSpecificOutput": {"hookEventName": "MessageDisplay", "displayContent": "[redacted]"}})
    hooks = {"PostToolBatch": [recorder(logs, "batch")],
             "InstructionsLoaded": [{"matcher": "session_start", **recorder(logs, "loaded")},
                                    {"matcher": "compact", **recorder(logs, "compacted")}],
             "MessageDisplay": [recorder(logs, "display", redact)]}
    (tmp_path / ".cfg").mkdir()
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    (tmp_path / "CLAUDE.md").write_text("Be kind.\n")
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "a.txt")}, id="t_a"),
                          tool_use("Read", {"file_path": str(tmp_path / "b.txt")}, id="t_b")),
                      sse(text("the secret answer is 42")))
    with api.serve() as url:
        r = codeloop(["-p", "read both", "--dangerously-skip-permissions"], cwd=tmp_path, base_url=url,
                     env={"HOME": str(logs)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[redacted]"            # shown: the hook's text
    [record] = transcripts(tmp_path)
    assert "the secret answer is 42" in record.read_text()   # kept: the model's text
    [batch] = calls(logs, "batch")
    assert [c["tool_use_id"] for c in batch["tool_calls"]] == ["t_a", "t_b"]
    [loaded] = calls(logs, "loaded")
    assert loaded["hook_event_name"] == "InstructionsLoaded" and loaded["load_reason"] == "session_start"
    assert loaded["file_path"] == str(tmp_path / "CLAUDE.md") and loaded["memory_type"] == "Project"
    assert calls(logs, "compacted") == []               # the matcher is the load reason
    [shown] = calls(logs, "display")
    assert shown["hook_event_name"] == "MessageDisplay" and shown["delta"] == "the secret answer is 42"
    assert shown["final"] is True and shown["index"] == 0 and shown["turn_id"] and shown["message_id"]


def test_init_runs_setup_hooks_before_the_session_and_maintenance_ones_do_not(tmp_path):
    from fakeapi import error

    logs = tmp_path.parent / f"{tmp_path.name}-logs"
    logs.mkdir()
    context = json.dumps({"hookSpecificOutput": {"hookEventName": "Setup", "additionalContext": "SETUP-CTX"}})
    hooks = {"Setup": [{"matcher": "init", **recorder(logs, "init", context)},
                       {"matcher": "maintenance", **recorder(logs, "maint")}],
             "StopFailure": [{"matcher": "authentication_failed|invalid_request", **recorder(logs, "failed")}]}
    (tmp_path / ".cfg").mkdir()
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    api = ScriptedAPI(sse(text("ready")), error(400, "invalid_request_error", "bad request body"))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--init"], cwd=tmp_path, base_url=url, env={"HOME": str(logs)})
        assert r.returncode == 0, r.stderr
        assert "--init" not in r.stderr                   # no longer "not supported"
        [setup] = calls(logs, "init")
        assert setup["hook_event_name"] == "Setup" and setup["trigger"] == "init"
        assert calls(logs, "maint") == []
        assert "SETUP-CTX" in json.dumps(api.requests[0].messages)
        # a turn an API error ends: StopFailure, with the error type the matcher names
        r = codeloop(["-p", "again"], cwd=tmp_path, base_url=url, env={"HOME": str(logs)})
    assert r.returncode != 0
    [failed] = calls(logs, "failed")
    assert failed["error"] == "invalid_request" and "bad request body" in failed["error_details"]
    assert len(calls(logs, "init")) == 1                 # Setup runs only when asked for
