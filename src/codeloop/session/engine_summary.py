"""QueryEngine.render_summary (spec 001 §6.3): one report of the session and of its workspace.

The session half is the spec's list — session id, turns stored, permission denials tracked, usage
totals, the limits, whether the transcript is flushed. The workspace manifest beside it says what
the session works on and with: the working directory and its top-level entries, the model, the
tools offered, the engine's slash commands and the skills found. Reading it costs one directory
listing and the (cached) skill discovery; nothing is written.
"""

from __future__ import annotations

import os
from typing import Any

MANIFEST_ENTRIES = 20   # top-level entries named; the rest are counted


def _entries(cwd: str) -> str:
    try:
        with os.scandir(cwd) as it:
            names = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in it)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not names:
        return "none"
    shown = ", ".join(names[:MANIFEST_ENTRIES])
    more = len(names) - MANIFEST_ENTRIES
    return f"{len(names)} ({shown}{f', … {more} more' if more > 0 else ''})"


def _names(items: list[str]) -> str:
    return f"{len(items)} ({', '.join(items)})" if items else "none"


def workspace_manifest(engine: Any) -> list[str]:
    from codeloop.session.engine_types import SlashCommand
    from codeloop.tools.skills import session_skills

    conv = engine.conv
    try:
        skills = [s.name for s in session_skills(conv.tool_context)]
    except OSError:
        skills = []
    return ["Workspace manifest",
            f"  Working directory: {conv.config.cwd}",
            f"  Top-level entries: {_entries(str(conv.config.cwd))}",
            f"  Model: {conv.model}",
            f"  Tools offered: {_names([t.name for t in conv.config.tools])}",
            f"  Slash commands: {_names([c.value for c in SlashCommand])}",
            f"  Skills: {_names(skills)}",
            f"  Transcript: {conv.transcript_path if conv.writer is not None else 'not kept (persist=False)'}"]


def session_lines(engine: Any) -> list[str]:
    usage, cfg = engine.total_usage, engine.config
    budget = "unlimited" if cfg.max_budget_tokens is None else f"{cfg.max_budget_tokens} (in + out: " \
        f"{engine.budget_tokens()})"
    return ["Session",
            f"  Session id: {engine.session_id}",
            f"  Conversation turns stored: {engine.turn_count} ({len(engine.conv.messages)} messages in context)",
            f"  Permission denials tracked: {len(engine.conv.permission_denials)}",
            f"  Usage totals: in={usage.input_tokens} out={usage.output_tokens} "
            f"(cache read={usage.cache_read_input_tokens}, cache write={usage.cache_creation_input_tokens}; "
            f"${usage.cost_usd:.4f})",
            f"  Max turns: {cfg.max_turns}",
            f"  Max budget tokens: {budget}",
            f"  Transcript flushed: {engine.transcript_flushed}"]


def render_summary(engine: Any) -> str:
    return "\n".join([*session_lines(engine), "", *workspace_manifest(engine)]) + "\n"
