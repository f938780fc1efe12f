"""Saving a permission rule the user granted ("Yes, and don't ask again") to the project's local
settings, `.claude/settings.local.json` (Claude Code's file, which codeloop also reads), and any
other edit of one settings file (`edit_settings_file`: `codeloop plugin enable` and the like).

Owns the read-merge-write of that one file: the existing content is kept as it is (other keys,
other rules, their order), the rule is added once to `permissions.<behavior>`, and the file is
replaced atomically (`fsutil.atomic_write`), keeping its permission bits. A file that is not a
JSON object is never overwritten: the caller is told, and nothing is lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOCAL_SETTINGS = Path(".claude") / "settings.local.json"


class SettingsWriteError(Exception):
    """The rule could not be saved (unreadable or malformed file, disk error): one line to show."""


def local_settings_path(cwd: Path) -> Path:
    return cwd / LOCAL_SETTINGS


def add_permission_rule(cwd: Path, rule: str, behavior: str = "allow") -> Path:
    """Add `rule` under `permissions.<behavior>` of the project's local settings; returns the path."""
    def add(data: dict[str, Any]) -> None:
        perms = data.setdefault("permissions", {})
        if not isinstance(perms, dict):
            raise SettingsWriteError(f"{path}: \"permissions\" is not an object; rule not saved")
        rules = perms.setdefault(behavior, [])
        if not isinstance(rules, list):
            raise SettingsWriteError(f"{path}: \"permissions.{behavior}\" is not a list; rule not saved")
        if rule not in rules:
            rules.append(rule)

    path = local_settings_path(cwd)
    return edit_settings_file(path, add, what="rule")


def edit_settings_file(path: Path, edit: Callable[[dict[str, Any]], None], *, what: str = "change") -> Path:
    """Read `path` (a JSON object, or nothing yet), let `edit` change it in place, write it back
    atomically with its permission bits. SettingsWriteError names the file when it cannot be done."""
    from codeloop.fsutil import atomic_write

    data: dict[str, Any] = {}
    mode: int | None = None
    try:
        raw = path.read_text(encoding="utf-8")
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        raw = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsWriteError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if raw.strip():
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise SettingsWriteError(f"{path} is not valid JSON (line {exc.lineno}); {what} not saved") from None
        if not isinstance(data, dict):
            raise SettingsWriteError(f"{path} does not hold a JSON object; {what} not saved")
    edit(data)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        atomic_write(path, text.encode("utf-8"), mode=mode)
    except OSError as exc:
        raise SettingsWriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
