"""Hook test helpers: real shell scripts in tmp_path and a runner bound to them."""

from __future__ import annotations

import json
from pathlib import Path

from codeloop.hooks import HookRunner


class HookLab:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cwd = root / "project"
        self.cwd.mkdir()
        self.mode = "default"
        self._n = 0

    def script(self, body: str, name: str | None = None) -> str:
        self._n += 1
        p = self.root / (name or f"hook{self._n}.sh")
        p.write_text("#!/bin/sh\n" + body + "\n")
        p.chmod(0o755)
        return str(p)

    def runner(self, hooks: dict, **kw) -> HookRunner:
        return HookRunner({"hooks": hooks}, session_id="sess-1", transcript_path=self.root / "t.jsonl",
                          cwd=self.cwd, permission_mode_getter=lambda: self.mode, **kw)

    def read_json(self, name: str):
        return json.loads((self.root / name).read_text())


def group(*commands: str, matcher: str | None = None, timeout: float | None = None) -> dict:
    g: dict = {"hooks": [{"type": "command", "command": c, **({"timeout": timeout} if timeout else {})}
                         for c in commands]}
    if matcher is not None:
        g["matcher"] = matcher
    return g
