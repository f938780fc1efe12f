"""Reading one settings file: bytes → UTF-8 → a JSON object, with every failure located.

A problem that must stop the run (fail closed: a dropped file would drop its deny rules) is a
`SettingsProblem` naming file:line:col where there is one and saying what is wrong, in words a
person can act on (a `//` comment, a trailing comma, a truncated file, a stray byte).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SettingsProblem:
    """A settings file that must not be silently skipped: where, and what is wrong with it."""
    path: str
    what: str
    line: int | None = None
    col: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.col}" if self.line is not None else self.path
        return f"{where}: {self.what}"


def _json_hint(text: str, pos: int) -> str:
    """Why JSON that editors and people often write is refused: comments, trailing commas."""
    rest = text[pos:pos + 2]
    if rest.startswith(("//", "/*")):
        return " (comments are not allowed in JSON)"
    before = text[:pos].rstrip()
    if before.endswith(",") and rest[:1] in ("}", "]"):
        return " (trailing comma)"
    if not text[pos:].strip():
        return " (the file ends too early: truncated?)"
    return ""


def _parse_json(text: str, label: str, errors: list[str],
                broken: list[SettingsProblem] | None = None) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        what = f"invalid JSON: {e.msg}{_json_hint(text, e.pos)}"
        errors.append(f"{label}:{e.lineno}:{e.colno}: {what}")
        if broken is not None:
            broken.append(SettingsProblem(label, what, e.lineno, e.colno))
        return None
    if not isinstance(data, dict):
        errors.append(f"{label}: settings must be a JSON object, not {type(data).__name__}; file ignored")
        if broken is not None:
            broken.append(SettingsProblem(label, f"settings must be a JSON object, not a JSON "
                                                 f"{_json_type(data)}", 1, 1))
        return None
    return data


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _read_file(path: Path, errors: list[str], broken: list[SettingsProblem] | None = None,
               texts: dict[str, str] | None = None) -> dict[str, Any] | None:
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):   # no file there (a parent is not a folder)
        return None
    except OSError as e:
        errors.append(f"{path}: cannot read settings: {e}")
        if broken is not None:
            broken.append(SettingsProblem(str(path), f"cannot read settings: {e.strerror or e}"))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        what = f"not valid UTF-8 (byte 0x{raw[e.start]:02x})"
        errors.append(f"{path}:{line}:{col}: cannot read settings: {what}")
        if broken is not None:
            broken.append(SettingsProblem(str(path), what, line, col))
        return None
    if texts is not None:
        texts[str(path)] = text
    if not text.strip():
        return {}     # an empty file is a common editor artefact, not an error
    return _parse_json(text, str(path), errors, broken)


def _locate(text: str | None, *keys: str) -> tuple[int | None, int | None]:
    """Line and column of `"k1": … "k2":` in a settings file's text (the first match; good
    enough to point the user at the place), or (None, None)."""
    if not text:
        return None, None
    pos = 0
    for key in keys:
        m = re.compile(rf'"{re.escape(key)}"\s*:').search(text, pos)
        if m is None:
            return None, None
        pos = m.start()
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _shape(value: Any) -> str:
    if isinstance(value, list):
        bad = next((x for x in value if not isinstance(x, str)), None)
        return (f"a list holding a JSON {_json_type(bad)} ({json.dumps(bad)[:40]})" if bad is not None
                else "a list")
    return f"a JSON {_json_type(value)} ({json.dumps(value)[:60]})"


