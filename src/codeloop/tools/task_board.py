"""The session's task list (Claude Code's TaskCreate/TaskGet/TaskList/TaskUpdate store).

Owns the task record (id, subject, description, activeForm, status, owner, blocks, blockedBy,
metadata), id allocation, the dependency edges kept symmetric, and persistence: the list is
`<session folder>/tasks.json`, read on first use and rewritten after each change, so a resumed
session finds it. One board per session, shared by its subagents (the assembly hands the main
thread's board down), as Claude Code's task list is shared by the agents of a session.

No pydantic here: the session creates a board for every conversation, and loading it costs
nothing until a task tool runs.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FILE_NAME = "tasks.json"


class TaskStatus(str, Enum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


@dataclass
class TaskRecord:
    """One task of the task list, in Claude Code's field names."""
    id: str
    subject: str
    description: str
    activeForm: str | None = None
    status: str = TaskStatus.PENDING.value
    owner: str | None = None
    blocks: list[str] = field(default_factory=list)
    blockedBy: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: Any) -> TaskRecord | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("subject"), str):
            return None
        status, meta = raw.get("status"), raw.get("metadata")
        return cls(id=raw["id"], subject=raw["subject"], description=str(raw.get("description") or ""),
                   activeForm=raw.get("activeForm") if isinstance(raw.get("activeForm"), str) else None,
                   status=status if status in {s.value for s in TaskStatus} else TaskStatus.PENDING.value,
                   owner=raw.get("owner") if isinstance(raw.get("owner"), str) else None,
                   blocks=[b for b in raw.get("blocks") or [] if isinstance(b, str)],
                   blockedBy=[b for b in raw.get("blockedBy") or [] if isinstance(b, str)],
                   metadata=meta if isinstance(meta, dict) else {})


class TaskBoard:
    """The task list of one session; `folder` None keeps it in memory only (no session folder)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._tasks: dict[str, TaskRecord] | None = None   # loaded on first use
        self._next_id = 1

    # -- reading ---------------------------------------------------------------------------------
    def _load(self) -> dict[str, TaskRecord]:
        if self._tasks is not None:
            return self._tasks
        self._tasks = {}
        path = self.path
        if path is not None and path.is_file():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:   # a damaged file starts an empty list, never a crash
                log.warning("task list %s unreadable (%s); starting empty", path, e)
                raw = {}
            for item in raw.get("tasks", []) if isinstance(raw, dict) else []:
                rec = TaskRecord.from_json(item)
                if rec is not None:
                    self._tasks[rec.id] = rec
            nxt = raw.get("nextId") if isinstance(raw, dict) else None
            self._next_id = nxt if isinstance(nxt, int) and nxt > 0 else 1
        numeric = [int(i) for i in self._tasks if i.isdigit()]
        self._next_id = max([self._next_id, *(n + 1 for n in numeric)])
        return self._tasks

    @property
    def path(self) -> Path | None:
        return self.folder / FILE_NAME if self.folder is not None else None

    def all(self) -> list[TaskRecord]:
        """Every task, in id order (numeric ids first, as they were created)."""
        return sorted(self._load().values(),
                      key=lambda t: (not t.id.isdigit(), int(t.id) if t.id.isdigit() else 0, t.id))

    def get(self, task_id: str) -> TaskRecord | None:
        return self._load().get(task_id.strip().lstrip("#"))

    def open_blockers(self, task: TaskRecord) -> list[str]:
        """The ids blocking `task` that are not completed yet (a finished blocker no longer blocks)."""
        tasks = self._load()
        return [b for b in task.blockedBy if b in tasks and tasks[b].status != TaskStatus.COMPLETED.value]

    # -- changing --------------------------------------------------------------------------------
    def create(self, subject: str, description: str, active_form: str | None,
               metadata: dict[str, Any] | None) -> TaskRecord:
        tasks = self._load()
        rec = TaskRecord(id=str(self._next_id), subject=subject, description=description,
                         activeForm=active_form, metadata=dict(metadata or {}))
        self._next_id += 1
        tasks[rec.id] = rec
        self.save()
        return rec

    def delete(self, task_id: str) -> bool:
        tasks = self._load()
        if tasks.pop(task_id, None) is None:
            return False
        for other in tasks.values():   # no edge may point at a task that is gone
            other.blocks = [b for b in other.blocks if b != task_id]
            other.blockedBy = [b for b in other.blockedBy if b != task_id]
        self.save()
        return True

    def link(self, blocker: str, blocked: str) -> None:
        """`blocker` must finish before `blocked` starts; both sides record the edge."""
        tasks = self._load()
        if blocker not in tasks or blocked not in tasks or blocker == blocked:
            return
        if blocked not in tasks[blocker].blocks:
            tasks[blocker].blocks.append(blocked)
        if blocker not in tasks[blocked].blockedBy:
            tasks[blocked].blockedBy.append(blocker)

    def save(self) -> None:
        path = self.path
        if path is None or self._tasks is None:
            return
        from codeloop.fsutil import atomic_write

        body = {"nextId": self._next_id, "tasks": [asdict(t) for t in self.all()]}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(body, indent=2, ensure_ascii=False).encode(), mode=0o600)

    def snapshot(self) -> list[dict[str, Any]]:
        """The list as front ends show it (stream-json's tool_use_result, the REPL's checklist)."""
        return [{"id": t.id, "subject": t.subject, "status": t.status, "activeForm": t.activeForm,
                 "owner": t.owner, "blockedBy": self.open_blockers(t)} for t in self.all()]


def board(ctx: Any) -> TaskBoard:
    """The session's board on `ctx` (a ToolContext), made on first use when the session gave none."""
    if ctx.task_board is None:
        ctx.task_board = TaskBoard(ctx.session_dir)
    board_: TaskBoard = ctx.task_board
    return board_
