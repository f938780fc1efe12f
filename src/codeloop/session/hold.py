"""Who is writing a session: a lock file beside its transcript (`<id>.lock`), held with flock.

A live writer holds its session for as long as its Conversation is open. The kernel drops a
flock when the process ends, however it ends (SIGKILL included), so a lock file left behind
never blocks anyone and no pid is guessed at. The file's content is for people and for forks:
the holder's pid, entrypoint and start, and `settled` — the chain tip after its last finished
turn, so a fork copies the history up to there and never a turn still in flight.

    acquire   open (create) the file, flock LOCK_EX|LOCK_NB, check the path still names the
              locked file (a releasing holder unlinks it), write the content
    busy      LOCK_SH|LOCK_NB fails too: another process holds it — its content names it.
              (LOCK_SH succeeds only when what blocked us was a lister's probe: try again.)
    probe     `holder()`: LOCK_SH|LOCK_NB on an existing file; it never creates one
    release   unlink, then close

Where fcntl does not exist (Windows) there are no holds: sessions are written as before.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ATTEMPTS = 200
_CONTENT_WAIT_S = 1.0   # a holder writes its content right after it locks; wait that long for it


@dataclass(frozen=True)
class Holder:
    """The live process writing a session, as its lock file says."""
    pid: int | None = None
    entrypoint: str = ""
    since: str | None = None
    settled: str | None = None

    def describe(self) -> str:
        """`pid 4242, cli, since 2026-12-04T10:05:00`: who to look for."""
        who = f"pid {self.pid}" if self.pid is not None else "pid unknown"
        return ", ".join(x for x in (who, self.entrypoint, f"since {self.since}" if self.since else "") if x)


def lock_path(transcript: Path) -> Path:
    return transcript.with_suffix(".lock")


class SessionHold:
    """This process's hold on one session. `settle(tip)` at turn ends; `release()` when done."""

    def __init__(self, path: Path, fd: int | None, info: dict[str, Any]) -> None:
        self.path, self._fd, self._info = path, fd, info

    @property
    def held(self) -> bool:
        return self._fd is not None

    def settle(self, tip: str | None) -> None:
        if self._fd is None or tip == self._info.get("settled"):
            return
        self._info["settled"] = tip
        try:
            _write(self._fd, self._info)
        except OSError:
            pass   # the content is a courtesy; the lock itself is what counts

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _same_file(fd, self.path):
                os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)


def acquire(transcript: Path, settled: Callable[[], str | None] | None = None) -> SessionHold | Holder:
    """Hold the session whose transcript is `transcript`, or the Holder that has it. `settled`:
    reads the transcript's tip once it is held (what a fork may copy until this process finishes
    a turn)."""
    try:
        import fcntl
    except ImportError:
        return SessionHold(lock_path(transcript), None, {})   # no locks on this platform
    path = lock_path(transcript)
    for _ in range(_ATTEMPTS):
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError:   # a store nobody can write to: no transcript either, which says so itself
            return SessionHold(path, None, {})
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _wait_for_content(fd)
                os.close(fd)
                return holder
            os.close(fd)   # only a probe had it, for an instant: go again
            time.sleep(0.001)
            continue
        if not _same_file(fd, path):   # its holder unlinked it as we opened it
            os.close(fd)
            continue
        info = {"pid": os.getpid(), "entrypoint": _entrypoint(), "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "settled": settled() if settled is not None else None}
        _write(fd, info)
        return SessionHold(path, fd, info)
    return Holder()


def holder(transcript: Path) -> Holder | None:
    """The live process holding this session, or None (nobody, or no locks on this platform)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = os.open(lock_path(transcript), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _wait_for_content(fd)
    finally:
        os.close(fd)
    return None


def _entrypoint() -> str:
    return (os.environ.get("CODELOOP_ENTRYPOINT") or os.environ.get("CLAUDE_CODE_ENTRYPOINT") or "cli").strip()


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _write(fd: int, info: dict[str, Any]) -> None:
    data = (json.dumps(info) + "\n").encode()
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))


def _read(fd: int) -> Holder | None:
    try:
        raw = os.pread(fd, 4096, 0).decode("utf-8", "replace")
        data, _ = json.JSONDecoder().raw_decode(raw)   # a rewrite in progress may leave a tail
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid, settled = data.get("pid"), data.get("settled")
    return Holder(pid if isinstance(pid, int) else None, str(data.get("entrypoint") or ""),
                  str(data["since"]) if data.get("since") else None, settled if isinstance(settled, str) else None)


def _wait_for_content(fd: int) -> Holder:
    """The holder's content; it may have locked the file an instant ago and not written it yet."""
    deadline = time.monotonic() + _CONTENT_WAIT_S
    while (found := _read(fd)) is None and time.monotonic() < deadline:
        time.sleep(0.005)
    return found or Holder()
