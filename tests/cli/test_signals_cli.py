"""Signals always win (issue 13): a tool stuck in a blocking call cannot keep a signalled run
alive; the run still ends with its result line, its exit status and a transcript that resumes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use


def _env(cwd, url):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                "HOME": str(cwd)})
    return env


def transcript(cwd):
    files = sorted((cwd / ".cfg" / "projects").rglob("*.jsonl"))
    return files[0] if files else None


def gone(pid: int, within_s: float = 30.0) -> bool:
    """Whether the process has ended (a zombie waiting for init counts): waits for it, as the
    kernel delivers SIGKILL at once but the exit itself takes a moment on a loaded machine."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_a_run_whose_tool_is_stuck(tmp_path, signum, code):
    # File tools no longer block on FIFOs (issue 13 item 1), so the stuck tool is a command that
    # ignores SIGTERM/SIGINT and waits on a FIFO nobody writes to: only the group SIGKILL ends it.
    os.mkfifo(tmp_path / "stuck.fifo")
    stuck = "echo $$ > shell.pid; trap '' TERM INT; cat stuck.fifo"
    api = ScriptedAPI(sse(tool_use("Bash", {"command": stuck}, id="g1")),
                      sse(text("resumed fine")))
    with api.serve() as url:
        proc = subprocess.Popen([sys.executable, "-m", "codeloop", "-p", "find the needle", "--output-format",
                                 "stream-json", "--verbose", "--allowedTools", "Bash"],
                                cwd=tmp_path, env=_env(tmp_path, url),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline and not ((t := transcript(tmp_path)) and b"tool_use" in t.read_bytes()):
            time.sleep(0.05)
        time.sleep(0.5)                          # the command is now blocked opening the FIFO
        proc.send_signal(signum)
        try:
            out, err = proc.communicate(timeout=60)   # a hang guard only, not a timing assertion
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("the signalled process did not exit")
        assert proc.returncode == code, err
        assert gone(int((tmp_path / "shell.pid").read_text())), "the stuck command outlived codeloop"
        lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert lines[-1]["type"] == "result" and lines[-1]["is_error"] is True
        assert lines[-1]["terminal_reason"].startswith("aborted")
        assert len(api.requests) == 1
        # the transcript is intact: every line is a whole record, and the session resumes
        raw = transcript(tmp_path).read_bytes()
        assert raw.endswith(b"\n") and all(json.loads(line) for line in raw.splitlines())
        sid = lines[-1]["session_id"]
        os.unlink(tmp_path / "stuck.fifo")
        r = subprocess.run([sys.executable, "-m", "codeloop", "-p", "go on", "--resume", sid], cwd=tmp_path,
                           env=_env(tmp_path, url), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "resumed fine\n"
    sent = api.requests[-1].messages
    results = [b for m in sent if m["role"] == "user" for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert [b["tool_use_id"] for b in results] == ["g1"]   # the interrupted call is answered, not dangling
