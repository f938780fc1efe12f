"""The MCP tests' server processes: a test server script (tests/mcp/servers) started over HTTP or
SSE in a process of its own, waited for until it listens (a condition, not a sleep), and all of
them stopped at the end of the test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SERVERS = Path(__file__).resolve().parent / "mcp" / "servers"
LISTEN_GUARD = 90   # seconds: a server that never listens fails the test instead of hanging it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def endpoint(port: int, mode: str) -> str:
    return f"http://127.0.0.1:{port}" + ("/sse" if mode == "sse" else "/mcp")


class ServerProcesses:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, script: str, mode: str, *, port: int | None = None, env: dict[str, str] | None = None) -> int:
        """Run `script mode port` (env added to ours) until it listens; its port."""
        port = port or free_port()
        self.procs.append(subprocess.Popen([sys.executable, str(SERVERS / script), mode, str(port)],
                                           env={**os.environ, **(env or {})},
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + LISTEN_GUARD
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return port
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"the {mode} MCP server {script} did not start listening")

    def stop_all(self) -> None:
        for p in self.procs:
            p.terminate()
            p.wait(timeout=10)
