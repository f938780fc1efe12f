"""Helpers for batch tests: a fake API that routes requests to per-task scripts, and the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakeapi import Request, Response, ScriptedAPI, sse, text, tool_use

_MARK_RE = re.compile(r"\[task:([A-Za-z0-9_.-]+)\]")


def marker(task_id: str) -> str:
    return f"[task:{task_id}]"


class RoutedAPI(ScriptedAPI):
    """Many loops talk to one fake API at once: each request is routed by the `[task:ID]` marker
    of its prompt to that task's own script: a list is served in order (once); a tuple is
    stateless, indexed by the turn (assistant messages so far), so a task that runs again
    (resumed, retried) gets the same answers. `done` text when nothing is scripted."""

    def __init__(self, scripts: dict[str, list | tuple]) -> None:
        super().__init__()
        self.scripts = {k: v if isinstance(v, tuple) else list(v) for k, v in scripts.items()}
        self.by_task: dict[str, list[Request]] = defaultdict(list)
        self.arrived: dict[str, list[float]] = defaultdict(list)
        self.cond = threading.Condition()

    def _next(self, req: Request) -> Response:
        if req.path.endswith("/count_tokens"):
            return super()._next(req)
        m = _MARK_RE.search(json.dumps(req.messages))
        task = m.group(1) if m else "?"
        with self.cond:
            self.requests.append(req)
            self.by_task[task].append(req)
            self.arrived[task].append(time.time())
            script = self.scripts.get(task)
            if isinstance(script, tuple):
                turn = sum(1 for m in req.messages if m.get("role") == "assistant")
                item = script[min(turn, len(script) - 1)]
            else:
                item = script.pop(0) if script else sse(text(f"done {task}"))
            self.cond.notify_all()
        return item(req) if callable(item) else item

    def wait_for(self, pred: Callable[[], bool], timeout: float = 60) -> None:
        """Wait until `pred()` holds: re-checked on every request and at least once a second."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the fake API did not see the expected requests in time")
                self.cond.wait(min(1.0, left))


def write_file_script(name: str, content: str = "hello\n", **usage: Any) -> tuple[Response, ...]:
    """Two turns: a Bash call that writes `name` in the workspace, then a closing text."""
    return (sse(tool_use("Bash", {"command": f"printf '{content}' > {name}"}), **usage),
            sse(text(f"wrote {name}"), **usage))


def batch_env(home: Path, url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_", "RAY_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url,
                "CODELOOP_CONFIG_DIR": str(home / ".cfg"), "HOME": str(home), "CODELOOP_MAX_RETRIES": "3"})
    env.update(extra or {})
    return env


def run_batch(args: list[str], *, cwd: Path, url: str = "http://127.0.0.1:9", timeout: float = 240,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeloop", "batch", *args], cwd=cwd,
                          env=batch_env(cwd, url, env), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def start_batch(args: list[str], *, cwd: Path, url: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "codeloop", "batch", *args], cwd=cwd,
                            env=batch_env(cwd, url, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)


def write_tasks(path: Path, tasks: list[dict[str, Any] | str]) -> Path:
    path.write_text("".join((t if isinstance(t, str) else json.dumps(t)) + "\n" for t in tasks))
    return path


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every line must be a whole JSON object: the file stays valid whatever happened."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def latest(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in records}


def make_repo(path: Path, files: dict[str, str]) -> str:
    """A git repository with one commit; returns the commit id."""
    path.mkdir(parents=True)
    for name, content in files.items():
        (path / name).write_text(content)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=path, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, check=True, capture_output=True,
                          text=True).stdout.strip()
