"""The Tool protocol, the context tools run in, and their results.

A tool declares its name, prompt, pydantic input model (which gives the JSON schema), its
read-only / concurrency-safe nature, and `async call(input, ctx)`. Raising `ToolError` gives the
model an `is_error` tool_result; anything else escaping `call` is a bug in the tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

    from codeloop.config.plugins import Plugin
    from codeloop.hooks.lifecycle import LifecycleHooks
    from codeloop.permissions.project_files import ProjectFiles
    from codeloop.providers.base import Provider
    from codeloop.tools.builtin.bash_background import BackgroundTasks
    from codeloop.tools.capabilities import SessionPolicy, SessionSandbox
    from codeloop.tools.scheduler import PromptScheduler
    from codeloop.tools.skills import Skill
    from codeloop.tools.task_board import TaskBoard
    from codeloop.tools.worktree_state import WorktreeSession

import math
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar


from codeloop.abort import AbortController
from codeloop.tools.made_on_use import MadeOnUse
# Re-exported (`as`): tools, the policy and front ends import it from here.
from codeloop.config.permission_behavior import PermissionBehavior as PermissionBehavior


# The tool_use id of the tool running in this task: the tool runner sets it around each call
# (a contextvar, because tools run in parallel tasks); the Task tool tags its subagent with it.
CURRENT_TOOL_USE_ID: ContextVar[str | None] = ContextVar("CURRENT_TOOL_USE_ID", default=None)


class ToolError(Exception):
    """A failure the model should see and can react to (bad path, no match, non-zero exit…)."""


@dataclass
class ToolResult:
    """What a tool returns: content for the model and data for front ends."""
    # What the model sees: a string or a list of content blocks (text, image).
    content: str | list[dict[str, Any]]
    is_error: bool = False
    # Structured result for front ends (stream-json `tool_use_result`, REPL diff cells).
    data: Any = None


@dataclass(frozen=True)
class StructuredAnswer:
    """A schema-valid answer given through the StructuredOutput tool (any JSON value, None too)."""
    value: Any


@dataclass
class FileReadRecord:
    """What a Read saw, so Edit/Write can refuse to clobber a file changed since."""
    mtime_ns: int
    size: int
    sha256: str | None  # None when only part of the file was read
    partial: bool = False


@dataclass(eq=False)   # one per session or subagent, compared by identity
class ToolContext:
    """What a tool call can use: directories, abort signal and session state."""
    cwd: Path                                   # Bash's persistent working directory
    project_dir: Path                           # where the session started
    abort: AbortController = field(default_factory=AbortController)
    read_files: dict[str, FileReadRecord] = field(default_factory=dict)
    todos: list[dict[str, Any]] = field(default_factory=list)
    session_dir: Path | None = None             # per-session folder for large outputs, todos…
    agent_id: str | None = None                 # set for subagents/forks
    non_interactive: bool = True
    session_id: str | None = None
    model: str = ""                             # the model answering now (the fallback after a fallback)
    main_model: str = ""                        # the session's configured model ("" → `model`); gates judge it
    entrypoint: str = "cli"                     # cli | sdk-py | sdk-ts | … (gates EndConversation)
    # The conversation so far (read-only view) — EndConversation scans it for its first call.
    messages: Callable[[], list[Any]] | None = None
    # Side-channel for events produced inside a tool (a subagent's messages) → the front end.
    emit: Callable[[Any], None] | None = None
    # Best-effort append of a transcript entry (e.g. the ended-by-model marker); may raise.
    append_entry: Callable[[dict[str, Any]], None] | None = None
    ended_by_model: bool = False
    # PostToolUse hooks: (tool_name, input, response, tool_use_id) → PostToolFeedback | None
    post_tool_use: Callable[..., Any] | None = None
    # The other hook events a tool fires: TaskCreated/TaskCompleted (TaskCreate, TaskUpdate),
    # WorktreeCreate/WorktreeRemove (EnterWorktree, ExitWorktree), CwdChanged. None: no session.
    lifecycle_hooks: LifecycleHooks | None = None
    # Re-checks deny rules right before file I/O: (tool_name, path) → None, or raises ToolError.
    path_guard: Callable[[str, Path], None] | None = None
    # Deny rules for reading, for tools that search many files (Grep, Glob): path → denied?
    # None when no rule could deny a read, so searches pay nothing.
    read_denied: Callable[[Path], bool] | None = None
    # Hard links: tool name → (st_dev, st_ino) of the files its deny rules name (None: too many
    # to list, refuse multi-link files). Asked only when a file opened has st_nlink > 1.
    denied_inodes: Callable[[str], frozenset[tuple[int, int]] | None] | None = None
    # Runs a subagent for the Task tool: (subagent_type, prompt, parent ctx, *, parent_tool_use_id)
    # → tools.builtin.task.SubagentOutcome; raises ToolError for an unknown type. Provided by the
    # session (session.subagent), so tools never import the loop. None: no subagents here.
    spawn_subagent: Callable[..., Awaitable[Any]] | None = None
    # tool_use_id → the recent output of a tool still running (Bash registers it while its
    # command runs): a front end may poll it to show progress. Never read by the model.
    live_output: dict[str, Callable[[], str]] = field(default_factory=dict)
    # Foreground Bash commands running now: tool_use id → what moves it to the background. Ctrl+B
    # moves them all (the background registry's `background_foreground`); shared with subagents,
    # whose commands move too. A plain dict, so a command registers without the registry's import.
    foreground: dict[str, Callable[[], None]] = field(default_factory=dict)
    # File checkpoints: (path, bytes before | None if absent), called right before a file tool
    # replaces a file (session.checkpoints records it for /rewind). None: no checkpoints.
    before_write: Callable[[Path, bytes | None], None] | None = None
    # -- the session's capabilities, set by the assembly (session.assembly) --------------------
    # The whole pool, deferred tools included: ToolSearch searches it, session notes list it.
    tool_pool: list[Tool] = field(default_factory=list)
    # Deferred tools whose full schema ToolSearch loaded (per context: a subagent loads its own).
    loaded_deferred: set[str] = field(default_factory=set)
    # Settings `featureFlags` (config.flags names), as the gates read them.
    feature_flags: Mapping[str, Any] = field(default_factory=dict)
    # The session's permission policy: ExitPlanMode switches its mode; Skill and plan notes read it.
    policy: SessionPolicy | None = None
    # The OS sandbox Bash commands run in (None: unsandboxed, or no sandbox configured).
    sandbox: SessionSandbox | None = None
    # Side model calls (WebFetch's summary, WebSearch), metered into the session's totals.
    side_provider: Provider | None = None
    # Background shells and agents of the session (made on first use; stopped with it).
    background: MadeOnUse[BackgroundTasks] = MadeOnUse()
    agent_type: str = ""                        # the subagent's type ("" on the main thread)
    # Secret-looking variables the user lets the model's commands see (settings `env` and
    # `passEnv`; names or `PREFIX*`): tools.builtin.shell_env leaves every other one out.
    env_pass: tuple[str, ...] = ()
    project_trusted: bool = False               # the folder is trusted: its own skills may load
    images_supported: bool = True               # the model takes images (Read of PDF pages)
    skills: list[Skill] | None = None           # discovered on first use (tools.skills)
    plugins: tuple[Plugin, ...] = ()            # the session's plugins (config.plugins): their skills join
    # The session's reader of the project's prompt files (skills): no link out of the project is
    # followed, and what it skipped waits there for the user. None: a reader of project_dir.
    project_files: ProjectFiles | None = None
    # Set by a tool that answers the turn (StructuredOutput): no further request once its
    # results are in (Claude Code's `endsTurn`); the loop clears it.
    ends_turn: bool = False
    # The answer a StructuredOutput call gave (validated); the structured-output driver takes it.
    structured_output: StructuredAnswer | None = None
    # The session's task list (TaskCreate…TaskUpdate), shared with its subagents.
    task_board: MadeOnUse[TaskBoard] = MadeOnUse()   # made on first use
    # Prompts scheduled inside the running session (CronCreate, ScheduleWakeup); None: none can be.
    scheduler: MadeOnUse[PromptScheduler] = MadeOnUse()   # made on first use
    # The worktree EnterWorktree moved this context into (ExitWorktree goes back); None: not in one.
    worktree: WorktreeSession | None = None

    @property
    def gate_model(self) -> str:
        """The model a tool's availability is judged on: the configured one, not a fallback."""
        return self.main_model or self.model

    def resolve(self, path: str) -> Path:
        """Absolute path for a tool argument; relative paths are taken from the current cwd."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.cwd / p)


@dataclass
class PermissionDecision:
    """Whether a tool call may run, with a message and any changed input."""
    behavior: PermissionBehavior
    message: str = ""
    updated_input: dict[str, Any] | None = None
    # An ASK only a person may answer (an ask rule, a tool whose point is the user): auto mode's
    # classifier leaves it to the user.
    human: bool = False


class Tool:
    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    # Larger results are cut/persisted by the context pipeline; math.inf exempts a tool.
    max_result_chars: ClassVar[float] = 100_000
    should_defer: ClassVar[bool] = False
    # Cancelled at once when the user types while it runs (input dispatch's interrupt): only for
    # tools whose cancellation loses nothing. Others finish, and the new prompt waits for them.
    interruptible: ClassVar[bool] = False

    # `inp` is an instance of this tool's own `input_model`: Any, because each tool narrows it to
    # its model and a BaseModel parameter would forbid that (an override may not narrow).
    def is_read_only(self, inp: Any) -> bool:
        return False

    def is_concurrency_safe(self, inp: Any) -> bool:
        return self.is_read_only(inp)

    def is_enabled(self, ctx: ToolContext) -> bool:
        return True

    def input_schema(self) -> dict[str, Any]:
        cached = _SCHEMAS.get(self.input_model)
        if cached is None:
            cached = _SCHEMAS[self.input_model] = self._build_schema()
        return cached

    def _build_schema(self) -> dict[str, Any]:
        # Generating a JSON schema costs milliseconds; it is asked for on every request.
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("additionalProperties", False)
        return schema

    def api_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema()}

    async def check_permissions(self, inp: Any, ctx: ToolContext) -> PermissionDecision:
        """Tool-specific permission opinion; the policy layer combines it with rules and mode."""
        behavior = PermissionBehavior.ALLOW if self.is_read_only(inp) else PermissionBehavior.ASK
        return PermissionDecision(behavior)

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError


class LazyModel:
    """An `input_model` class attribute kept in another module and imported on first use, so
    importing the tool itself needs no pydantic (see `tools.plain_input`)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self._model: Any = None

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if self._model is None:
            import importlib

            from codeloop.tools.lazy import skip_pydantic_plugin_scan

            skip_pydantic_plugin_scan()
            self._model = getattr(importlib.import_module(self.module), self.name)
        return self._model


UNBOUNDED = math.inf
_SCHEMAS: dict[type[BaseModel], dict[str, Any]] = {}
