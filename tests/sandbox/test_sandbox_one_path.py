"""One path for Bash under the sandbox (issue 25 item 2): with the sandbox on, "read-only" commands
run inside it too, so what they leave behind ends with the command, and a background task ends
when codeloop does — also when codeloop is killed with SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from sandbox_helpers import make_sandbox, needs_bwrap, run_bash

from fakeapi import ScriptedAPI, sse, text, tool_use

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from test_background import alive, gone, marker_sleep  # noqa: E402


@needs_bwrap
def test_a_read_only_command_left_running_ends_with_the_command(tmp_path):
    name = f"follow-{uuid.uuid4().hex}.log"
    (tmp_path / name).write_text("x\n")
    (tmp_path / "home").mkdir()
    sandbox = make_sandbox(tmp_path)
    [res] = run_bash(sandbox, tmp_path, f"tail -f {name} > /dev/null 2>&1 & echo started")
    assert "started" in res.content
    assert asyncio.run(gone(name))   # `tail -f … &` did not outlive the call (it used to: no bwrap)


@needs_bwrap
def test_env_runs_inside_the_sandbox(tmp_path):
    (tmp_path / "home").mkdir()
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "cat /proc/1/cmdline | tr '\\0' ' '; echo; ls /proc")
    # inside bwrap's PID namespace: pid 1 is bwrap's init, and codeloop's processes are not there
    assert "bwrap" in res.content or "sh" in res.content
    pids = [p for p in res.content.split() if p.isdigit()]
    assert str(os.getpid()) not in pids and len(pids) < 20


async def running(cmdline: str) -> bool:
    for _ in range(400):
        if any(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().startswith(cmdline)
               for pid in alive(cmdline.split()[-1]) if Path(f"/proc/{pid}").exists()):
            return True
        await asyncio.sleep(0.05)
    return False


@needs_bwrap
async def test_a_background_task_ends_when_codeloop_is_killed(tmp_path):
    command, marker = marker_sleep()
    api = ScriptedAPI(sse(tool_use("Bash", {"command": command, "run_in_background": True})),
                      sse(text("still thinking", delay=120)))     # codeloop is mid-turn when it is killed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    (tmp_path / "home").mkdir()
    with api.serve() as url:
        env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "HOME": str(tmp_path / "home"),
                    "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg")})
        proc = subprocess.Popen([sys.executable, "-m", "codeloop", "-p", "go", "--sandbox", "--allowedTools", "Bash",
                                 "--output-format", "stream-json", "--verbose"], cwd=tmp_path, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:   # wait for the task to be started: its tool_result line
                if '"tool_result"' in line and "background" in json.dumps(json.loads(line)).lower():
                    break
            # the command itself runs (bwrap's set-up, which arms its own die-with-parent, is done)
            assert await running(f"sleep {marker}")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            assert await gone(marker), [Path(f'/proc/{p}/cmdline').read_bytes()[:200] for p in alive(marker)]
        finally:
            if proc.poll() is None:
                proc.kill()
