"""Issue 18: a print-mode process ends with a flushed os._exit once the run has returned — its
output, result line, exit status and synced transcript must be exactly what an orderly exit gives,
and a tool result is stored once in the transcript yet resumes whole."""

import json
import os
import subprocess
import sys
from pathlib import Path

from fakeapi import ScriptedAPI, error, sse, text, tool_use


def run(args, *, cwd: Path, url: str, stdout=subprocess.PIPE, extra_env: dict[str, str] | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url,
                "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd), **(extra_env or {})})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60)


def transcript_lines(cwd: Path) -> list[dict]:
    [path] = sorted((cwd / ".cfg" / "projects").rglob("*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_text_output_to_a_file_is_flushed_and_transcript_synced(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo from-the-tool"})), sse(text("all done here")))
    out = tmp_path / "out.txt"
    with api.serve() as url, open(out, "w") as fh:
        r = run(["-p", "go", "--allowedTools", "Bash"], cwd=tmp_path, url=url, stdout=fh)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == "all done here\n"   # block-buffered file output still written
    entries = transcript_lines(tmp_path)
    assert entries[-1]["type"] == "assistant"
    assert entries[-1]["message"]["content"] == [{"type": "text", "text": "all done here"}]


def test_json_result_line_and_error_exit_status(tmp_path):
    api = ScriptedAPI(sse(text("fine")), error(400, "invalid_request_error", "bad request body"))
    with api.serve() as url:
        ok = run(["-p", "q", "--output-format", "json"], cwd=tmp_path, url=url)
        bad = run(["-p", "q", "--output-format", "json", "--no-session-persistence"], cwd=tmp_path, url=url)
    assert ok.returncode == 0, ok.stderr
    result = json.loads(ok.stdout)
    assert result["type"] == "result" and result["result"] == "fine" and result["is_error"] is False
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["is_error"] is True


def test_tool_result_stored_once_and_resume_sends_it_back(tmp_path):
    marker = "unique-output-" + "x" * 200
    api = ScriptedAPI(sse(tool_use("Bash", {"command": f"echo {marker}"})), sse(text("first done")),
                      sse(text("second done")))
    with api.serve() as url:
        r1 = run(["-p", "go", "--allowedTools", "Bash", "--output-format", "json"], cwd=tmp_path, url=url)
        assert r1.returncode == 0, r1.stderr
        sid = json.loads(r1.stdout)["session_id"]
        raw = next((tmp_path / ".cfg" / "projects").rglob("*.jsonl")).read_text()
        assert raw.count(marker) == 2   # once in the tool_use command, once as the result: not three times
        r2 = run(["-p", "again", "--resume", sid, "--output-format", "stream-json", "--verbose",
                  "--replay-user-messages"], cwd=tmp_path, url=url)
    assert r2.returncode == 0, r2.stderr
    resent = api.requests[2].messages
    results = [b for m in resent if m["role"] == "user" for b in m["content"] if b.get("type") == "tool_result"]
    assert results and results[0]["content"] == marker
    entry = next(e for e in transcript_lines(tmp_path) if e.get("toolUseResultFromContent"))
    assert entry["toolUseResultFromContent"] == ["stdout"]
    assert "stdout" not in entry["toolUseResult"] and entry["toolUseResult"]["exitCode"] == 0


def test_bashs_reusable_cwd_report_files_are_gone_after_the_fast_exit(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "true"})), sse(tool_use("Bash", {"command": "cd /"})),
                      sse(text("done")))
    with api.serve() as url:
        r = run(["-p", "go", "--allowedTools", "Bash", "--no-session-persistence"], cwd=tmp_path, url=url,
                extra_env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    assert len(api.requests) == 3
    assert list(tmp.glob("codeloop-cwd-*")) == []
