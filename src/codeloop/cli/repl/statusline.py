"""The REPL's custom status line (settings `statusLine`, as Claude Code runs it).

    change noticed (poke) → wait until 300 ms since the last run → run the command with
    Claude Code's JSON on stdin → keep the first line of stdout → redraw the toolbar

The command never runs on a keystroke's path: the toolbar only reads the last line kept here,
and the runner is a task of its own. What the line could show is summed up in a signature (the
REPL's `status_signature`: messages, cost, model, permission mode, vim mode, session); a run
starts when it changes, at most once every MIN_INTERVAL_S, and again every `refreshInterval`
seconds if set. Runs never overlap and a change seen during a run is taken up after it, so a slow
command still shows its line; one that outlives TIMEOUT_S is killed with its process group and the
old line stays. A failing command (non-zero exit) or empty output blanks the line. ANSI colours
are kept; other control characters are dropped.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.session.options import StatusLineOptions

MIN_INTERVAL_S = 0.3
TIMEOUT_S = 5.0
MAX_LINE_CHARS = 1000
# SGR colour sequences stay; any other escape or control character could move the cursor.
_OTHER_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-ln-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
                            r"|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f]")
_MODEL_DATE = re.compile(r"-\d{8}$")


def display_name(model: str) -> str:
    """`claude-sonnet-4-5-20250929` → `Sonnet 4.5`; any other id as it is."""
    name = _MODEL_DATE.sub("", model.rsplit("/", 1)[-1])
    if not name.startswith("claude-"):
        return model
    words = name[len("claude-"):].split("-")
    family = [w for w in words if not w.isdigit()]
    version = [w for w in words if w.isdigit()]
    return " ".join([*(w.capitalize() for w in family), ".".join(version)]).strip()


def status_input(conv: Any, *, started_at: float, lines: tuple[int, int], vim_mode: str | None) -> dict[str, Any]:
    """Claude Code's statusline JSON for this session."""
    from codeloop.providers.models import context_window
    from codeloop.version import __version__

    model = conv.config.model
    usage = conv.usage
    last = next((m.usage for m in reversed(conv.messages) if m.role == "assistant" and m.usage), None) or {}
    current = {k: int(last.get(k) or 0) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                  "cache_read_input_tokens")}
    in_context = current["input_tokens"] + current["cache_creation_input_tokens"] + current["cache_read_input_tokens"]
    try:
        window = context_window(model)
    except Exception:  # an unknown model has no window figure
        window = 0
    cwd = str(conv.tool_context.cwd)
    data: dict[str, Any] = {
        "hook_event_name": "Status",
        "session_id": conv.session_id,
        "transcript_path": str(conv.transcript_path),
        "cwd": cwd,
        "model": {"id": model, "display_name": display_name(model)},
        "workspace": {"current_dir": cwd, "project_dir": str(conv.config.cwd)},
        "version": __version__,
        "output_style": {"name": conv.output_style or "default"},
        "cost": {"total_cost_usd": round(conv.cost_usd, 6),
                 "total_duration_ms": int((time.monotonic() - started_at) * 1000),
                 "total_api_duration_ms": int(conv.api_duration_ms),
                 "total_lines_added": lines[0], "total_lines_removed": lines[1]},
        "context_window": {"total_input_tokens": usage.input_tokens + usage.cache_read_input_tokens
                           + usage.cache_creation_input_tokens,
                           "total_output_tokens": usage.output_tokens, "context_window_size": window,
                           "current_usage": current if last else None,
                           "used_percentage": round(100 * in_context / window, 1) if window and last else None},
        "exceeds_200k_tokens": in_context > 200_000,
    }
    if vim_mode is not None:
        data["vim"] = {"mode": vim_mode}
    return data


def first_line(out: bytes) -> str:
    text = out.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n", 1)[0]
    return _OTHER_ESCAPES.sub("", text)[:MAX_LINE_CHARS].rstrip()


class StatusLine:
    """Runs the command when poked with a new signature; `fragments` is what the toolbar draws."""

    def __init__(self, opts: StatusLineOptions, payload: Callable[[], dict[str, Any]], cwd: Callable[[], Path],
                 redraw: Callable[[], None]) -> None:
        self.opts = opts
        self.text = ""                       # the line as the command printed it (ANSI colours kept)
        self.fragments: list[tuple[str, str]] = []
        self.runs = 0
        self._payload, self._cwd, self._redraw = payload, cwd, redraw
        self._signature: Any = object()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def poke(self, signature: Any) -> None:
        """What the line could show is `signature` now: run the command again if it changed."""
        if signature != self._signature:
            self._signature = signature
            self._wake.set()

    async def _loop(self) -> None:
        last = -MIN_INTERVAL_S
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.opts.refresh_interval_s)
            except TimeoutError:
                pass
            if (wait := last + MIN_INTERVAL_S - time.monotonic()) > 0:
                await asyncio.sleep(wait)   # changes meanwhile are folded into this run
            self._wake.clear()
            last = time.monotonic()
            try:
                await self._run()
            except OSError:   # the shell cannot start (no /bin/sh, out of processes): no line
                self._show("")

    async def _run(self) -> None:
        data = json.dumps(self._payload()).encode()
        self.runs += 1
        cwd = self._cwd()
        proc = await asyncio.create_subprocess_shell(
            self.opts.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, cwd=str(cwd) if cwd.is_dir() else None, start_new_session=True)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(data), TIMEOUT_S)
        except TimeoutError:
            _kill_group(proc.pid)
            await proc.wait()
            return   # too slow: the old line stays
        except asyncio.CancelledError:   # the REPL is closing
            _kill_group(proc.pid)
            raise
        self._show(first_line(out) if proc.returncode == 0 else "")

    def _show(self, line: str) -> None:
        if line == self.text:
            return
        from prompt_toolkit.formatted_text import ANSI, to_formatted_text

        self.text = line
        pad = " " * self.opts.padding
        self.fragments = [(style, text) for style, text, *_ in to_formatted_text(ANSI(pad + line))] if line else []
        self._redraw()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
