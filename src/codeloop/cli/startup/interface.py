"""The interactive front end's settings, resolved at the door: `statusLine` and `editorMode`.

Read from the merged settings — which hold a project's `statusLine` only when the folder is
trusted (`config.settings.untrusted_view` keeps no key that runs a command) — and validated
once: a malformed value is dropped with one warning line, never guessed at. `disableAllHooks`
turns the status line off too, as in Claude Code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from codeloop.session.options import EditorMode, InterfaceOptions, StatusLineOptions

MAX_PADDING = 40


def interface_options(merged: Mapping[str, Any]) -> tuple[InterfaceOptions, list[str]]:
    """InterfaceOptions from the merged settings, and a warning for each value that was dropped."""
    warnings: list[str] = []
    status = _status_line(merged.get("statusLine"), warnings)
    if status is not None and merged.get("disableAllHooks") is True:
        status = None
    return InterfaceOptions(status_line=status, editor_mode=_editor_mode(merged.get("editorMode"), warnings)), \
        warnings


def _status_line(block: Any, warnings: list[str]) -> StatusLineOptions | None:
    if block is None:
        return None
    if not isinstance(block, dict) or block.get("type", "command") != "command" \
            or not isinstance(block.get("command"), str) or not block["command"].strip():
        warnings.append('settings: statusLine must be {"type": "command", "command": "…"}; ignored')
        return None
    padding = block.get("padding", 0)
    if isinstance(padding, bool) or not isinstance(padding, (int, float)) or not 0 <= padding <= MAX_PADDING:
        warnings.append(f"settings: statusLine.padding must be a number from 0 to {MAX_PADDING}; 0 used")
        padding = 0
    interval = block.get("refreshInterval")
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, (int, float))
                                 or not math.isfinite(interval) or interval < 1):
        warnings.append("settings: statusLine.refreshInterval must be a number of seconds (1 or more); ignored")
        interval = None
    return StatusLineOptions(command=block["command"], padding=int(padding),
                             refresh_interval_s=float(interval) if interval is not None else None,
                             hide_vim_mode=block.get("hideVimModeIndicator") is True)


def _editor_mode(value: Any, warnings: list[str]) -> EditorMode:
    if value is None:
        return EditorMode.NORMAL
    if value == "emacs":   # Claude Code's older name for the default
        return EditorMode.NORMAL
    try:
        return EditorMode(value)
    except ValueError:
        warnings.append(f"settings: editorMode must be \"normal\" or \"vim\", not {value!r}; normal used")
        return EditorMode.NORMAL
