"""File checkpoints (spec 004 §4 file-history snapshot): what each file held before the model first
changed it after each prompt, so `/rewind` can put the files back as they were at that prompt.

The Write/Edit/NotebookEdit tools call `ToolContext.before_write(path, old_bytes)` (a capability;
the tools never import this module) right before replacing a file. The first write to a path
after a prompt copies the old content to `<config>/file-history/<session>/<hash>@v<n>` (or notes
that the file did not exist). Each prompt and each new backup is recorded in the transcript as
Claude Code records it: `{"type": "file-history-snapshot", "messageId", "snapshot":
{"messageId", "trackedFileBackups": {path: {"backupFileName", "version", "backupTime"}},
"timestamp"}, "isSnapshotUpdate"}` (backupFileName null: the file did not exist).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _now() -> str:
    from datetime import UTC, datetime   # when a backup is taken, not at every start

    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Backup:
    """A file's backup taken before its first write after a prompt."""
    prompt: int                 # index into FileHistory.prompts: the first write after that prompt
    path: str
    backup_file: str | None     # None: the file did not exist before
    version: int
    time: str


class FileHistory:
    def __init__(self, backup_dir: Path, append_entry: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.dir = backup_dir
        self.append_entry = append_entry
        self.prompts: list[str] = []          # message uuids of the user's prompts, in order
        self.backups: list[Backup] = []
        self._versions: dict[str, int] = {}
        self._lock = threading.Lock()         # tools write from worker threads

    # -- recording ----------------------------------------------------------------------------------
    def begin_prompt(self, message_id: str) -> None:
        self.prompts.append(message_id)
        if self.backups:  # nothing tracked yet: no record (a session without edits stays as it was)
            self._record(message_id, self._tracked(), update=False)

    def before_write(self, path: Path, old: bytes | None) -> None:
        """Called by a file tool just before it replaces `path` (`old`: its bytes, None if absent)."""
        key = str(path)
        with self._lock:
            prompt = max(len(self.prompts) - 1, 0)
            if any(b.prompt == prompt and b.path == key for b in self.backups):
                return  # the state before this prompt's first write is what a rewind needs
            version = self._versions.get(key, 0) + 1
            self._versions[key] = version
            name = None
            if old is not None:
                import hashlib   # on a file tool's first write, not at every session's start

                name = f"{hashlib.sha256(key.encode()).hexdigest()[:16]}@v{version}"
                self.dir.mkdir(parents=True, exist_ok=True)
                (self.dir / name).write_bytes(old)
            self.backups.append(Backup(prompt, key, name, version, _now()))
        if self.prompts:
            self._record(self.prompts[prompt], self._tracked(), update=True)

    def _tracked(self) -> dict[str, dict[str, Any]]:
        latest: dict[str, Backup] = {}
        for b in self.backups:
            latest[b.path] = b
        return {p: {"backupFileName": b.backup_file, "version": b.version, "backupTime": b.time}
                for p, b in latest.items()}

    def _record(self, message_id: str, tracked: dict[str, Any], *, update: bool) -> None:
        if self.append_entry is None:
            return
        try:
            self.append_entry({"type": "file-history-snapshot", "messageId": message_id,
                               "snapshot": {"messageId": message_id, "trackedFileBackups": tracked,
                                            "timestamp": _now()},
                               "isSnapshotUpdate": update})
        except Exception:  # noqa: BLE001 — a transcript problem must not fail the edit
            pass

    # -- rewinding ----------------------------------------------------------------------------------
    def prompt_index(self, message_id: str) -> int | None:
        return self.prompts.index(message_id) if message_id in self.prompts else None

    def changed_since(self, prompt: int) -> list[str]:
        """The files the model changed at or after that prompt."""
        return list(dict.fromkeys(b.path for b in self.backups if b.prompt >= prompt))

    def rewind(self, prompt: int) -> list[str]:
        """Put every file changed at or after `prompt` back as it was just before that prompt;
        the paths restored. Later checkpoints are dropped (they describe a future that is gone)."""
        first: dict[str, Backup] = {}
        for b in self.backups:
            if b.prompt >= prompt and b.path not in first:
                first[b.path] = b
        restored = []
        for path, b in first.items():
            target = Path(path)
            if b.backup_file is None:
                if target.exists() or target.is_symlink():
                    target.unlink()
            else:
                data = (self.dir / b.backup_file).read_bytes()
                tmp = target.with_name(f".{target.name}.{os.getpid()}.rewind")
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_bytes(data)
                os.replace(tmp, target)
            restored.append(path)
        with self._lock:
            self.backups = [b for b in self.backups if b.prompt < prompt]
            self.prompts = self.prompts[:prompt]
        return restored
