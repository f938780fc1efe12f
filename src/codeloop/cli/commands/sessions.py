"""`codeloop sessions list|show|export`: sessions on disk, for people who script around them.

Reads only: transcripts through the store and transcript loader, engine summaries through the
engine. Every id is validated before it can reach a path; a bad or unknown id is one error line
and exit status 1.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.session import store

EXIT_OK, EXIT_ERROR = 0, 1


class ExportFormat(str, Enum):
    JSON = "json"
    MARKDOWN = "markdown"


class SessionsError(Exception):
    """A user-facing failure: bad id, unknown session, unwritable output."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="codeloop sessions", description="List, show and export saved sessions.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="sessions of this directory (newest first)")
    ls.add_argument("--all", action="store_true", help="sessions of every project")
    ls.add_argument("--json", action="store_true", help="one JSON array")
    show = sub.add_parser("show", help="one session's summary")
    show.add_argument("session_id")
    show.add_argument("--json", action="store_true")
    exp = sub.add_parser("export", help="a session's messages as JSON or markdown")
    exp.add_argument("session_id")
    exp.add_argument("--format", choices=[f.value for f in ExportFormat], default=ExportFormat.JSON.value)
    exp.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    return p


def _iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _all_sessions() -> list[tuple[str, store.SessionInfo]]:
    out = []
    try:
        folders = [f for f in os.scandir(store.projects_dir()) if f.is_dir()]
    except OSError:
        return []
    for folder in folders:
        for _, sid, path in store._transcripts_newest_first(Path(folder.path)):
            out.append((folder.name, store.SessionInfo(sid, path, path.stat().st_mtime, store._first_prompt(path))))
    out.sort(key=lambda t: t[1].mtime, reverse=True)
    return out


def cmd_list(args: argparse.Namespace, out) -> int:
    cwd = Path.cwd().resolve()
    rows = _all_sessions() if args.all else [(store.project_key(cwd), s) for s in store.list_sessions(cwd)]
    from codeloop.session.hold import holder

    live = {s.session_id: h for _, s in rows if (h := holder(s.path)) is not None}   # a live process writes it
    if args.json:
        out.write(json.dumps([{"session_id": s.session_id, "project": proj, "path": str(s.path),
                               "modified": _iso(s.mtime), "first_prompt": s.first_prompt,
                               "live": _live(live.get(s.session_id))} for proj, s in rows],
                             ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    if not rows:
        out.write("No sessions found." + ("" if args.all else " (use --all for every project)") + "\n")
        return EXIT_OK
    for proj, s in rows:
        where = f"  [{proj}]" if args.all else ""
        busy = f"  [live: {h.describe()}]" if (h := live.get(s.session_id)) is not None else ""
        out.write(f"{s.session_id}  {_iso(s.mtime)}  {s.first_prompt or '(no prompt)'}{busy}{where}\n")
    return EXIT_OK


def _live(h: Any) -> dict[str, Any] | None:
    return None if h is None else {"pid": h.pid, "entrypoint": h.entrypoint, "since": h.since}


def _locate(raw: str) -> tuple[str, Path]:
    try:
        sid = store.validate_session_id(raw)
    except ValueError as exc:
        raise SessionsError(str(exc)) from None
    path = store.find_session(sid, Path.cwd().resolve())
    if path is None:
        raise SessionsError(f"No conversation found with session ID: {sid}")
    return sid, path


def _load(path: Path):
    from codeloop.session.transcript import load_transcript

    return load_transcript(path)


def cmd_show(args: argparse.Namespace, out) -> int:
    from codeloop.session.engine import ENGINE_FILE, EngineError, read_summary
    from codeloop.session.hold import holder

    sid, path = _locate(args.session_id)
    loaded = _load(path)
    kinds = [e.get("type") for e in loaded.entries]
    try:
        summary = read_summary(path.with_suffix("") / ENGINE_FILE)
    except EngineError as exc:
        summary = {"error": str(exc)}
    info = {"session_id": sid, "path": str(path), "modified": _iso(path.stat().st_mtime),
            "first_prompt": store._first_prompt(path), "messages": len(loaded.messages),
            "user_entries": kinds.count("user"), "assistant_entries": kinds.count("assistant"),
            "compactions": sum(1 for e in loaded.entries if e.get("subtype") == "compact_boundary"),
            "permission_denials": sum(1 for k in kinds if k == "permission-denial"),
            "ended_by_model": "ended-by-model" in kinds, "live": _live(holder(path)), "engine": summary,
            "warnings": loaded.warnings}
    if args.json:
        out.write(json.dumps(info, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    for key, value in info.items():
        if key == "engine" and value:
            value = ", ".join(f"{k}={value[k]}" for k in ("turn_count", "usage", "error") if k in value)
        if key == "live" and value:
            value = ", ".join(f"{k} {v}" for k, v in value.items() if v is not None)
        if value not in (None, [], {}):
            out.write(f"{key:>19}: {value}\n")
    return EXIT_OK


def _block_markdown(b: dict[str, Any]) -> str:
    kind = b.get("type")
    if kind == "text":
        return b.get("text", "")
    if kind == "tool_use":
        body = json.dumps(b.get("input"), indent=2, ensure_ascii=False)
        return f"**Tool call: {b.get('name')}**\n\n```json\n{body}\n```"
    if kind == "tool_result":
        content = b.get("content")
        if isinstance(content, list):
            content = "\n".join(c.get("text", f"[{c.get('type')}]") for c in content if isinstance(c, dict))
        label = "Tool error" if b.get("is_error") else "Tool result"
        return f"**{label}**\n\n```\n{content}\n```"
    if kind == "thinking":
        return f"> _thinking:_ {b.get('thinking', '')}"
    return f"[{kind}]"


def render_markdown(sid: str, messages: list[Any]) -> str:
    parts = [f"# Session {sid}\n"]
    for m in messages:
        who = "Assistant" if m.role == "assistant" else ("User (meta)" if m.is_meta else "User")
        body = "\n\n".join(_block_markdown(b) for b in m.content)
        parts.append(f"## {who}\n\n{body}\n")
    return "\n".join(parts)


def cmd_export(args: argparse.Namespace, out) -> int:
    sid, path = _locate(args.session_id)
    loaded = _load(path)
    if args.format == ExportFormat.MARKDOWN.value:
        text = render_markdown(sid, loaded.messages)
    else:
        text = json.dumps({"session_id": sid, "messages": [
            {"uuid": m.uuid, "role": m.role, "timestamp": m.timestamp, "is_meta": m.is_meta, "content": m.content}
            for m in loaded.messages]}, ensure_ascii=False, indent=2) + "\n"
    if not args.output:
        out.write(text)
        return EXIT_OK
    target = Path(args.output)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        raise SessionsError(f"cannot write {target}: {exc.strerror or exc}") from None
    return EXIT_OK


def sessions_main(argv: list[str], *, out=None) -> int:
    out = out or sys.stdout
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage
        return int(exc.code or 0)
    handler = {"list": cmd_list, "show": cmd_show, "export": cmd_export}[args.command]
    try:
        return handler(args, out)
    except SessionsError as exc:
        sys.stderr.write(f"codeloop sessions: error: {exc}\n")
        return EXIT_ERROR
