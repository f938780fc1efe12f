"""Drive `codeloop` (the REPL) in a real pseudo-terminal against the loopback fake API.

prompt_toolkit asks the terminal where the cursor is (CPR, `ESC[6n`) and hides its toolbar until
answered; a pty has no terminal emulator, so `Term.expect` answers those requests itself.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pexpect

CPR_REQUEST = re.escape("\x1b[6n")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
READY = re.escape("shift+tab to cycle")


class Term:
    def __init__(self, cwd: Path, base_url: str, *args: str, env: dict[str, str] | None = None,
                 rows: int = 30, cols: int = 100, timeout: float = 30) -> None:
        full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
        full.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": base_url, "TERM": "xterm-256color",
                     "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd), "COLUMNS": str(cols),
                     "LINES": str(rows), "PYTHONUNBUFFERED": "1"})
        full.update(env or {})
        self.timeout = timeout
        self.child = pexpect.spawn(sys.executable, ["-m", "codeloop", *args], cwd=str(cwd), env=full,
                                   dimensions=(rows, cols), encoding="utf-8", timeout=timeout)
        self.transcript = ""  # everything read, ANSI stripped

    def expect(self, *patterns: str, timeout: float | None = None) -> int:
        pats = [CPR_REQUEST, *patterns]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = max(0.1, deadline - time.monotonic())
            i = self.child.expect(pats, timeout=left)
            self.transcript += ANSI.sub("", (self.child.before or "") + (self.child.after or "")
                                        if isinstance(self.child.after, str) else self.child.before or "")
            if i == 0:
                self.child.send("\x1b[1;1R")
                continue
            return i - 1

    def ready(self) -> None:
        self.expect(READY)

    def send(self, s: str) -> None:
        self.child.send(s)

    def line(self, s: str) -> None:
        self.child.send(s)
        time.sleep(0.05)
        self.child.send("\r")

    def wait_exit(self, timeout: float = 30) -> int:
        self.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def write_session(cwd: Path, n_messages: int, *, ended: bool = False,
                  session_id: str = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee") -> str:
    """A transcript to `--resume`: `n_messages` alternating user/assistant messages."""
    old = os.environ.get("CODELOOP_CONFIG_DIR")
    os.environ["CODELOOP_CONFIG_DIR"] = str(cwd / ".cfg")
    try:
        from codeloop.messages import Message, user_message
        from codeloop.session import store
        from codeloop.session.transcript import TranscriptWriter

        w = TranscriptWriter(store.session_path(cwd.resolve(), session_id), session_id, str(cwd.resolve()))
        for i in range(n_messages):
            if i % 2 == 0:
                w.append_message(user_message(f"question number {i}: " + "lorem ipsum " * 20))
            else:
                w.append_message(Message("assistant", [{"type": "text", "text": f"answer {i} " + "dolor sit " * 40}],
                                         id=f"msg_{i}", usage={"input_tokens": 100 + i, "output_tokens": 50}))
        if ended:
            w.append_entry({"type": "ended-by-model", "sessionId": session_id})
        w.sync()
        w.close()
    finally:
        if old is None:
            os.environ.pop("CODELOOP_CONFIG_DIR", None)
        else:
            os.environ["CODELOOP_CONFIG_DIR"] = old
    return session_id
