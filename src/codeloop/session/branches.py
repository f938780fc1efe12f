"""One conversation out of a transcript whose parentUuid links branch.

A transcript is a tree: each chain record (`CHAIN_TYPES`) names its parent. One writer appends
a single chain, so most files are a line. A file branches when a truncating resume goes on from
an earlier record (a `branch-point` record says where), or when older versions let two processes
append to one session at once (records of two conversations with the same parentUuid,
interleaved). The history is then the newest leaf's chain, as Claude Code reads it:

    tip      the last record in the file that sets where the chain goes on (`chain_tip`), or the
             record a caller names (`--resume-session-at`)
    chain    parentUuid links followed back from the tip (leaving out a prompt of another
             conversation that an old race put between a prompt and its parent, `_walk`)
    + split  Claude Code's own branching, kept: records that belong to a chain message — the other
             blocks of one assistant message (same message id), the results of its tool calls
    + meta   records off the chain (titles, denials, markers) unless they hang off another branch;
             tombstones and branch points always (they only retract)

A file that never branches is returned as it is.
"""

from __future__ import annotations

from typing import Any

# Entries that form the parentUuid chain; metadata (tombstones, denials, markers) hangs off it.
CHAIN_TYPES = ("user", "assistant", "system", "compact_boundary")
# A truncating resume's marker: the chain continues from `leafUuid`, not from the last record.
BRANCH_POINT = "branch-point"
_ALWAYS_KEPT = ("tombstone", BRANCH_POINT)


def chain_tip(entry: dict[str, Any]) -> str | None:
    """The uuid the next record should hang off, if this record sets it."""
    uid = entry.get("leafUuid") if entry.get("type") == BRANCH_POINT else (
        entry.get("uuid") if entry.get("type") in CHAIN_TYPES else None)
    return uid if isinstance(uid, str) and uid else None


def _nodes(entries: list[dict[str, Any]]) -> tuple[dict[str, Any], set[str], bool, str | None]:
    """(every record's parentUuid by its uuid, the chain records' uuids, whether two chain records
    share a parent, the file's tip). Links run through any record: Claude Code hangs messages off
    its `progress` and `attachment` records too."""
    links: dict[str, Any] = {}
    chain: set[str] = set()
    parents: set[str] = set()
    forked, tip = False, None
    for e in entries:
        uid = e.get("uuid")
        if isinstance(uid, str):
            links.setdefault(uid, e.get("parentUuid"))
            if e.get("type") in CHAIN_TYPES:
                chain.add(uid)
                parent = e.get("parentUuid")
                if isinstance(parent, str):
                    forked = forked or parent in parents
                    parents.add(parent)
        tip = chain_tip(e) or tip
    return links, chain, forked, tip


def branches(entries: list[dict[str, Any]]) -> bool:
    """Whether the chain records of `entries` branch (two share a parent). One cheap pass: every
    resume asks it of every record."""
    parents, linked = set(), 0
    for e in entries:
        if e.get("type") in CHAIN_TYPES and (parent := e.get("parentUuid")) is not None:
            parents.add(parent)
            linked += 1
    return len(parents) != linked


def one_chain(entries: list[dict[str, Any]], tip: str | None = None) -> list[dict[str, Any]]:
    """The records of the conversation ending at `tip` (default: the file's tip), in file order."""
    if tip is None and not branches(entries):
        return entries
    links, chain, forked, file_tip = _nodes(entries)
    tip = tip or file_tip
    if not forked and tip == file_tip:
        return entries
    on = _walk(entries, links, tip)
    _recover_split_messages(entries, on)
    kept = []
    for e in entries:
        uid, parent = e.get("uuid"), e.get("parentUuid")
        if uid in chain:
            if uid in on:
                kept.append(e)
        elif e.get("type") in _ALWAYS_KEPT or uid in on or parent not in chain or parent in on:
            kept.append(e)
    return kept


def _walk(entries: list[dict[str, Any]], links: dict[str, Any], tip: str | None) -> set[str]:
    """The uuids from `tip` back along parentUuid. A prompt whose answer hangs elsewhere is left
    out when a prompt follows it: two old processes raced, the second hung its prompt off the
    first's before the first's answer came (each prompt keeps its own answer)."""
    prompts = {e["uuid"] for e in entries if isinstance(e.get("uuid"), str) and _is_prompt(e)}
    answered = {e.get("parentUuid") for e in entries if e.get("type") == "assistant"}
    on: set[str] = set()
    uid: Any = tip
    after_prompt = False
    while isinstance(uid, str) and uid in links and uid not in on:
        if not (after_prompt and uid in prompts and uid in answered):
            on.add(uid)
            after_prompt = uid in prompts
        uid = links[uid]
    return on


def _is_prompt(entry: dict[str, Any]) -> bool:
    return (entry.get("type") == "user" and not entry.get("isMeta") and "toolUseResult" not in entry
            and not _blocks(entry, "tool_result", "tool_use_id"))


def _recover_split_messages(entries: list[dict[str, Any]], on: set[str]) -> None:
    """Add to `on` the off-chain blocks of chain assistant messages and the results of their tool
    calls (Claude Code may hang parallel tool calls and their results off one parent)."""
    ids = {m.get("id") for e in entries if e.get("uuid") in on and (m := _message(e)) is not None}
    ids.discard(None)
    uses = {u for e in entries if e.get("uuid") in on for u in _blocks(e, "tool_use", "id")}
    for e in entries:
        uid = e.get("uuid")
        if not isinstance(uid, str) or uid in on:
            continue
        message = _message(e)
        if e.get("type") == "assistant" and message is not None and message.get("id") in ids:
            on.add(uid)
            uses.update(_blocks(e, "tool_use", "id"))
        elif e.get("type") == "user" and (answered := _blocks(e, "tool_result", "tool_use_id")) and answered <= uses:
            on.add(uid)


def _message(entry: dict[str, Any]) -> dict[str, Any] | None:
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def _blocks(entry: dict[str, Any], kind: str, key: str) -> set[Any]:
    message = _message(entry)
    content = message.get("content") if message is not None else None
    if not isinstance(content, list):
        return set()
    return {b.get(key) for b in content if isinstance(b, dict) and b.get("type") == kind}


def descendants(entries: list[dict[str, Any]], at: str) -> list[dict[str, Any]]:
    """The chain records that go on from `at` (its branch's later records, every sub-branch)."""
    below, out = {at}, []
    for e in entries:
        uid = e.get("uuid")
        if e.get("type") in CHAIN_TYPES and isinstance(uid, str) and e.get("parentUuid") in below:
            below.add(uid)
            out.append(e)
    return out
