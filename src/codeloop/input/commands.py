"""Slash commands: the built-ins (/help, /clear, /compact, /resume, /model, /cost, …) and the
custom markdown commands of `custom_commands.py`, behind one registry.

A command is either LOCAL (runs in the harness and shows its output; never calls the model) or
PROMPT (expands into a prompt the model answers: /init and every custom command). Commands
marked `immediate` (/help, /status, /cost) may run while a query is active (spec 004 §2.1).
LOCAL commands act on the session through a `CommandHost` — the REPL implements it, tests fake it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from codeloop.input.custom_commands import CommandSource, CustomCommand, expand_arguments, load_custom_commands
from codeloop.input.init_survey import INIT_PROMPT

if TYPE_CHECKING:
    from codeloop.events import Event
    from codeloop.session.conversation import Conversation


class CommandType(str, Enum):
    LOCAL = "local"
    PROMPT = "prompt"


class CommandHost(Protocol):
    """What a LOCAL command may do to the interactive session."""
    conv: Conversation

    def show(self, text: str, *, style: str = "") -> None: ...
    async def render_events(self, events: AsyncIterator[Event]) -> None: ...
    async def choose(self, title: str, options: list[tuple[str, str]]) -> str | None: ...
    async def switch_conversation(self, conv: Conversation, *, reason: str) -> None: ...
    def request_exit(self) -> None: ...


@dataclass
class CommandOutcome:
    """What running a command produced: text to show and/or a prompt for the model."""
    text: str | None = None
    prompt: str | None = None                 # PROMPT commands: what is sent to the model
    allowed_tools: tuple[str, ...] = ()       # extra allow rules for that query only
    model: str | None = None                  # model override for that query only

    @property
    def should_query(self) -> bool:
        return self.prompt is not None


Handler = Callable[[CommandHost, str], Awaitable[CommandOutcome]]


@dataclass(frozen=True)
class Command:
    """A slash command: its name, kind, handler or prompt, and where it came from."""
    name: str
    description: str
    type: CommandType
    handler: Handler | None = None            # LOCAL
    prompt: str | None = None                 # PROMPT: template with $ARGUMENTS
    immediate: bool = False
    aliases: tuple[str, ...] = ()
    argument_hint: str | None = None
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    source: CommandSource = CommandSource.BUILTIN

    async def run(self, host: CommandHost, args: str) -> CommandOutcome:
        if self.handler is not None:  # LOCAL, or a PROMPT command that builds its prompt (/init)
            return await self.handler(host, args)
        return CommandOutcome(prompt=expand_arguments(self.prompt or "", args),
                              allowed_tools=self.allowed_tools, model=self.model)


def slash_commands_enabled() -> bool:
    import os

    return not os.environ.get("CODELOOP_DISABLE_SLASH_COMMANDS")


def parse_slash(text: str) -> tuple[str, str] | None:
    """`/name args…` → (name, args); None when the text is not a slash command (or when
    `--disable-slash-commands` turned them off for this process)."""
    if not slash_commands_enabled():
        return None
    text = text.strip()
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        return None
    name, _, args = text[1:].partition(" ")
    if "/" in name:  # "/usr/bin/ls" is a path, not a command
        return None
    return name, args.strip()


@dataclass
class CommandRegistry:
    """The slash commands by name, with warnings about shadowed ones."""
    commands: dict[str, Command] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, cmd: Command) -> None:
        if cmd.name in self.commands:  # built-ins come first and win
            self.warnings.append(f"/{cmd.name} from {cmd.source.value} is shadowed by an earlier definition")
            return
        self.commands[cmd.name] = cmd

    def find(self, name: str) -> Command | None:
        if name in self.commands:
            return self.commands[name]
        return next((c for c in self.commands.values() if name in c.aliases), None)

    def all(self) -> list[Command]:
        return sorted(self.commands.values(), key=lambda c: c.name)

    @classmethod
    def load(cls, cwd: Path, config_dir: Path, *, home: Path | None = None,
             plugins: Sequence[Any] = ()) -> CommandRegistry:
        from codeloop.input.commands_more import more_builtins

        reg = cls()
        more = [Command(**{**spec, "type": CommandType(spec["type"])}) for spec in more_builtins()]
        for cmd in (*BUILTINS, *(c for c in more if c.type is CommandType.LOCAL)):
            reg.add(cmd)
        custom, warnings = load_custom_commands(cwd, config_dir, home=home, plugins=plugins)
        reg.warnings += warnings
        for c in custom.values():
            reg.add(from_custom(c))
        for cmd in more:   # a project's own /review (a custom command) beats the built-in prompt
            reg.commands.setdefault(cmd.name, cmd)
        return reg


def from_custom(c: CustomCommand) -> Command:
    # a plugin's /<plugin>:name answers to /name too while no other command has that name
    aliases = (c.name.partition(":")[2],) if c.source is CommandSource.PLUGIN else ()
    return Command(name=c.name, description=c.description, type=CommandType.PROMPT, prompt=c.prompt,
                   argument_hint=c.argument_hint, allowed_tools=c.allowed_tools, model=c.model, source=c.source,
                   aliases=aliases)


# -- conversation switching (/clear, /resume, /continue) ------------------------------------------

def conversation_like(conv: Conversation, *, session_id: str | None = None, messages: list | None = None,
                      denials: list | None = None, entries: list | None = None,
                      keep_checkpoints: bool = False, rewind_at: int | None = None, hold: Any = None) -> Conversation:
    """The session that follows `conv` (session.assembly.successor); a fresh session by default."""
    from codeloop.session.assembly import successor

    return successor(conv, session_id=session_id, messages=messages, denials=denials, entries=entries,
                     keep_checkpoints=keep_checkpoints, rewind_at=rewind_at, hold=hold)


def load_session(conv: Conversation, session_id: str) -> Conversation:
    """`session_id` held by this process — or, while another process writes it, a fork of it
    (session.claim; refused instead with --no-fork-busy)."""
    from codeloop.session.claim import open_stored

    options = conv.parts.options
    got = open_stored(conv.config.cwd, session_id, refuse=options is not None and not options.history.fork_busy,
                      write=conv.config.persist)
    denials = [{k: e.get(k) for k in ("tool_name", "tool_use_id", "tool_input")}
               for e in got.entries if e.get("type") == "permission-denial"]
    return conversation_like(conv, session_id=got.session_id, messages=got.messages, denials=denials,
                             entries=got.entries, hold=got.hold)


# -- the built-ins --------------------------------------------------------------------------------

async def _help(host: CommandHost, args: str) -> CommandOutcome:
    reg: CommandRegistry | None = getattr(host, "registry", None)
    cmds = reg.all() if reg else list(BUILTINS)
    lines = ["Commands:"]
    for c in cmds:
        hint = f" {c.argument_hint}" if c.argument_hint else ""
        tag = "" if c.source is CommandSource.BUILTIN else f" ({c.source.value})"
        lines.append(f"  /{c.name}{hint} — {c.description}{tag}")
    lines += ["", "Keys: Enter send · Alt+Enter or \\ newline · Esc interrupt · Shift+Tab permission mode · "
              "Ctrl+O transcript · Ctrl+B background a running command · Ctrl+C twice / Ctrl+D exit",
              "!cmd runs a shell command into the context; @path attaches a file."]
    return CommandOutcome("\n".join(lines))


async def _clear(host: CommandHost, args: str) -> CommandOutcome:
    fresh = conversation_like(host.conv)
    fresh.start_source = "clear"   # its SessionStart hooks hear source "clear", as in Claude Code
    await host.switch_conversation(fresh, reason="clear")
    return CommandOutcome("Started a new session: " + host.conv.session_id)


async def _compact(host: CommandHost, args: str) -> CommandOutcome:
    await host.render_events(host.conv.compact(args or None))
    return CommandOutcome()


async def _resume(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.session import store

    sid = args.strip()
    if not sid:
        # A run that never got a prompt in (it failed at start, or was empty) is not worth resuming.
        sessions = [s for s in store.list_sessions(host.conv.config.cwd)
                    if s.session_id != host.conv.session_id and s.first_prompt][:MAX_RESUME_CHOICES]
        if not sessions:
            return CommandOutcome("No other conversations to resume in this project.")
        items = [resume_item(s) for s in sessions]
        pick = getattr(host, "pick", None)  # the REPL's searchable list; else a numbered choice
        sid = (await pick("Resume which conversation?", items) if pick is not None
               else await host.choose("Resume which conversation?", [(k, label) for k, label, _ in items])) or ""
        if not sid:
            return CommandOutcome("Resume cancelled.")
    try:
        new = load_session(host.conv, sid)
    except ValueError as exc:
        return CommandOutcome(str(exc))
    await host.switch_conversation(new, reason="resume")
    if new.session_id != sid.lower():   # another process writes it: this is a fork (session.claim)
        return CommandOutcome(f"Session {sid} is in use by another codeloop; resumed a fork of it: "
                              f"{new.session_id} ({len(new.messages)} messages).")
    return CommandOutcome(f"Resumed session {sid} ({len(new.messages)} messages).")


MAX_RESUME_CHOICES = 50


def resume_item(info: Any) -> tuple[str, str, str]:
    """(session id, list label, preview: first prompt, time, message count) for the /resume list."""
    import time

    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.mtime))
    try:
        data = info.path.read_bytes()
        count = sum(data.count(k) for k in (b'"type":"user"', b'"type": "user"', b'"type":"assistant"',
                                             b'"type": "assistant"'))
    except OSError:
        count = 0
    from codeloop.session.hold import holder

    live = f" · live: {h.describe()} (resuming forks it)" if (h := holder(info.path)) is not None else ""
    label = f"{when}  {info.first_prompt[:70]}"
    return info.session_id, label, f"{info.first_prompt}\n{when} · {count} messages · {info.session_id}{live}"


async def _continue(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.session import store

    other = next((s for s in store.list_sessions(host.conv.config.cwd) if s.session_id != host.conv.session_id), None)
    if other is None:
        return CommandOutcome("No previous conversation to continue in this project.")
    return await _resume(host, other.session_id)


async def _model(host: CommandHost, args: str) -> CommandOutcome:
    if not args:
        return CommandOutcome(f"Model: {host.conv.config.model}  (change with /model <name>; "
                              "aliases: sonnet, opus, haiku)")
    from codeloop.providers.select import model_problem

    if getattr(host.conv.provider, "name", "anthropic") == "anthropic" and (why := model_problem(args.strip())):
        return CommandOutcome(f"Model not changed: {why}")
    return CommandOutcome(f"Model set to {host.conv.set_model(args.strip())}")


def cost_text(conv: Conversation) -> str:
    u = conv.usage
    lines = [f"Total cost:            ${conv.cost_usd:.4f}",
             f"Total duration (API):  {conv.api_duration_ms / 1000:.1f}s",
             f"Usage:                 {u.input_tokens:,} input, {u.output_tokens:,} output, "
             f"{u.cache_read_input_tokens:,} cache read, {u.cache_creation_input_tokens:,} cache write"]
    from codeloop.providers.pricing import cost_usd

    for model, mu in conv.usage_by_model.items():
        lines.append(f"  {model}: {mu.input_tokens:,} in, {mu.output_tokens:,} out, ${cost_usd(mu, model):.4f}")
    return "\n".join(lines)


def context_tokens(conv: Conversation) -> int:
    """About how many tokens the next request would carry (last API usage + an estimate after it)."""
    from codeloop.context.tokens import TokenCounter

    return TokenCounter().estimate_next(conv.messages)


async def _cost(host: CommandHost, args: str) -> CommandOutcome:
    return CommandOutcome(cost_text(host.conv))


async def _status(host: CommandHost, args: str) -> CommandOutcome:
    """Claude Code's /status: version, session, where things live and what was loaded, in columns."""
    from codeloop.config.settings import load_settings
    from codeloop.config.trust import is_trusted
    from codeloop.context.prompt import instruction_files
    from codeloop.session.store import config_dir
    from codeloop.tools.registry import web_search_unavailable
    from codeloop.version import __version__

    c = host.conv
    cwd = c.config.cwd
    memory = [str(p) for p, _ in instruction_files(cwd, config_dir())]
    try:
        settings = [f"{s.scope.value}: {s.path}" for s in load_settings(cwd, trusted=is_trusted(cwd)).sources]
    except Exception as exc:  # a broken file is reported, not fatal, here
        settings = [f"(could not read the settings: {exc})"]
    rows: list[tuple[str, list[str]]] = [
        ("Version", [__version__]), ("Session", [c.session_id]), ("Transcript", [str(c.transcript_path)]),
        ("Working directory", [str(cwd)]), ("Model", [c.config.model]),
        ("Permission mode", [c.config.policy.mode.value]),
        ("Messages", [f"{len(c.messages)} (~{context_tokens(c):,} tokens in context)"]),
        ("Cost so far", [f"${c.cost_usd:.4f}"]),
        ("CLAUDE.md", memory or ["(none)"]), ("Settings", settings or ["(no settings files)"])]
    if c.ended_by_model:
        rows.append(("State", ["ended by the model — /clear to start a new session"]))
    if (why := web_search_unavailable(c.tool_context)) and any(t.name == "WebSearch" for t in c.tool_pool()):
        rows.append(("Web search", [why]))
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{(label + ':') if i == 0 else '':<{width}}{v}" for label, values in rows for i, v in enumerate(values)]
    return CommandOutcome("\n".join(lines))


async def _permissions(host: CommandHost, args: str) -> CommandOutcome:
    p = host.conv.config.policy
    lines = [f"Permission mode: {p.mode.value}  (Shift+Tab cycles default → acceptEdits → plan)"]
    for label, rules in (("allow", [*p.allow, *[r for b, r, _ in p.settings_rules if b == "allow"]]),
                         ("ask", [*p.ask, *[r for b, r, _ in p.settings_rules if b == "ask"]]),
                         ("deny", [*p.deny, *[r for b, r, _ in p.settings_rules if b == "deny"]])):
        lines.append(f"{label}: " + (", ".join(rules) if rules else "(none)"))
    return CommandOutcome("\n".join(lines))


async def _config(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.config.settings import load_settings
    from codeloop.config.trust import is_trusted

    cwd = host.conv.config.cwd
    loaded = load_settings(cwd, trusted=is_trusted(cwd))
    sources = ", ".join(f"{s.scope.value}: {s.path}" for s in loaded.sources) or "(no settings files)"
    return CommandOutcome(f"Settings sources: {sources}\n" + json.dumps(loaded.merged, indent=2, sort_keys=True))


async def _tasks(host: CommandHost, args: str) -> CommandOutcome:
    """/tasks (/bashes): the session's background shells and agents; `/tasks stop <id>` stops one."""
    background = host.conv.tool_context.background
    verb, _, task_id = args.strip().partition(" ")
    if verb in ("stop", "kill"):
        task = background.get(task_id.strip()) if background is not None else None
        if background is None or task is None:
            return CommandOutcome(f"No background task with id {task_id.strip()!r}.")
        await background.stop(task)
        return CommandOutcome(f"Stopped {task.id}: {task.command or task.description}")
    lines = background.listing() if background is not None else []
    return CommandOutcome("\n".join(["Background tasks:", *lines]) if lines else "No background tasks.")


async def _rewind(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.input.rewind import rewind
    return CommandOutcome(await rewind(host, args, conversation_like))


async def _init(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.input.init_survey import survey

    extra = f"\n\nThe user adds: {args}" if args.strip() else ""
    return CommandOutcome(prompt=f"{INIT_PROMPT}\n\n{survey(host.conv.config.cwd)}{extra}")


async def _exit(host: CommandHost, args: str) -> CommandOutcome:
    host.request_exit()
    return CommandOutcome()


BUILTINS: tuple[Command, ...] = (
    Command("help", "Show commands and keys", CommandType.LOCAL, _help, immediate=True, aliases=("?",)),
    Command("clear", "Start a new session with empty history", CommandType.LOCAL, _clear, aliases=("reset", "new")),
    Command("compact", "Summarise the conversation to free context", CommandType.LOCAL, _compact,
            argument_hint="[focus]"),
    Command("resume", "Resume another conversation of this project", CommandType.LOCAL, _resume,
            argument_hint="[session id]"),
    Command("continue", "Continue the most recent other conversation", CommandType.LOCAL, _continue),
    Command("model", "Show or set the model", CommandType.LOCAL, _model, argument_hint="[name]"),
    Command("cost", "Show the cost and token usage of this session", CommandType.LOCAL, _cost, immediate=True),
    Command("status", "Show session, model and permission status", CommandType.LOCAL, _status, immediate=True),
    Command("permissions", "Show permission rules and mode", CommandType.LOCAL, _permissions,
            aliases=("allowed-tools",)),
    Command("config", "Show the merged settings", CommandType.LOCAL, _config),
    Command("tasks", "List background shells and agents (stop <id> stops one)", CommandType.LOCAL, _tasks,
            immediate=True, aliases=("bashes",), argument_hint="[stop <id>]"),
    Command("rewind", "Restore the code and/or conversation to an earlier prompt", CommandType.LOCAL, _rewind,
            aliases=("checkpoint",)),
    Command("init", "Write a CLAUDE.md describing this codebase", CommandType.PROMPT, _init, prompt=INIT_PROMPT),
    Command("exit", "Exit codeloop", CommandType.LOCAL, _exit, immediate=True, aliases=("quit",)),
)
