"""The append-only JSONL session transcript: entry format, durable writer, tolerant reader, repair.

One JSON object per line, one entry per message (Claude Code's shape: `type`, `uuid`,
`parentUuid`, `sessionId`, `timestamp`, `cwd`, `version`, `message`, …), plus other entry types
(summary, system, compact_boundary, …) written through `append_entry`. Lines are split on b"\\n"
only: json.dumps escapes control characters, so a record never contains a raw newline, while
U+2028/U+0085 may appear raw and must not be treated as line breaks.
"""

from __future__ import annotations

import gc
import json
import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, BinaryIO

from codeloop.version import __version__
from codeloop.jsonload import loads
from codeloop.messages import Message, new_uuid, now_iso
from codeloop.session.result_once import RESULT_FROM_CONTENT, store_result_once, tool_use_result  # noqa: F401
from codeloop.session.branches import BRANCH_POINT, CHAIN_TYPES, one_chain  # noqa: F401
from codeloop.session.branches import chain_tip as _chain_tip
from codeloop.session.records import is_prompt, last_prompt_record, writer_fields
from codeloop.session.repair import INTERRUPTED_TOOL_RESULT, MESSAGE_TYPES, messages_from_entries  # noqa: F401
_TAIL_BLOCK = 64 * 1024


class TranscriptError(Exception):
    """Writing the transcript failed. The run itself is fine; the caller decides what to do."""

    def __init__(self, path: Path | str, detail: str):
        self.path = Path(path)
        super().__init__(f"cannot write session transcript {self.path}: {detail}")


@dataclass
class LoadedTranscript:
    """A transcript read back: its messages, its raw entries, what was repaired, and its last uuid."""
    messages: list[Message]
    entries: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    last_uuid: str | None = None


def message_to_entry(msg: Message, *, session_id: str, cwd: Path | str,
                     parent_uuid: str | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One message's record. `extra`: the fields Claude Code writes on every message record
    (`userType`, `entrypoint`, `gitBranch`, `promptId`…), placed before `message` as it does."""
    message = msg.api_message()
    if msg.sent_as_text and len(msg.content) == 1 and msg.content[0].get("type") == "text":
        message["content"] = msg.content[0]["text"]   # as it was sent, as Claude Code stores it
    if msg.role == "user":
        # api_message() leaves these out for users; keep them when set so round-trips are total
        for key, value in (("id", msg.id), ("model", msg.model), ("stop_reason", msg.stop_reason),
                           ("usage", msg.usage)):
            if value is not None:
                message[key] = value
    entry: dict[str, Any] = {
        "type": msg.role, "uuid": msg.uuid, "parentUuid": parent_uuid, "sessionId": session_id,
        "timestamp": msg.timestamp or now_iso(), "cwd": os.fspath(cwd), "version": __version__,
        "isSidechain": False, **(extra or {}), "message": message}
    if msg.is_meta:
        entry["isMeta"] = True
    if msg.is_api_error:
        entry["isApiErrorMessage"] = True
    if msg.tool_use_result is not None:
        store_result_once(entry, msg)
    if msg.parent_tool_use_id is not None:
        entry["parent_tool_use_id"] = msg.parent_tool_use_id
    return entry



def entry_to_message(entry: dict[str, Any]) -> Message | None:
    """The Message an entry records, or None for non-message (or malformed message) entries."""
    if not isinstance(entry, dict):
        return None
    role = entry.get("type")
    message = entry.get("message")
    if role not in MESSAGE_TYPES or not isinstance(message, dict):
        return None
    content = message.get("content")
    as_text = isinstance(content, str)   # Claude Code stores plain user prompts as a bare string
    content = [{"type": "text", "text": content}] if as_text else content
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        return None
    uuid = entry.get("uuid")
    return Message(
        role=role, content=list(content), uuid=uuid if isinstance(uuid, str) and uuid else new_uuid(),
        id=message.get("id"), model=message.get("model"), stop_reason=message.get("stop_reason"),
        usage=message.get("usage"), is_meta=bool(entry.get("isMeta")),
        is_api_error=bool(entry.get("isApiErrorMessage")), tool_use_result=tool_use_result(entry, content),
        parent_tool_use_id=entry.get("parent_tool_use_id"), timestamp=entry.get("timestamp"), sent_as_text=as_text)


def _tool_uses(entry: dict[str, Any]) -> list[dict[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = content if isinstance(content, list) else []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]


def _json_default(obj: Any) -> Any:
    # Losing a record (above all a tool_use) is worse than storing a lossy form of one field.
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", "replace")
    return str(obj)


def encode_entry(entry: dict[str, Any]) -> bytes:
    """One complete, newline-terminated UTF-8 line."""
    text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (undecodable tool output) are not valid UTF-8; \u escapes are, and load back the same.
        text = json.dumps(entry, ensure_ascii=True, separators=(",", ":"), default=_json_default)
        return (text + "\n").encode("ascii")


class TranscriptWriter:
    """Appends entries to one session file; each record is a single os.write of a whole line.

    Pass `last_uuid` when resuming with the value from `load_transcript`; otherwise the writer
    finds it by reading the file's tail on first use. `tags` go into every record (a subagent's
    sidechain: `isSidechain`, `agentId`).
    """

    def __init__(self, path: Path | str, session_id: str, cwd: Path | str, *,
                 last_uuid: str | None = None, tags: dict[str, Any] | None = None):
        self.path, self.tags = Path(path), dict(tags or {})
        self.session_id = session_id
        self.cwd = os.fspath(cwd)
        self._fd: int | None = None
        self._last_uuid = last_uuid
        self._chain_known = last_uuid is not None
        self._check_tail = True
        self._dirty = False
        # Directories whose new entries (our file, our folders) must be fsync'd to survive a crash.
        self._dirs_to_sync: list[Path] = []
        self._fields: dict[str, Any] | None = None   # writer_fields(), computed on first message
        self.prompt_id: str | None = None            # the prompt the records being written answer
        # Claude Code's metadata records (front ends opt in): written before the next message,
        # and a `last-prompt` record after each prompt.
        self.claude_records = False
        self.pending_records: list[dict[str, Any]] = []
        self.only_reads: Callable[[list[dict[str, Any]]], bool] | None = None   # tool_uses → they change nothing

    @property
    def last_uuid(self) -> str | None:
        if not self._chain_known:
            try:
                self._last_uuid = _scan_last_uuid(self.path)
            except OSError:
                self._last_uuid = None
            self._chain_known = True
        return self._last_uuid

    def append_message(self, msg: Message) -> dict[str, Any]:
        if self._fields is None:
            self._fields = writer_fields(self.cwd)
        prompt = is_prompt(msg)
        if prompt:
            self.prompt_id = msg.uuid
        extra = dict(self._fields)
        if msg.role == "user" and self.prompt_id is not None:
            extra["promptId"] = self.prompt_id
        entry = message_to_entry(msg, session_id=self.session_id, cwd=self.cwd,
                                 parent_uuid=self.last_uuid, extra=extra)
        while self.pending_records:
            self._append(self.pending_records.pop(0))
        self._append(entry)
        if self.claude_records and prompt and msg.text.strip():
            self._append(last_prompt_record(msg, self.session_id))
        return entry

    def append_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Append any entry type; fills in uuid, parentUuid, sessionId and timestamp if absent."""
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise ValueError("a transcript entry must be a dict with a string 'type'")
        out = {"type": entry["type"], **entry}
        if out.get("uuid") is None:
            out["uuid"] = new_uuid()
        if "parentUuid" not in out:
            out["parentUuid"] = self.last_uuid
        if out.get("sessionId") is None:
            out["sessionId"] = self.session_id
        if out.get("timestamp") is None:
            out["timestamp"] = now_iso()
        self._append(out)
        return out

    def sync(self) -> None:
        """fsync everything written so far (turn ends)."""
        if self._fd is None or not self._dirty:
            return
        try:
            self._fsync(self._fd)
        except OSError as e:
            raise TranscriptError(self.path, f"fsync failed: {e}") from e

    def close(self) -> None:
        fd, self._fd = self._fd, None
        self._check_tail = True
        if fd is not None:
            try:
                os.close(fd)
            except OSError as e:
                raise TranscriptError(self.path, f"close failed: {e}") from e

    def _append(self, entry: dict[str, Any]) -> None:
        entry = {**entry, **self.tags} if self.tags else entry
        try:
            data = encode_entry(entry)
        except (TypeError, ValueError, RecursionError) as e:
            raise TranscriptError(self.path, f"entry is not serialisable: {e}") from e
        try:
            fd = self._open()
            _write_all(fd, data)
        except OSError as e:
            # A partial write may have left a torn tail; repair it before the next record.
            self._check_tail = True
            raise TranscriptError(self.path, str(e)) from e
        self._dirty = True
        if isinstance(entry.get("uuid"), str) and entry.get("type") in CHAIN_TYPES:
            self._last_uuid = entry["uuid"]
            self._chain_known = True
        # A tool_use whose record is lost would be re-run silently on resume: durable before the
        # tool starts, unless every call only reads (a re-run read harms nothing; the turn's end syncs).
        if (uses := _tool_uses(entry)) and not self._only_reads(uses):
            try:
                self._fsync(fd)
            except OSError as e:
                raise TranscriptError(self.path, f"fsync failed: {e}") from e

    def _only_reads(self, uses: list[dict[str, Any]]) -> bool:
        try:
            return self.only_reads is not None and bool(self.only_reads(uses))
        except Exception:  # noqa: BLE001 — a failing check means "may change something": fsync
            return False

    def _open(self) -> int:
        if self._fd is None:
            self._make_parent_dirs()
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            try:
                self._fd = os.open(self.path, flags | os.O_EXCL, 0o600)
            except FileExistsError:
                _ = self.last_uuid  # read the chain before we write to the file
                self._fd = os.open(self.path, flags, 0o600)
            else:
                self._chain_known = True
                self._check_tail = False
                self._dirs_to_sync.append(self.path.parent)
        if self._check_tail:
            _repair_torn_tail(self.path, self._fd)
            self._check_tail = False
        return self._fd

    def _make_parent_dirs(self) -> None:
        missing = []
        parent = self.path.parent
        while not parent.exists() and parent != parent.parent:
            missing.append(parent)
            parent = parent.parent
        for d in reversed(missing):
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                continue
            self._dirs_to_sync.append(d.parent)

    def _fsync(self, fd: int) -> None:
        os.fsync(fd)
        self._dirty = False
        while self._dirs_to_sync:
            _fsync_dir(self._dirs_to_sync.pop())


def _fsync_dir(path: Path) -> None:
    # Best effort: some platforms cannot open or fsync a directory.
    try:
        dfd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.fsync(dfd)
    os.close(dfd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(f"write returned {n}")
        view = view[n:]


def _lines_backwards(f: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(offset, line) from the end of a file; first comes whatever follows the last b"\\n"."""
    end = f.seek(0, os.SEEK_END)
    carry = b""
    while end > 0:
        start = max(0, end - _TAIL_BLOCK)
        f.seek(start)
        chunk = f.read(end - start) + carry
        pieces = chunk.split(b"\n")
        # The first piece may continue in the block before this one.
        carry = pieces.pop(0) if start > 0 else b""
        offset = start + len(chunk)
        for piece in reversed(pieces):
            offset -= len(piece)
            yield offset, piece
            offset -= 1
        end = start


def _repair_torn_tail(path: Path, wfd: int) -> None:
    """Make the file end in b"\\n": drop a torn last fragment (or terminate a complete one)."""
    with open(path, "rb") as f:
        offset, tail = next(_lines_backwards(f), (0, b""))
    if not tail:
        return
    # The reader accepts a complete final object without its newline, so keep such a record.
    if parse_line(tail) is not None:
        _write_all(wfd, b"\n")
    else:
        os.ftruncate(wfd, offset)


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One JSONL record as a dict, or None for a torn or corrupt line."""
    try:
        obj = loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _scan_last_uuid(path: Path) -> str | None:
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    with f:
        for _, line in _lines_backwards(f):
            entry = parse_line(line) if line.strip() else None
            if entry is not None and (entry.get("type") == BRANCH_POINT or _chain_tip(entry)):
                return _chain_tip(entry)   # a branch point before the first message: a new root
    return None


def load_transcript(path: Path | str, *, every_branch: bool = False) -> LoadedTranscript:
    """A transcript's entries, its messages (repaired for the API), and load warnings. Where the
    chain branches, the newest leaf's conversation (session.branches); `every_branch`: all entries."""
    path = Path(path)
    data = path.read_bytes()
    # Parsed JSON holds no reference cycles, yet the allocation burst would trigger collections
    # that traverse everything loaded so far; pausing the collector halves resume time.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(path, data, every_branch)
    finally:
        if gc_was_enabled:
            gc.enable()


def _load(path: Path, data: bytes, every_branch: bool) -> LoadedTranscript:
    entries: list[dict[str, Any]] = []
    corrupt = 0
    last_uuid = None
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        entry = parse_line(line)
        if entry is None:
            corrupt += 1
            continue
        entries.append(entry)
        last_uuid = _chain_tip(entry) if entry.get("type") == BRANCH_POINT else (_chain_tip(entry) or last_uuid)
    chain = entries if every_branch else one_chain(entries)
    messages, unreadable = messages_from_entries(chain, entry_to_message)
    corrupt += unreadable
    warnings = [f"skipped {corrupt} corrupt line(s) in {path}"] if corrupt else []
    return LoadedTranscript(messages=messages, entries=chain, warnings=warnings, last_uuid=last_uuid)

