"""RunOptions: everything a session is built from, resolved and validated once, at the door.

The command line (`cli.startup.options.resolve_options`) and the library (`QueryEngine`) each
produce one of these; `session.assembly` is the only thing that
turns it into a running Conversation. Every field is resolved already — flags over settings
over environment, Claude Code's precedence — so nothing downstream guesses a default or reads
a flag again. Frozen: a changed option (a model switch, a new permission mode) goes through the
session, never through the options it was built from. (Compared by identity, `eq=False`: there
is one per session, and start-up does not pay for generated comparisons.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.config.plugins import Plugin
    from codeloop.config.settings import LoadedSettings
    from codeloop.permissions.policy import PermissionMode
    from codeloop.tools.agents import AgentDefinition


class SetupError(Exception):
    """A problem with the user's flags, environment or session files: one line for the user."""


class NoKeyError(SetupError):
    """No API key for the chosen hosted provider (the message names the keyless way: local_profile)."""


class BrokenSettingsError(SetupError):
    """Settings files that cannot be used: the run stops rather than drop the rules they hold."""

    def __init__(self, problems: list[Any]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(f"broken settings file: {p} (fix it; codeloop will not run without "
                                    "the rules it may hold)" for p in self.problems))


class OutputFormat(str, Enum):
    """`--output-format`: what a headless run writes."""
    TEXT = "text"
    JSON = "json"
    STREAM_JSON = "stream-json"


class InputFormat(str, Enum):
    """`--input-format`: a prompt (text) or a JSONL session (stream-json, the SDKs)."""
    TEXT = "text"
    STREAM_JSON = "stream-json"


class SessionEntry(str, Enum):
    """Which history a session starts from."""
    NEW = "new"              # a fresh session (with --session-id: that id)
    RESUME = "resume"        # --resume ID or NAME
    CONTINUE = "continue"    # --continue: the latest session in this folder


@dataclass(frozen=True, eq=False)
class HistoryOptions:
    """Where the history comes from and where it is written."""
    entry: SessionEntry = SessionEntry.NEW
    resume: str | None = None          # --resume: an id or a session name (-n)
    session_id: str | None = None      # --session-id for a new session (validated)
    fork: bool = False                 # --fork-session
    resume_at: str | None = None       # --resume-session-at (a message uuid)
    resume_drops_turn: str | None = None
    persist: bool = True               # False: --no-session-persistence
    name: str | None = None            # -n/--name: recorded as a custom-title entry
    # A session another live process writes is forked (True) or refused (--no-fork-busy,
    # setting `forkBusySession: false`): session.claim
    fork_busy: bool = True

    @property
    def requested_id(self) -> str:
        """The id a failed start-up reports (what the user asked for, if anything)."""
        return self.resume or self.session_id or ""


@dataclass(frozen=True, eq=False)
class ModelOptions:
    """The model and how it is asked."""
    provider: str = "anthropic"        # providers.select.ProviderKind value
    model: str | None = None           # resolved id; None: the provider's default (local: its default file)
    fallback: tuple[str, ...] = ()     # --fallback-model, resolved ids in order
    thinking: Mapping[str, Any] | None = None  # the request's `thinking` block (+ effort)
    betas: tuple[str, ...] = ()
    api_key_helper: str | None = None  # settings apiKeyHelper (trusted sources only)
    keyless: bool = False              # the embedded model, chosen because no key is set (local_profile)


@dataclass(frozen=True, eq=False)
class PermissionOptions:
    """Rules, mode, directories and the sandbox request."""
    mode: PermissionMode
    allow: tuple[str, ...] = ()        # --allowedTools
    deny: tuple[str, ...] = ()         # --disallowedTools
    add_dirs: tuple[Path, ...] = ()    # --add-dir + settings additionalDirectories, resolved, existing
    sandbox: bool = False              # --sandbox (settings `sandbox` is read from the settings)
    # The interactive session's default: the sandbox on (auto-allow) because bwrap works here and
    # neither --no-sandbox nor `sandbox.enabled: false` turned it off. Print mode never sets it.
    sandbox_default: bool = False
    prompt_tool: str | None = None     # --permission-prompt-tool: "stdio" or an MCP tool name
    auto_rules: Any = None             # permissions.auto_mode.AutoRules from settings `autoMode`
    # Rule problems found in the command line's own rules: shown as warnings at start.
    cli_rules_typed: bool = False


@dataclass(frozen=True, eq=False)
class PromptOptions:
    """The system prompt and the instructions around it."""
    system_prompt: str | None = None   # replaces the default (--system-prompt[-file], --agent, local profile)
    append: str | None = None          # --append-system-prompt[-file]
    claude_md: bool = True             # False: --bare (no CLAUDE.md discovery)


@dataclass(frozen=True, eq=False)
class McpOptions:
    """The MCP servers of the command line (settings and `.mcp.json` are read by the assembly)."""
    configs: tuple[str, ...] = ()      # --mcp-config files or JSON strings
    strict: bool = False               # --strict-mcp-config (--bare too)


@dataclass(frozen=True, eq=False)
class Limits:
    """Where a run stops: turns, dollars, output tokens; the answer's JSON schema."""
    max_turns: int | None = None
    max_budget_usd: float | None = None
    token_budget: int | None = None
    task_budget: int | None = None                 # --task-budget: the API-side budget (output_config.task_budget)
    json_schema: Mapping[str, Any] | None = None   # parsed --json-schema
    max_output_tokens: int | None = None


@dataclass(frozen=True, eq=False)
class OutputOptions:
    """What the headless front ends write (ignored by the REPL)."""
    format: OutputFormat = OutputFormat.TEXT
    input_format: InputFormat = InputFormat.TEXT
    verbose: bool = False
    include_partial_messages: bool = False
    replay_user_messages: bool = False
    include_hook_events: bool = False
    session_mirror: bool = False


class EditorMode(str, Enum):
    """settings `editorMode`: how the REPL's input is edited."""
    NORMAL = "normal"        # emacs-style keys (Claude Code's default)
    VIM = "vim"              # vim's insert and normal modes


@dataclass(frozen=True, eq=False)
class StatusLineOptions:
    """settings `statusLine` (`{"type": "command", "command": …, "padding": N}`), from the user's
    settings or a trusted folder's only (an untrusted project's is dropped with the file's other
    commands): the command's first line of output is shown under the REPL's input."""
    command: str
    padding: int = 0                   # spaces before the line
    refresh_interval_s: float | None = None   # `refreshInterval` (seconds): re-run even without changes
    hide_vim_mode: bool = False        # `hideVimModeIndicator`: the command shows the vim mode itself


@dataclass(frozen=True, eq=False)
class InterfaceOptions:
    """How the interactive front end looks and reads keys (ignored by the headless ones)."""
    status_line: StatusLineOptions | None = None
    editor_mode: EditorMode = EditorMode.NORMAL


@dataclass(frozen=True, eq=False)
class RunOptions:
    """One session's whole configuration. Built only by a resolver; read by the assembly."""
    cwd: Path
    settings: LoadedSettings
    permissions: PermissionOptions
    trusted: bool = False
    interactive: bool = False
    entrypoint: str = "cli"
    prompt: str | None = None                      # the first prompt, as given on the command line
    setting_sources: frozenset[str] | None = None  # None: user, project and local
    local_profile: bool = False                    # the embedded model's profile is applied
    history: HistoryOptions = field(default_factory=HistoryOptions)
    model: ModelOptions = field(default_factory=ModelOptions)
    prompts: PromptOptions = field(default_factory=PromptOptions)
    tools: tuple[str, ...] | None = None           # --tools: the only built-ins offered (None: all)
    mcp: McpOptions = field(default_factory=McpOptions)
    limits: Limits = field(default_factory=Limits)
    output: OutputOptions = field(default_factory=OutputOptions)
    interface: InterfaceOptions = field(default_factory=InterfaceOptions)
    agents: Mapping[str, AgentDefinition] = field(default_factory=dict)  # files, then --agents, then plugins'
    plugins: tuple[Plugin, ...] = ()               # --plugin-dir, then enabled installed plugins
    feature_flags: Mapping[str, Any] = field(default_factory=dict)
    hooks: bool = True                             # False: --bare (no settings hooks)
    setup: str | None = None                       # --init / --maintenance: the Setup hooks' trigger
    warnings: tuple[str, ...] = ()                 # found while resolving; the front end shows them
