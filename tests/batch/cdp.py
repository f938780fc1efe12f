"""A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`).

No websocket and no driver library: Chromium reads commands on its fd 3 and writes answers and
events on its fd 4, each message JSON ended by a NUL byte. Enough for the HTML report test:
open a page, evaluate script in it, and collect what it logs (console errors, exceptions).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

ERROR_EVENTS = ("Runtime.exceptionThrown", "Runtime.consoleAPICalled", "Log.entryAdded")


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, exe: str, profile: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._evt_r, evt_w = os.pipe()

        def fds() -> None:  # dup first: a pipe end may already sit on fd 3 or 4
            a, b = os.dup(cmd_r), os.dup(evt_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(evt_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._evt_r], [], [], left)
            if ready:
                chunk = os.read(self._evt_r, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed its DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        while True:
            ev = self._read(deadline)
            self.events.append(ev)
            if ev.get("method") == method:
                return ev

    def open_page(self, url: str) -> str:
        """A new tab showing `url` once loaded; returns its session id (console and errors collected)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired")
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True}, session=session)
        if "exceptionDetails" in res:
            raise AssertionError(f"script failed in the page: {res['exceptionDetails']}")
        return res["result"].get("value")

    def errors(self) -> list[dict[str, Any]]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for ev in self.events:
            method, params = ev.get("method"), ev.get("params") or {}
            if method == "Runtime.exceptionThrown" \
                    or (method == "Runtime.consoleAPICalled" and params.get("type") == "error") \
                    or (method == "Log.entryAdded" and (params.get("entry") or {}).get("level") == "error"):
                out.append(ev)
        return out

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._evt_r)
