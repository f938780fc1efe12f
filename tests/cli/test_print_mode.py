"""The CLI as a subprocess against the loopback fake API: output shapes, exit codes, sessions."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, error, sse, text, tool_use


def codeloop(args, *, cwd, base_url="http://127.0.0.1:9", input=None, env=None, timeout=60):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    full_env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": base_url,
                     "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd)})
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=full_env, input=input,
                          capture_output=True, text=True, timeout=timeout)


def jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def transcripts(cwd: Path) -> list[Path]:
    return sorted((cwd / ".cfg" / "projects").rglob("*.jsonl"))


def test_version_and_help(tmp_path):
    from codeloop import __version__
    r = codeloop(["--version"], cwd=tmp_path)
    assert r.returncode == 0 and __version__ in r.stdout
    r = codeloop(["--help"], cwd=tmp_path)
    assert r.returncode == 0 and "--output-format" in r.stdout and "--max-turns" in r.stdout


def test_text_output(tmp_path):
    api = ScriptedAPI(sse(text("The answer is 42.")))
    with api.serve() as url:
        r = codeloop(["-p", "what is it?"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "The answer is 42.\n"
    assert api.requests[0].messages[0]["content"][-1]["text"] == "what is it?"


def test_prompt_from_stdin(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p"], cwd=tmp_path, base_url=url, input="piped prompt\n")
    assert r.returncode == 0 and r.stdout == "ok\n"
    assert api.requests[0].messages[0]["content"][-1]["text"] == "piped prompt\n"


def test_empty_prompt_is_an_error(tmp_path):
    r = codeloop(["-p"], cwd=tmp_path, input="")
    assert r.returncode == 1 and "Input must be provided" in r.stderr


def test_json_output_shape(tmp_path):
    (tmp_path / "foo.py").write_text("x = 1\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "foo.py")}), input_tokens=1000,
                          output_tokens=50),
                      sse(text("x is 1"), input_tokens=1200, output_tokens=10))
    with api.serve() as url:
        r = codeloop(["-p", "what is x", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["type"] == "result" and res["subtype"] == "success" and res["is_error"] is False
    assert res["result"] == "x is 1" and res["num_turns"] == 2 and res["terminal_reason"] == "completed"
    assert res["usage"]["input_tokens"] == 2200 and res["usage"]["output_tokens"] == 60
    assert res["total_cost_usd"] == pytest.approx((2200 * 3 + 60 * 15) / 1e6)
    assert res["permission_denials"] == [] and res["stop_reason"] == "end_turn"
    for key in ("duration_ms", "duration_api_ms", "session_id", "modelUsage", "uuid"):
        assert key in res
    assert list(res["modelUsage"].values())[0]["contextWindow"] == 200000


def test_stream_json_requires_verbose(tmp_path):
    r = codeloop(["-p", "hi", "--output-format", "stream-json"], cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == "Error: When using --print, --output-format=stream-json requires --verbose"


def test_stream_json_shape(tmp_path):
    api = ScriptedAPI(sse(text("Listing."), tool_use("Bash", {"command": "echo hi"}, id="tb")),
                      sse(text("Done.")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    lines = jsonl(r.stdout)
    init = lines[0]
    assert (init["type"], init["subtype"]) == ("system", "init")
    for key in ("cwd", "session_id", "tools", "mcp_servers", "model", "permissionMode", "apiKeySource", "uuid"):
        assert key in init
    assert "Bash" in init["tools"] and init["permissionMode"] == "default"
    kinds = [(l["type"], l.get("subtype")) for l in lines]
    assert kinds == [("system", "init"), ("assistant", None), ("assistant", None), ("user", None),
                     ("assistant", None), ("result", "success")]
    tool_msg = lines[2]
    assert tool_msg["message"]["content"][0]["type"] == "tool_use" and tool_msg["parent_tool_use_id"] is None
    assert tool_msg["message"]["role"] == "assistant" and tool_msg["message"]["model"]
    user = lines[3]
    assert user["message"]["content"][0]["tool_use_id"] == "tb" and "hi" in user["message"]["content"][0]["content"]
    assert user["tool_use_result"]["stdout"].strip() == "hi"
    assert {l["session_id"] for l in lines} == {init["session_id"]}
    assert lines[-1]["result"] == "Done."


def test_partial_messages(tmp_path):
    api = ScriptedAPI(sse(text("abcdef", chunks=3)))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "stream-json", "--verbose", "--include-partial-messages"],
                     cwd=tmp_path, base_url=url)
    deltas = [l["event"]["delta"]["text"] for l in jsonl(r.stdout)
              if l["type"] == "stream_event" and l["event"]["type"] == "content_block_delta"]
    assert deltas == ["ab", "cd", "ef"]


def test_max_turns_result_and_exit_code(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "true"})), sse(tool_use("Bash", {"command": "true"})))
    with api.serve() as url:
        r = codeloop(["-p", "loop", "--max-turns", "1", "--output-format", "json",
                      "--dangerously-skip-permissions"], cwd=tmp_path, base_url=url)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert res["subtype"] == "error_max_turns" and res["is_error"] is True and res["num_turns"] == 2
    assert res["errors"] == ["Reached maximum number of turns (1)"] and res["terminal_reason"] == "max_turns"


def test_permission_denial_in_result(tmp_path):
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(tmp_path / "w.txt"), "content": "x"}, id="w1")),
                      sse(text("could not write")))
    with api.serve() as url:
        r = codeloop(["-p", "write", "--output-format", "json"], cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert res["permission_denials"] == [{"tool_name": "Write", "tool_use_id": "w1",
                                          "tool_input": {"file_path": str(tmp_path / "w.txt"), "content": "x"}}]
    assert not (tmp_path / "w.txt").exists()
    assert "--allowedTools Write" in api.requests[1].messages[-1]["content"][0]["content"]


def test_missing_key_one_line_no_traceback(tmp_path):
    from nolocal import env_without_local_model   # with no key and no model, not the embedded default

    r = codeloop(["-p", "hi"], cwd=tmp_path, env={"ANTHROPIC_API_KEY": "", **env_without_local_model(tmp_path)})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "ANTHROPIC_API_KEY" in r.stderr


def test_unreachable_server_one_line_no_traceback(tmp_path):
    r = codeloop(["-p", "hi"], cwd=tmp_path, base_url="http://127.0.0.1:9")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    # issue 13: retries are shown on stderr (a wait is never silent); the error itself is one line
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("codeloop: API error")]
    assert "could not connect" in r.stderr and len(lines) == 1


def test_api_error_exit_code_and_text(tmp_path):
    api = ScriptedAPI(error(401, "authentication_error", "invalid x-api-key"))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--output-format", "json"], cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert r.returncode == 1 and res["is_error"] and "invalid x-api-key" in res["result"] and res["errors"] == []


def test_resume_and_continue_send_history(tmp_path):
    api = ScriptedAPI(sse(text("first answer")), sse(text("second answer")), sse(text("third answer")))
    with api.serve() as url:
        r1 = codeloop(["-p", "first", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(r1.stdout)["session_id"]
        r2 = codeloop(["-p", "second", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url)
        r3 = codeloop(["-p", "third", "--continue"], cwd=tmp_path, base_url=url)
    assert json.loads(r2.stdout)["session_id"] == sid and r3.returncode == 0
    texts = [[b.get("text") for b in m["content"]] for m in api.requests[2].messages]
    flat = [t for ts in texts for t in ts]
    assert "first" in flat and "first answer" in flat and "second" in flat and "second answer" in flat
    assert flat[-1] == "third"
    assert len(transcripts(tmp_path)) == 1


def test_session_id_and_no_persistence(tmp_path):
    sid = "0b9c8e1e-7a43-4d7e-9c1a-3f3d6a2b1c00"
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    with api.serve() as url:
        r = codeloop(["-p", "x", "--session-id", sid, "--output-format", "json"], cwd=tmp_path, base_url=url)
        assert json.loads(r.stdout)["session_id"] == sid
        assert [p.stem for p in transcripts(tmp_path)] == [sid]
        codeloop(["-p", "y", "--no-session-persistence"], cwd=tmp_path, base_url=url)
    assert len(transcripts(tmp_path)) == 1
    bad = codeloop(["-p", "x", "--session-id", "../../etc/passwd"], cwd=tmp_path)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    missing = codeloop(["-p", "x", "--resume", "0b9c8e1e-7a43-4d7e-9c1a-3f3d6a2b1c99", "--output-format", "json"],
                       cwd=tmp_path)
    res = json.loads(missing.stdout)
    assert missing.returncode == 1 and res["subtype"] == "error_during_execution"
    assert "No conversation found" in res["errors"][0]


def test_torn_line_and_dangling_tool_use_are_repaired_on_resume(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo hi"}, id="dangle")), sse(text("ok")))
    with api.serve() as url:
        # a run killed by max-turns after the tool ran; then simulate a crash before the result was saved
        r = codeloop(["-p", "go", "--output-format", "json", "--max-turns", "1", "--allowedTools", "Bash"],
                     cwd=tmp_path, base_url=url)
        sid = json.loads(r.stdout)["session_id"]
        path = transcripts(tmp_path)[0]
        lines = path.read_bytes().split(b"\n")
        kept = [l for l in lines if l and b'"tool_result"' not in l]
        path.write_bytes(b"\n".join(kept) + b"\n" + b'{"type":"user","torn')
        r2 = codeloop(["-p", "again", "--resume", sid], cwd=tmp_path, base_url=url)
    assert r2.returncode == 0, r2.stderr
    assert "corrupt" in r2.stderr or "skipped" in r2.stderr
    msgs = api.requests[1].messages
    results = [b for m in msgs for b in m["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["dangle"] and results[0]["is_error"] is True
    for line in path.read_bytes().split(b"\n")[:-1]:
        json.loads(line)  # the torn tail was cut before the next append: every line parses


def test_sigterm_ends_cleanly_with_result_and_transcript(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "sleep 60"}, id="long")))
    with api.serve() as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
        env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg")})
        proc = subprocess.Popen([sys.executable, "-m", "codeloop", "-p", "wait", "--output-format", "stream-json",
                                 "--verbose", "--allowedTools", "Bash"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while time.time() < deadline and not any(b"tool_use" in p.read_bytes() for p in transcripts(tmp_path)):
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    lines = jsonl(out)
    assert lines[-1]["type"] == "result" and lines[-1]["is_error"] is True
    assert lines[-1]["terminal_reason"] == "aborted_tools"
    entries = [json.loads(l) for l in transcripts(tmp_path)[0].read_text().splitlines()]
    results = [b for e in entries if e.get("type") == "user" for b in e["message"]["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["long"]


def test_stream_json_prints_api_retry_and_fallback(tmp_path):
    overloaded = error(529, "overloaded_error", "Overloaded")
    api = ScriptedAPI(overloaded, overloaded, overloaded, sse(text("from haiku")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--output-format", "stream-json", "--verbose", "--fallback-model", "haiku"],
                     cwd=tmp_path, base_url=url, env={"CODELOOP_MAX_RETRIES": "5"})
    assert r.returncode == 0, r.stderr
    lines = jsonl(r.stdout)
    retries = [l for l in lines if l.get("subtype") == "api_retry"]
    assert [l["attempt"] for l in retries] == [1, 2]
    assert retries[0]["error_status"] == 529 and retries[0]["error"] == "overloaded"
    assert retries[0]["max_retries"] == 5 and retries[0]["retry_delay_ms"] >= 0 and "session_id" in retries[0]
    fallback = [l for l in lines if l.get("subtype") == "model_fallback"]
    assert fallback and fallback[0]["to_model"] == "claude-haiku-4-5"
    assert fallback[0]["message"] == "Switched to claude-haiku-4-5 due to high demand for claude-sonnet-4-5"
    assert lines[-1]["result"] == "from haiku" and api.requests[-1].body["model"] == "claude-haiku-4-5"


def test_text_mode_shows_fallback_warning_on_stderr(tmp_path):
    overloaded = error(529, "overloaded_error", "Overloaded")
    api = ScriptedAPI(overloaded, overloaded, overloaded, sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--fallback-model", "claude-haiku-4-5"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0 and r.stdout == "ok\n"
    assert "Switched to claude-haiku-4-5 due to high demand for claude-sonnet-4-5" in r.stderr


def test_system_prompt_flags_and_claude_md_reach_the_api(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Project rule: use tabs.")
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    with api.serve() as url:
        codeloop(["-p", "x", "--append-system-prompt", "Be terse."], cwd=tmp_path, base_url=url)
        codeloop(["-p", "y", "--system-prompt", "You are a pirate."], cwd=tmp_path, base_url=url)
    first, second = api.requests
    # the appended text ends the prompt proper; only the deferred-tools hint (issue 26's tools) follows it
    assert first.system_text.startswith("You are codeloop")
    assert first.system_text.split("\n\nThe following deferred tools")[0].endswith("Be terse.")
    assert "<env>" in first.system_text and f"Working directory: {tmp_path.resolve()}" in first.system_text
    assert second.system_text.startswith("You are a pirate.")
    assert "Project rule: use tabs." in first.messages[0]["content"][0]["text"]


def test_tool_use_is_durable_before_the_tool_runs(tmp_path):
    cfg = tmp_path / ".cfg"
    # the command counts tool_use records already on disk when it runs
    cmd = f"grep -l '\"name\":\"Bash\"' $(find {cfg} -name '*.jsonl') | wc -l > seen"
    api = ScriptedAPI(sse(tool_use("Bash", {"command": cmd})), sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--allowedTools", "Bash"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "seen").read_text().strip() == "1"


def test_sigint_ends_cleanly_with_exit_130(tmp_path):
    api = ScriptedAPI(sse(text("thinking…"), text("never arrives", delay=60)))
    with api.serve() as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
        env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg")})
        proc = subprocess.Popen([sys.executable, "-m", "codeloop", "-p", "wait", "--output-format", "json"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while time.time() < deadline and not any(b"thinking" in p.read_bytes() for p in transcripts(tmp_path)):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    res = json.loads(out)
    assert res["is_error"] and res["terminal_reason"] == "aborted_streaming"
    entries = [json.loads(l) for l in transcripts(tmp_path)[0].read_bytes().split(b"\n") if l]
    assert any(e.get("message", {}).get("content") == [{"type": "text", "text": "[Request interrupted by user]"}]
               for e in entries)


def test_compact_slash_command_in_print_mode_and_resume_from_boundary(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Rule: tabs.")
    api = ScriptedAPI(sse(text("first answer")), sse(text("<summary>We talked about tabs.</summary>")),
                      sse(text("after compaction")))
    with api.serve() as url:
        r1 = codeloop(["-p", "first question", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(r1.stdout)["session_id"]
        r2 = codeloop(["-p", "/compact focus on tabs", "--resume", sid, "--output-format", "stream-json",
                       "--verbose"], cwd=tmp_path, base_url=url)
        r3 = codeloop(["-p", "next question", "--resume", sid], cwd=tmp_path, base_url=url)
    assert r2.returncode == 0, r2.stderr
    lines = jsonl(r2.stdout)
    boundary = [l for l in lines if l.get("subtype") == "compact_boundary"]
    assert boundary and boundary[0]["compact_metadata"]["trigger"] == "manual"
    assert boundary[0]["compact_metadata"]["pre_tokens"] > 0
    assert lines[-1]["subtype"] == "success" and "compacted" in lines[-1]["result"]
    assert "focus on tabs" in api.requests[1].messages[-1]["content"][-1]["text"]
    # the resumed session starts from the summary, not from the old messages
    sent = " ".join(b.get("text", "") for m in api.requests[2].messages for b in m["content"])
    assert "We talked about tabs." in sent and "first answer" not in sent and "Rule: tabs." in sent
    assert r3.stdout == "after compaction\n"


def test_unwritable_transcript_warns_and_the_run_still_answers(tmp_path):
    cfg = tmp_path / "cfgfile"
    cfg.write_text("not a directory")   # the transcript folder cannot be created under a file
    api = ScriptedAPI(sse(text("answered anyway")))
    with api.serve() as url:
        r = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url, env={"CODELOOP_CONFIG_DIR": str(cfg)})
    assert r.returncode == 0 and r.stdout == "answered anyway\n"
    assert "cannot write session transcript" in r.stderr and "Traceback" not in r.stderr


def test_usage_is_recorded_in_the_transcript(tmp_path):
    api = ScriptedAPI(sse(text("hi"), input_tokens=150_000, output_tokens=7))
    with api.serve() as url:
        codeloop(["-p", "x"], cwd=tmp_path, base_url=url)
    entries = [json.loads(l) for l in transcripts(tmp_path)[0].read_text().splitlines()]
    last = [e for e in entries if e["type"] == "assistant"][-1]["message"]
    assert last["stop_reason"] == "end_turn" and last["usage"]["input_tokens"] == 150_000
