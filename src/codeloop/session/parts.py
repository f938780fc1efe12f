"""What a Conversation is given besides its config: the parts the assembly decided.

`SessionParts` is handed to the Conversation whole, so nothing is patched onto a session after
it is built (settings, trust, MCP servers, output style, the key's source, front-end listeners,
transcript records). `Sidechain` makes a Conversation a subagent's: its place in the parent
session, and what it shares with it (hooks, background tasks, file checkpoints, the usage
totals). `SessionPersistence` owns writing the transcript, which must never end a session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.abort import AbortController
    from codeloop.events import Event, SystemEvent
    from codeloop.loop.queue import CommandQueue
    from codeloop.messages import Message
    from codeloop.session.hooks_bridge import ConversationHooks
    from codeloop.session.options import RunOptions
    from codeloop.tools.base import ToolContext


@dataclass(eq=False)
class SessionHost:
    """What a front end lends the session it opens (session.assembly.open_session)."""
    ask_user: Callable[..., Awaitable[Any]] | None = None   # answers permission prompts (None: denied)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)   # side events (subagents, tasks)
    progress: Callable[[int, int], None] | None = None   # the embedded model's one-time assembly (done, total)
    notice: Callable[[str], None] | None = None          # one-line start-up notices


@dataclass(eq=False)
class Sidechain:
    """A subagent's place in its parent session: who it is, and what it shares with the parent."""
    agent_id: str
    agent_type: str
    parent: ToolContext                       # the parent's context: background tasks, checkpoints, emit
    parent_tool_use_id: str | None
    abort: AbortController                    # the parent's (foreground) or its own (background)
    hooks: ConversationHooks                  # the parent session's hooks (PreToolUse, PostToolUse…)
    record_usage: Callable[[Event], None]     # the parent's side-event sink: its totals include ours
    stop_hooks: Any = None                    # SubagentStop hooks (loop.recovery.StopHooks) or None
    file_history: Any = None                  # the parent's checkpoints: its edits rewind with the parent's prompt
    # The definition's tools (None: all) and disallowed tools: MCP tools are filtered like built-ins.
    allowed_tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()


@dataclass(eq=False)
class SessionParts:
    """What the assembly decided for a Conversation beyond its config."""
    settings: Any = None                      # config.settings.LoadedSettings (None: library, no files)
    trusted: bool = False                     # the folder's own configuration counts
    mcp: Any = None                           # mcp.client.McpManager: its tools join the pool
    owns_mcp: bool = True                     # closes the servers when the session ends
    output_style: str = "default"             # the outputStyle in use (system/init)
    api_key_source: str = "none"              # system/init's apiKeySource
    listeners: list[Callable[[Event], None]] = field(default_factory=list)  # front ends' side events
    claude_records: bool = False              # Claude Code's metadata records in the transcript
    records: list[dict[str, Any]] = field(default_factory=list)   # written before the first message
    memory_file_names: tuple[str, ...] | None = None   # nested memory's file names (--setting-sources)
    options: RunOptions | None = None         # what the session was built from (successors, subagents)
    queue: CommandQueue | None = None         # a successor keeps the input typed ahead
    file_history: Any = None                  # checkpoints a successor carries over (/rewind)
    # background shells and agents a successor carries over (/rewind: the same session goes on, and
    # so do its running tasks; /clear and /resume end them with the session they belonged to)
    background: Any = None
    sidechain: Sidechain | None = None        # set for a subagent's conversation
    # Runs a subagent for the Agent tool: (conversation, type, prompt, ctx, **kw) → SubagentOutcome
    # (session.subagent.spawn_for, given by the assembly). None: no subagents in this session.
    spawn: Callable[..., Awaitable[Any]] | None = None
    # The reader of the project's prompt files (permissions.project_files.ProjectFiles), shared by
    # CLAUDE.md, nested memory and skills; the main thread shows what it skipped. None: each makes its own.
    project_files: Any = None
    # session.hold.SessionHold: this process is the session's one writer (session.claim). None: the
    # main thread takes it when it first writes (a new session), a subagent never (its own file).
    hold: Any = None


class SessionPersistence:
    """The transcript writer of a Conversation. A transcript that cannot be written (disk full,
    read-only) must not end the session: the failure is said once, loudly, and the session goes
    on without one."""

    def __init__(self, writer: Any, notify: Callable[[SystemEvent], None], hold: Any = None, *,
                 take_hold: bool = False) -> None:
        self.writer = writer
        self.notify = notify
        self.hold = hold   # session.hold.SessionHold, released on close
        self._take_hold = take_hold and hold is None and writer is not None

    def message(self, msg: Message) -> None:
        self._persist(lambda w: w.append_message(msg))

    def entry(self, entry: dict[str, Any]) -> None:
        self._persist(lambda w: w.append_entry(entry))

    append_entry = entry   # the writer's name for it (session.resume.branch_from)

    def sync(self) -> None:
        """fsync the transcript (turn ends); a fork of the session may copy up to here now."""
        self._persist(lambda w: w.sync())
        if self.hold is not None and self.writer is not None:
            self.hold.settle(self.writer.last_uuid)

    def close(self) -> None:
        try:
            self.sync()
            if self.writer is not None:
                self.writer.close()
        finally:
            if self.hold is not None:
                self.hold.release()

    def _persist(self, write: Callable[[Any], Any]) -> None:
        if self.writer is None:
            return
        if self._take_hold:
            self._take()
        from codeloop.events import SystemEvent
        from codeloop.session.transcript import TranscriptError

        try:
            write(self.writer)
        except TranscriptError as exc:
            self.writer = None
            self.notify(SystemEvent(
                "transcript_error", f"{exc}. Continuing WITHOUT a transcript: this session cannot be resumed.",
                "error"))

    def _take(self) -> None:
        """A session started here is held from its first record on; if another process already
        holds it (two given the same --session-id, the library resuming a live one) it is said."""
        from codeloop.events import SystemEvent
        from codeloop.session.hold import SessionHold, acquire

        self._take_hold = False
        writer = self.writer
        got = acquire(writer.path, settled=lambda: writer.last_uuid)
        if isinstance(got, SessionHold):
            self.hold = got
        else:
            self.notify(SystemEvent("session_busy", f"session {writer.session_id} is also being written by "
                                    f"another codeloop ({got.describe()}): its records may interleave", "warning"))
