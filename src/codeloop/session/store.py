"""Where sessions live on disk: the config dir, per-project folders, session ids and lookup.

Layout (as in Claude Code): `<config>/projects/<project key>/<session id>.jsonl`, plus an
optional `<session id>/` folder beside it for large tool outputs, todos and subagent
transcripts, and `<session id>.lock` while a process writes it (session.hold). This module
only computes paths and reads file heads; it never creates anything (the transcript writer
creates what it writes) and never parses whole transcripts.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from codeloop.messages import new_uuid
from codeloop.config.paths import config_dir

_UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"   # compiled on first use (re.I)
_NON_ALNUM_RE = re.compile(r"[^a-zA-Z0-9]")
# Most filesystems cap a name at 255 bytes; Claude Code truncates keys at 200 and appends a hash.
_MAX_KEY_LEN = 200
_HEAD_BYTES = 256 * 1024
_PROMPT_PREVIEW_LEN = 80
_MESSAGE_TYPES = ("user", "assistant")


class InvalidSessionId(ValueError):
    """A session id that is not a canonical UUID (and so must never become part of a path)."""


@dataclass(frozen=True)
class SessionInfo:
    """A saved session: its id, transcript path, time and first prompt."""
    session_id: str
    path: Path
    mtime: float
    first_prompt: str | None = None


def projects_dir() -> Path:
    """Where Claude Code and the Agent SDK's session readers look — `$CLAUDE_CONFIG_DIR/projects`,
    else `~/.claude/projects` — when that variable is set (the SDK sets it to resume from a
    `session_store`) or an SDK started codeloop (`CLAUDE_CODE_ENTRYPOINT=sdk-py`, `sdk-ts`, …:
    `list_sessions`, `get_session_messages` and truncating resume read there). Otherwise
    codeloop's own `<config>/projects`: a plain CLI install never writes into ~/.claude."""
    claude = os.environ.get("CLAUDE_CONFIG_DIR")
    if claude:
        return Path(claude).expanduser() / "projects"
    if started_by_sdk():
        return Path.home() / ".claude" / "projects"
    return config_dir() / "projects"


def started_by_sdk() -> bool:
    """An Agent SDK started this process: it names itself in the entrypoint (`sdk-py`, `sdk-ts`, `sdk-cli`)."""
    entry = os.environ.get("CODELOOP_ENTRYPOINT") or os.environ.get("CLAUDE_CODE_ENTRYPOINT") or ""
    return entry.strip().startswith("sdk-")


def _search_dirs() -> list[Path]:
    """Where an existing session may be: the current store, then codeloop's own (sessions written
    before CLAUDE_CONFIG_DIR was set stay resumable)."""
    return list(dict.fromkeys([projects_dir(), config_dir() / "projects"]))


def project_key(cwd: Path | str) -> str:
    key = _NON_ALNUM_RE.sub("-", os.path.abspath(os.fspath(cwd)))
    if len(key) > _MAX_KEY_LEN:
        # Without this a deep cwd makes every transcript write fail with ENAMETOOLONG.
        import hashlib   # only here: not on every start-up's way to the first request

        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        key = f"{key[:_MAX_KEY_LEN]}-{digest}"
    return key


def project_dir(cwd: Path | str) -> Path:
    return projects_dir() / project_key(cwd)


def validate_session_id(s: object) -> str:
    # fullmatch, not `$`: `$` would accept a trailing newline.
    if not isinstance(s, str) or not re.fullmatch(_UUID_RE, s, re.IGNORECASE):
        shown = repr(s) if not isinstance(s, str) or len(s) <= 60 else repr(s[:60] + "…")
        raise InvalidSessionId(
            f"invalid session id {shown}: expected a UUID such as "
            "123e4567-e89b-12d3-a456-426614174000")
    return s.lower()


def new_session_id() -> str:
    return new_uuid()


def session_path(cwd: Path | str, session_id: str) -> Path:
    return project_dir(cwd) / f"{validate_session_id(session_id)}.jsonl"


def session_dir(cwd: Path | str, session_id: str) -> Path:
    return project_dir(cwd) / validate_session_id(session_id)


def latest_session(cwd: Path | str) -> str | None:
    """The session id of the most recently modified transcript in this project, if any."""
    for _mtime, session_id, path in _transcripts_newest_first(project_dir(cwd)):
        if _has_message_entry(path):
            return session_id
    return None


def find_session(session_id: str, cwd: Path | str) -> Path | None:
    """This project's transcript for `session_id`, else one from any project (newest wins)."""
    session_id = validate_session_id(session_id)
    key = project_key(cwd)
    for root in _search_dirs():
        own = root / key / f"{session_id}.jsonl"
        if own.is_file():
            return own
    best: tuple[float, Path] | None = None
    folders = []
    for root in _search_dirs():
        try:
            folders += list(os.scandir(root))
        except OSError:
            continue
    for folder in folders:
        candidate = Path(folder.path) / f"{session_id}.jsonl"
        try:
            if not folder.is_dir():
                continue
            st = candidate.stat()
        except OSError:
            continue
        if best is None or st.st_mtime > best[0]:
            best = (st.st_mtime, candidate)
    return best[1] if best else None


def list_sessions(cwd: Path | str) -> list[SessionInfo]:
    """This project's sessions, newest first. Empty (zero-byte) files are left out."""
    return [SessionInfo(session_id, path, mtime, _first_prompt(path))
            for mtime, session_id, path in _transcripts_newest_first(project_dir(cwd))]


def _transcripts_newest_first(folder: Path) -> list[tuple[float, str, Path]]:
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        stem, ext = os.path.splitext(entry.name)
        # Foreign files in the folder must not become ids that later reach a path.
        if ext != ".jsonl" or not re.fullmatch(_UUID_RE, stem, re.IGNORECASE):
            continue
        try:
            if not entry.is_file():
                continue
            st = entry.stat()
        except OSError:
            continue
        if st.st_size == 0:
            continue
        found.append((st.st_mtime, stem.lower(), Path(entry.path)))
    found.sort(key=lambda t: (t[0], t[1]), reverse=True)
    return found


def _iter_head_entries(path: Path, budget: int | None = _HEAD_BYTES):
    """Parsed entries from the first `budget` bytes (None: all); a line cut by the budget ends it."""
    try:
        f = open(path, "rb")
    except OSError:
        return
    with f:
        while budget is None or budget > 0:
            # Binary readline splits on b"\n" only, so U+2028 inside a record is harmless.
            line = f.readline() if budget is None else f.readline(budget)
            if not line:
                return
            if budget is not None:
                budget -= len(line)
                if not line.endswith(b"\n") and budget <= 0:
                    return
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, dict):
                yield entry


def _has_message_entry(path: Path) -> bool:
    # Unbounded: a session may legitimately open with large summary/system entries.
    for entry in _iter_head_entries(path, budget=None):
        if entry.get("type") in _MESSAGE_TYPES and isinstance(entry.get("message"), dict):
            return True
    return False


def _first_prompt(path: Path) -> str | None:
    for entry in _iter_head_entries(path):
        if entry.get("type") != "user" or entry.get("isMeta") or "toolUseResult" in entry:
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = " ".join(b.get("text", "") for b in content
                            if isinstance(b, dict) and b.get("type") == "text")
        else:
            continue
        text = " ".join(text.split())
        if not text:
            continue
        if len(text) > _PROMPT_PREVIEW_LEN:
            text = text[:_PROMPT_PREVIEW_LEN - 1] + "…"
        return text
    return None


def find_session_by_name(cwd: Path | str, name: str) -> str | None:
    """The newest session in this project whose `custom-title` is `name` (Claude Code's `-n`)."""
    needle = b'"custom-title"'
    best: tuple[float, str] | None = None
    try:
        files = list(project_dir(cwd).glob("*.jsonl"))
    except OSError:
        return None
    for path in files:
        try:
            data = path.read_bytes()
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if needle not in data:
            continue
        title = None
        for line in data.splitlines():
            if needle in line:
                try:
                    title = json.loads(line).get("customTitle", title)
                except ValueError:
                    continue
        if title == name and (best is None or mtime > best[0]):
            best = (mtime, path.stem)
    return best[1] if best else None
