"""Resume after compaction: only what follows the last compact boundary becomes the history.

A boundary entry is `{"type": "system", "subtype": "compact_boundary", "compactMetadata": …}`
(a bare `{"type": "compact_boundary"}` is accepted too), followed by the post-compact messages.
`load_from_last_boundary` finds the last boundary by searching the file's bytes backwards
(memory-mapped, so a long transcript is neither read whole into Python nor parsed) and parses
only the lines after it. Without a boundary it parses everything, like `load_transcript`.

`load_until` is the truncating resume (`--resume-session-at <uuid>`, the SDK's
`resume_session_at`): history up to and including that record, the rest handed back so the
caller can retract it (tombstones) or leave it out of a fork.
"""

from __future__ import annotations

import gc
import mmap
from pathlib import Path
from typing import Any

from codeloop.messages import Message
from codeloop.session.branches import branches, chain_tip, descendants, one_chain
from codeloop.session.repair import messages_from_entries
from codeloop.session.records import is_prompt
from codeloop.session.transcript import (BRANCH_POINT, LoadedTranscript, entry_to_message, load_transcript,
                                         parse_line)

# json.dumps never escapes these quotes in a real key/value, while inside message text they
# appear as \"compact_boundary\" — the byte before the match tells the two apart.
_MARKER = b'"compact_boundary"'


def is_compact_boundary(entry: Any) -> bool:
    return isinstance(entry, dict) and (
        entry.get("type") == "compact_boundary"
        or (entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"))



def messages_after_last_boundary(entries: list[dict[str, Any]]) -> list[Message]:
    """The history a resumed session continues from: messages after the last boundary (or all)."""
    start = 0
    for i in range(len(entries) - 1, -1, -1):
        if is_compact_boundary(entries[i]):
            start = i + 1
            break
    return messages_from_entries((e for e in entries[start:] if isinstance(e, dict)), entry_to_message)[0]


def _tail_after_boundary(buf: Any) -> tuple[int, dict[str, Any] | None]:
    """(offset where the post-boundary lines start, boundary entry) — (0, None) if none."""
    end = len(buf)
    while True:
        idx = buf.rfind(_MARKER, 0, end)
        if idx < 0:
            return 0, None
        end = idx
        if idx > 0 and buf[idx - 1:idx] == b"\\":
            continue
        line_start = buf.rfind(b"\n", 0, idx) + 1
        line_end = buf.find(b"\n", idx)
        line_end = len(buf) if line_end < 0 else line_end
        entry = parse_line(buf[line_start:line_end])
        if is_compact_boundary(entry):
            return min(len(buf), line_end + 1), entry
        end = line_start


def load_from_last_boundary(path: Path | str) -> LoadedTranscript:
    """Messages after the last compact boundary, the entries they came from, and load warnings.

    `entries` starts with the boundary entry itself when there is one; `last_uuid` is the chain
    tip to hand to TranscriptWriter.
    """
    path = Path(path)
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size == 0:
            return LoadedTranscript(messages=[], entries=[])
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            offset, boundary = _tail_after_boundary(mm)
            tail = mm[offset:] if boundary is not None else b""
    if boundary is None:
        return load_transcript(path)     # nothing to skip: the ordinary full load
    gc_was_enabled = gc.isenabled()
    gc.disable()   # parsed JSON has no cycles; collections during the burst only cost time
    try:
        entries: list[dict[str, Any]] = [boundary] if boundary is not None else []
        corrupt = 0
        for line in tail.split(b"\n"):
            if not line.strip():
                continue
            entry = parse_line(line)
            if entry is None:
                corrupt += 1
            else:
                entries.append(entry)
        last_uuid = next((tip for e in reversed(entries) if (tip := chain_tip(e))), None)
        entries = one_chain(entries)   # the newest leaf's conversation where the chain branches
        messages, bad = messages_from_entries(entries, entry_to_message)
    finally:
        if gc_was_enabled:
            gc.enable()
    corrupt += bad
    warnings = [f"skipped {corrupt} corrupt line(s) in {path}"] if corrupt else []
    return LoadedTranscript(messages=messages, entries=entries, warnings=warnings, last_uuid=last_uuid)


class ResumeError(ValueError):
    """A truncating resume that cannot be done as asked (one line for the user)."""


def load_until(path: Path | str, at: str, drops_turn: str | None = None
               ) -> tuple[LoadedTranscript, list[dict[str, Any]]]:
    """(history up to and including the record `at`, the records after it).

    `drops_turn` (`--resume-drops-turn`): the prompt uuid of the one turn the caller means to
    discard; refused unless everything after `at` belongs to that turn — a prompt the caller never
    saw must not vanish silently. Where the chain branches, `at` may be on any branch: the history
    is its chain (session.branches), and "after it" means the records that go on from it.
    """
    loaded = load_transcript(path, every_branch=True)
    idx = next((i for i, e in enumerate(loaded.entries) if e.get("uuid") == at), None)
    if idx is None:
        raise ResumeError(f"--resume-session-at: no message {at} in {Path(path).name}")
    target = loaded.entries[idx]
    if branches(loaded.entries) and chain_tip(target) == at:
        chain = one_chain(loaded.entries, at)
        kept = chain[:next(i for i, e in enumerate(chain) if e is target) + 1]
        dropped = descendants(loaded.entries, at)
    else:
        kept, dropped = loaded.entries[:idx + 1], loaded.entries[idx + 1:]
    if drops_turn is not None:
        prompts = [m.uuid for m in map(entry_to_message, dropped) if m is not None and is_prompt(m)]
        if prompts and prompts != [drops_turn]:
            raise ResumeError(f"Resume rejected by --resume-drops-turn: the records after {at} hold "
                              f"prompt(s) {', '.join(prompts)}, not only {drops_turn}")
    messages = messages_after_last_boundary(kept)
    return LoadedTranscript(messages=messages, entries=kept, warnings=loaded.warnings, last_uuid=at), dropped


def branch_from(writer: Any, at: str | None, dropped: list[dict[str, Any]]) -> None:
    """Continue the same file from `at` (None: from before the first message): the dropped
    messages are retracted (tombstones, so a later plain resume does not bring them back) and a
    `branch-point` record tells the writer where the chain continues. Claude Code's readers follow
    parentUuid from the newest leaf, so they see the new branch either way. `writer`: anything with
    `append_entry` (a TranscriptWriter, a Conversation's persistence)."""
    for e in dropped:
        if e.get("type") in ("user", "assistant") and isinstance(e.get("uuid"), str):
            writer.append_entry({"type": "tombstone", "targetUuid": e["uuid"]})
    writer.append_entry({"type": BRANCH_POINT, "leafUuid": at})
