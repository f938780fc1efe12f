"""Opening a stored session to write it: hold it, or fork it when a live process writes it.

Two processes appending to one transcript interleave two conversations, so a session has one
writer at a time (session.hold):

    free     hold it, then load it — nobody appends while it loads
    busy     fork (the default): a new session whose transcript is a copy of the busy one's
             history up to its holder's last finished turn (`settled`; never a turn in flight),
             said in one line; the new id is the session's from then on (system/init, results)
             refuse (`--no-fork-busy`, setting `forkBusySession: false`): one line naming the holder

Used by every way into a stored session: --resume/--continue/--fork-session of every front end
(assembly `load_history`), the REPL's /resume and the library's `from_saved_session`
(`open_stored`). A new session is held from its first record (session.parts.SessionPersistence).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.session.branches import chain_tip
from codeloop.session.hold import Holder, SessionHold, acquire


class SessionBusy(ValueError):
    """The session is being written by another live process and forking was not wanted."""


@dataclass(eq=False)
class Claim:
    """A session this process may write: its id (a fork's when `forked_from`), its hold, and —
    for a fork — the history copied into it."""
    session_id: str
    hold: SessionHold | None
    forked_from: str | None = None
    holder: Holder | None = None
    messages: list[Any] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def notice(self) -> str:
        """The one line a fork is reported with."""
        who = self.holder.describe() if self.holder is not None else "another process"
        return (f"session {self.forked_from} is in use by another codeloop ({who}); "
                f"continuing in a new session {self.session_id} forked from it")


def tip_of(path: Path) -> str | None:
    from codeloop.session.transcript import TranscriptWriter

    return TranscriptWriter(path, "", "").last_uuid   # reads the file's tail, nothing more


def claim(path: Path, session_id: str, cwd: Path, *, refuse: bool, at: str | None = None) -> Claim:
    """Hold `session_id` (transcript `path`), or fork it if a live process holds it; SessionBusy
    when it is held and `refuse`. `at` (--resume-session-at): where a fork's history ends."""
    got = acquire(path, settled=lambda: tip_of(path))
    if isinstance(got, SessionHold):
        return Claim(session_id, got)
    if refuse:
        raise SessionBusy(f"session {session_id} is in use by another codeloop ({got.describe()}); "
                          "not opening it (--no-fork-busy / forkBusySession: false). End that one first, "
                          "or leave out --no-fork-busy to continue in a fork of it")
    return fork_busy(path, session_id, cwd, got, at)


def fork_busy(path: Path, session_id: str, cwd: Path, holder: Holder, at: str | None = None) -> Claim:
    """A new session holding a copy of `session_id`'s history up to `at`, else `holder.settled`."""
    from codeloop.session import store
    from codeloop.session.resume import ResumeError, load_until
    from codeloop.session.transcript import LoadedTranscript, encode_entry

    loaded = LoadedTranscript(messages=[], entries=[])   # nothing settled: its first turn is in flight
    if at is not None:
        loaded, _ = load_until(path, at)   # a ResumeError is the caller's to report
    elif holder.settled is not None:
        try:
            loaded, _ = load_until(path, holder.settled)
        except ResumeError:
            from codeloop.session.transcript import load_transcript
            loaded = load_transcript(path)
    sid = store.new_session_id()
    new_path = store.session_path(cwd, sid)
    tip = next((t for e in reversed(loaded.entries) if (t := chain_tip(e))), None)
    hold = acquire(new_path, settled=lambda: tip)   # a fork of the fork copies what was copied
    if loaded.entries:
        new_path.write_bytes(b"".join(encode_entry({**e, "sessionId": sid} if "sessionId" in e else e)
                                      for e in loaded.entries))
    return Claim(sid, hold if isinstance(hold, SessionHold) else None, forked_from=session_id, holder=holder,
                 messages=loaded.messages, entries=loaded.entries, warnings=list(loaded.warnings))


def open_stored(cwd: Path, session_id: str, *, refuse: bool = False, write: bool = True) -> Claim:
    """/resume in a running session (and the library's): `session_id` held and loaded (after its
    last compaction), or a fork of it while another process writes it. `write=False`: only read
    (no transcript will be written). ValueError when there is no such session."""
    from codeloop.session import store
    from codeloop.session.resume import load_from_last_boundary

    path = store.find_session(session_id, cwd)
    if path is None:
        raise ValueError(f"No conversation found with session ID: {session_id}")
    got = claim(path, session_id, cwd, refuse=refuse) if write else Claim(session_id, None)
    if got.forked_from is None:
        try:
            loaded = load_from_last_boundary(path)
        except BaseException:
            if got.hold is not None:
                got.hold.release()
            raise
        got.messages, got.entries, got.warnings = loaded.messages, loaded.entries, list(loaded.warnings)
    return got
