"""Bytes that are not UTF-8 (issue 13): a file name listed by Glob and command output reach the
model as a visible \\xNN marker (Glob marks names itself), every transcript record stays valid
UTF-8, and the session resumes."""

import json
import os
import subprocess
import sys

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use

BAD_NAME = b"caf\xe9-\xff.txt"   # latin-1 é and a stray 0xff: not UTF-8


def run(cwd, args, url):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                "HOME": str(cwd)})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=60)


def transcript_lines(cwd):
    files = sorted((cwd / ".cfg" / "projects").rglob("*.jsonl"))
    assert len(files) == 1
    return files[0].read_bytes().splitlines()


@pytest.fixture
def bad_dir(tmp_path):
    try:
        with open(os.path.join(os.fsencode(tmp_path), BAD_NAME), "wb") as f:
            f.write(b"x\n")
    except OSError as exc:   # a file system that insists on UTF-8 names
        pytest.skip(f"cannot create a non-UTF-8 file name here: {exc}")
    return tmp_path


def test_glob_of_a_non_utf8_name_then_resume(bad_dir):
    cwd = bad_dir
    api = ScriptedAPI(sse(tool_use("Glob", {"pattern": "*.txt"})), sse(text("listed")),
                      sse(text("still here")))
    with api.serve() as url:
        r = run(cwd, ["-p", "list the txt files", "--output-format", "stream-json", "--verbose"], url)
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode("utf-8")            # stdout stays valid UTF-8 …
        lines = [json.loads(line) for line in out.splitlines()]
        assert lines[-1]["subtype"] == "success"
        assert "caf\\\\xe9-\\\\xff.txt" in out    # … with the bytes shown as \xNN (JSON-escaped)
        # the model saw a clearly marked name, not a crash
        sent = json.dumps(api.requests[1].messages)
        assert "caf\\\\xe9-\\\\xff.txt" in sent
        # the transcript is valid UTF-8 and holds the clearly marked name the model saw
        entries = [json.loads(line.decode("utf-8")) for line in transcript_lines(cwd)]
        results = [b for e in entries if e.get("type") == "user" for b in e["message"]["content"]
                   if isinstance(b, dict) and b.get("type") == "tool_result"]
        assert any("caf\\xe9-\\xff.txt" in str(b["content"]) for b in results)
        session_id = lines[-1]["session_id"]
        r2 = run(cwd, ["-p", "and now?", "--resume", session_id], url)
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout.decode() == "still here\n"
    assert "caf\\\\xe9-\\\\xff.txt" in json.dumps(api.requests[2].messages)


def test_command_output_that_is_not_utf8_reaches_the_model_marked(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "printf 'ok \\377\\376 end\\n'"})), sse(text("done")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "run it", "--dangerously-skip-permissions"], url)
    assert r.returncode == 0, r.stderr
    result = api.requests[1].messages[-1]["content"][0]
    assert result["type"] == "tool_result" and "ok" in json.dumps(result) and "end" in json.dumps(result)
    for line in transcript_lines(tmp_path):
        line.decode("utf-8")     # every record is valid UTF-8
