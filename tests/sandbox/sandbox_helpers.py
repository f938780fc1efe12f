"""Shared set-up for the real-sandbox tests: bwrap availability, a Sandbox rooted in tmp_path,
and a runner that calls the Bash tool the way the loop does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codeloop.config.sandbox import sandbox_settings
from codeloop.sandbox.bwrap import probe
from codeloop.sandbox.runtime import Sandbox
from codeloop.tools.base import ToolContext
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.registry import parse_tool_input


def bwrap_error() -> str | None:
    p = probe()
    return p.error


needs_bwrap = pytest.mark.skipif(bwrap_error() is not None,
                                 reason=f"bubblewrap cannot run here: {bwrap_error()}")


def make_sandbox(root: Path, *, deny_read=(), extra_roots=(), **block) -> Sandbox:
    settings = sandbox_settings({"sandbox": {"enabled": True, **block}})
    return Sandbox(settings, [str(root), *map(str, extra_roots)], home=str(root / "home"),
                   protected_dirs=[str(root / ".cfg")], read_deny=lambda: [(s, "cli") for s in deny_read])


def run_bash(sandbox: Sandbox | None, cwd: Path, *commands: str, timeout: int | None = None) -> list:
    """Run each command through the real Bash tool (sharing one context, like a session)."""
    async def go():
        ctx = ToolContext(cwd=cwd, project_dir=cwd, sandbox=sandbox)
        out = []
        for c in commands:
            raw = {"command": c} if timeout is None else {"command": c, "timeout": timeout}
            try:
                out.append(await BashTool().call(parse_tool_input(BashTool(), raw), ctx))
            except Exception as exc:  # noqa: BLE001 - ToolError is the refusal under test
                out.append(exc)
        return out
    return asyncio.run(go())
