"""The door: the parsed command line, settings files and environment → one frozen RunOptions.

Resolution happens here and only here, in this order: the folder's trust and the settings
hierarchy (`--settings`, `--setting-sources`, trust), the embedded model as the default of a run
with no key and no model named, the local-model profile (narrower tools and prompt, the sandbox
on), settings `env` into the process environment, agent definitions (files, then `--agents`,
then `--agent NAME` applied to the main thread), the provider and model (flag >
`ANTHROPIC_MODEL`/`CODELOOP_PROVIDER` > settings), permissions (flag > settings `defaultMode`),
limits, output, and the history to start from (option_values.py checks the values argparse cannot).
Every bad value is a `SetupError` with one line for the user. Nothing outside start-up sees the Namespace.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from codeloop.cli.startup.option_values import check_numbers, json_schema, task_budget, thinking
from codeloop.session.options import (BrokenSettingsError, HistoryOptions, InputFormat, Limits, McpOptions,
                                      ModelOptions, OutputFormat, OutputOptions, PermissionOptions, PromptOptions,
                                      RunOptions, SessionEntry, SetupError)

SOURCES = ("user", "project", "local")


def options_from_argv(argv: list[str], *, interactive: bool = False) -> RunOptions:
    """RunOptions for a command line, parsed as `codeloop` parses it (the library's and tests' way in)."""
    from codeloop.cli.startup.parser import build_parser
    from codeloop.cli.startup.tool_lists import tool_list

    args = build_parser().parse_args(argv)
    args.allowed_tools = tool_list(args.allowed_tools) or []
    args.disallowed_tools = tool_list(args.disallowed_tools) or []
    args.tools = tool_list(args.tools)
    return resolve_options(args, interactive=interactive)


def resolve_options(args: argparse.Namespace, *, interactive: bool, skip_settings: frozenset[str] = frozenset(),
                    model_needed: bool = True) -> RunOptions:
    """RunOptions for this run. `skip_settings`: broken settings files the user chose to go on
    without; `model_needed`: False where no model is asked (`mcp serve`: no keyless default)."""
    from codeloop.session import local_profile, store

    cwd = Path.cwd().resolve()
    check_numbers(args)
    sources = _setting_sources(args.setting_sources)
    settings_arg, tools, system_prompt = args.settings, args.tools, _custom_system_prompt(args)
    settings, trusted, warnings = _load_settings(args, cwd, settings_arg, sources, skip_settings)
    # no key, no model named anywhere, the embedded model installed: it serves (and says so)
    keyless = (model_needed and not args.model and not args.agent
               and local_profile.keyless_default(settings, store.config_dir()))
    model_flag = local_profile.KEYLESS_MODEL if keyless else args.model
    local = _wants_local(model_flag, settings)
    if local:  # the local-model profile narrows tools and prompt and switches the sandbox on
        if args.dangerously_skip_permissions or args.permission_mode == "bypassPermissions":
            raise SetupError(local_profile.NO_BYPASS)
        tools, system_prompt, settings_arg, more = local_profile.profile(tools, system_prompt, settings_arg)
        warnings += more
        settings, trusted, more = _load_settings(args, cwd, settings_arg, sources, skip_settings)
        warnings += more
    # settings "env" applies to this process (a trusted folder's own env only — see _load_settings)
    os.environ.update({k: str(v) for k, v in settings.env().items()})
    plugins, more = _plugins(args, settings)
    warnings += more
    agents, agent_warnings = _agents(args, cwd, store.config_dir(), plugins)
    warnings += agent_warnings
    disallowed = list(args.disallowed_tools)
    main_agent = agents.get(args.agent) if args.agent else None
    if args.agent and main_agent is None:
        raise SetupError(f"--agent: no agent named {args.agent!r} (known: {', '.join(sorted(agents))})")
    if main_agent is not None:  # its prompt, tools and model, each unless the command line says otherwise
        system_prompt, tools, model_flag = _main_agent(main_agent, system_prompt, tools, model_flag)
        disallowed += list(main_agent.disallowed_tools)
    permissions = _permissions(args, settings, cwd, disallowed)
    sandbox_default, more = _sandbox_default(args, settings, interactive, cwd)
    warnings += more
    if sandbox_default:
        permissions = replace(permissions, sandbox_default=True)
    if local and permissions.mode.value == "bypassPermissions":
        raise SetupError("the local model never runs with bypassPermissions (settings defaultMode)")
    from codeloop.cli.startup.interface import interface_options
    interface, more = interface_options(settings.merged)
    warnings += more
    return RunOptions(
        cwd=cwd, settings=settings, trusted=trusted, interactive=interactive, entrypoint=_entrypoint(),
        prompt=args.prompt, setting_sources=frozenset(sources) if sources is not None else None,
        local_profile=local, history=_history(args, settings),
        model=replace(_model(args, model_flag, settings), keyless=keyless),
        permissions=permissions, tools=tuple(tools) if tools is not None else None,
        prompts=PromptOptions(system_prompt=system_prompt, append=_appended_prompt(args),
                              claude_md=not (args.bare or args.safe_mode)),
        mcp=McpOptions(configs=tuple(args.mcp_config or ()) if not args.safe_mode else (),
                       strict=bool(args.strict_mcp_config or args.bare or args.safe_mode)),
        limits=Limits(max_turns=args.max_turns, max_budget_usd=args.max_budget_usd, token_budget=args.token_budget,
                      task_budget=task_budget(args.task_budget),
                      json_schema=json_schema(args.json_schema)),
        output=_output(args), interface=interface, agents=agents, plugins=plugins,
        feature_flags=_feature_flags(settings, local),
        hooks=not (args.bare or args.safe_mode),
        setup="init" if args.init else "maintenance" if args.maintenance else None,
        warnings=tuple(warnings))


# -- settings ------------------------------------------------------------------------------------

def _load_settings(args: argparse.Namespace, cwd: Path, settings_arg: str | None, sources: set[str] | None,
                   skip: frozenset[str]) -> tuple[Any, bool, list[str]]:
    """The settings hierarchy, with the folder's own configuration only if the folder is trusted.

    A `--setting-sources` that names `project` or `local` is consent, as `--trust` is: whoever
    runs codeloop asked for this folder's settings (hooks included), as Claude Code honours them
    in print mode. Without it an untrusted folder contributes only its harmless keys."""
    from codeloop.config.settings import load_settings
    from codeloop.config.trust import check_trust

    status = check_trust(cwd)
    warnings = [status.warning] if status.warning else []
    trusted = bool(args.trust) or status.trusted or bool(sources and sources & _CONSENTING_SOURCES)
    if not trusted and (note := status.note(cwd)):
        warnings.append(note)
    settings = load_settings(cwd, cli_settings=settings_arg, trusted=trusted, sources=sources, skip=skip)
    if settings.broken:
        raise BrokenSettingsError(settings.broken)
    warnings += [f"settings: {e}" for e in settings.errors]
    warnings += settings.ignored_untrusted
    return settings, trusted, warnings


_CONSENTING_SOURCES = frozenset({"project", "local"})


def _setting_sources(value: str | None) -> set[str] | None:
    """--setting-sources as a set (None: all sources)."""
    if value is None:
        return None
    sources = {x.strip() for x in value.split(",") if x.strip()}
    unknown = sources - set(SOURCES)
    if unknown:
        raise SetupError(f"--setting-sources: unknown source(s) {', '.join(sorted(unknown))} "
                         "(use user, project, local)")
    return sources


def _feature_flags(settings: Any, local: bool) -> dict[str, Any]:
    flags = dict(settings.feature_flags())
    if local:  # the local profile attaches the files a prompt names (see input.process.named_files)
        from codeloop.config.flags import ATTACH_NAMED_FILES
        flags[ATTACH_NAMED_FILES] = True
    return flags


# -- prompts, agents, model ------------------------------------------------------------------------

def _custom_system_prompt(args: argparse.Namespace) -> str | None:
    if args.system_prompt_file:
        try:
            return Path(args.system_prompt_file).read_text()
        except OSError as exc:
            raise SetupError(f"--system-prompt-file: cannot read {args.system_prompt_file}: {exc.strerror}") from None
    prompt: str | None = args.system_prompt   # a Namespace's attributes are Any
    return prompt


def _appended_prompt(args: argparse.Namespace) -> str | None:
    """--append-system-prompt, then the text of --append-system-prompt-file."""
    extra = None
    if args.append_system_prompt_file:
        path = Path(args.append_system_prompt_file).expanduser()
        try:
            extra = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise SetupError(f"--append-system-prompt-file: cannot read {path}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    return "\n\n".join(x for x in (args.append_system_prompt, extra) if x) or None


def _plugins(args: argparse.Namespace, settings: Any) -> tuple[tuple[Any, ...], list[str]]:
    """--plugin-dir folders, then the plugins `enabledPlugins` turns on (a folder's own settings only
    when it is trusted: the settings loader drops them otherwise); none of the latter with --bare."""
    if not args.plugin_dir and not settings.merged.get("enabledPlugins"):
        return (), []   # most sessions: the plugin modules are never imported
    from codeloop.config.plugin_store import session_plugins
    from codeloop.session import store

    return session_plugins(list(args.plugin_dir or ()), settings.merged, store.config_dir(),
                           from_settings=not (args.bare or args.safe_mode))


def _agents(args: argparse.Namespace, cwd: Path, config_dir: Path,
            plugins: tuple[Any, ...]) -> tuple[dict[str, Any], list[str]]:
    """Agent definitions: built-in and files, then --agents JSON (Claude Code's definitions, above
    files), then the plugins' agents (named <plugin>:<agent>)."""
    from codeloop.tools.agents import definitions_from_json, load_agent_definitions

    definitions = load_agent_definitions(cwd, config_dir)
    warnings = list(getattr(definitions, "warnings", []))
    if plugins:
        from codeloop.tools.agents import plugin_agent_definitions

        extra = plugin_agent_definitions(plugins)
        warnings += extra.warnings
        for name, definition in extra.items():
            definitions.setdefault(name, definition)
    if args.agents:
        try:
            definitions.update(definitions_from_json(args.agents))
        except ValueError as exc:
            raise SetupError(str(exc)) from None
    return dict(definitions), warnings


def _main_agent(agent: Any, system_prompt: str | None, tools: list[str] | None,
                model: str | None) -> tuple[str | None, list[str] | None, str | None]:
    """`--agent NAME`: the agent's prompt becomes the system prompt, its tools the only tools and
    its model the model — each unless the command line says otherwise."""
    from codeloop.tools.registry import BUILTINS, canonical_name

    if system_prompt is None:
        system_prompt = agent.system_prompt
    if agent.tools is not None and tools is None:
        known = {n for n, _, _ in BUILTINS} | {"Agent"}
        tools = [canonical_name(t) for t in agent.tools if canonical_name(t) in known]  # MCP names are no built-ins
    if not model and agent.model and agent.model != "inherit":
        model = agent.model
    return system_prompt, tools, model


def _wants_local(model_flag: str | None, settings: Any) -> bool:
    from codeloop.providers.select import resolve_provider

    try:
        return resolve_provider(model_flag or settings.model(), env=os.environ,
                                settings=settings.merged)[0] == "local"
    except ValueError:
        return False


def _model(args: argparse.Namespace, model_flag: str | None, settings: Any) -> ModelOptions:
    from codeloop.providers.aliases import resolve_model
    from codeloop.providers.betas import split_betas
    from codeloop.providers.select import resolve_provider

    try:
        provider, model = resolve_provider(model_flag or settings.model(), env=os.environ, settings=settings.merged)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    if provider == "anthropic":
        model = resolve_model(model)
    elif provider != "local" and not model:
        raise SetupError(f"--model is required with the {provider} provider (e.g. --model {provider}:<model>)")
    fallback = tuple(resolve_model(m) for m in (args.fallback_model or "").split(",") if m.strip())
    return ModelOptions(provider=provider, model=model, fallback=fallback, thinking=thinking(args),
                        betas=tuple(split_betas(args.betas or [])),
                        api_key_helper=settings.api_key_helper() if provider == "anthropic" else None)


# -- permissions, limits, output, history ----------------------------------------------------------

def _permissions(args: argparse.Namespace, settings: Any, cwd: Path, disallowed: list[str]) -> PermissionOptions:
    from codeloop.permissions.policy import PermissionMode

    requested = ("bypassPermissions" if args.dangerously_skip_permissions else args.permission_mode) \
        or settings.default_mode() or "default"
    if requested == "manual":   # Claude Code's name for the default mode
        requested = "default"
    if requested == "bypassPermissions" and settings.bypass_disabled():
        raise SetupError("bypassPermissions mode is disabled by managed settings "
                         "(permissions.disableBypassPermissionsMode)")
    try:
        mode = PermissionMode(requested)
    except ValueError:
        raise SetupError(f"unknown permission mode {requested!r} (settings defaultMode)") from None
    dirs = [(cwd / d).resolve() for d in [*settings.additional_directories(), *(args.add_dir or [])]]
    for d in dirs:
        if not d.is_dir():
            raise SetupError(f"--add-dir: {d} is not a directory")
    allow = tuple(args.allowed_tools)
    auto_rules = None
    if block := settings.auto_mode():   # the classifier's module is imported only when rules exist
        from codeloop.permissions.auto_mode import AutoRules
        auto_rules = AutoRules.from_settings(block)
    return PermissionOptions(mode=mode, allow=allow, deny=tuple(disallowed), add_dirs=tuple(dirs),
                             sandbox=bool(args.sandbox), prompt_tool=args.permission_prompt_tool or None,
                             auto_rules=auto_rules,
                             cli_rules_typed=any("(" in r for r in [*allow, *disallowed]))


def _sandbox_default(args: argparse.Namespace, settings: Any, interactive: bool, cwd: Path) -> tuple[bool, list[str]]:
    """Whether the interactive session's Bash runs sandboxed by default (Claude Code's auto-allow
    sandbox mode), and the one line that says why not when bubblewrap cannot start here. Print
    mode keeps Claude Code's default (no sandbox unless settings or --sandbox enable it)."""
    no_sandbox = bool(args.no_sandbox)
    if no_sandbox and args.sandbox:
        raise SetupError("--sandbox and --no-sandbox contradict each other; pass one")
    block = settings.merged.get("sandbox")
    enabled = block.get("enabled") if isinstance(block, dict) else None
    if no_sandbox and (enabled is True or (block is not None and not isinstance(block, dict))):
        # fail closed: a flag does not lift a sandbox the settings (perhaps managed ones) ask for
        return False, ["--no-sandbox ignored: the settings enable the sandbox (sandbox.enabled)"]
    if not interactive or no_sandbox or args.sandbox or enabled is not None or block is not None \
            and not isinstance(block, dict):
        return False, []
    from codeloop.sandbox.bwrap import probe

    if str(cwd) == os.sep:   # the sandbox never makes '/' writable: every command would be refused
        return False, ["sandbox off: the working directory is '/'; Bash asks before each command"]
    p = probe()
    if p.error is not None:
        return False, [f"sandbox off: {p.error}; Bash asks before each command (--no-sandbox hides this line)"]
    return True, []


def _output(args: argparse.Namespace) -> OutputOptions:
    return OutputOptions(format=OutputFormat(args.output_format), input_format=InputFormat(args.input_format),
                         verbose=bool(args.verbose), include_partial_messages=bool(args.include_partial_messages),
                         replay_user_messages=bool(args.replay_user_messages),
                         include_hook_events=bool(args.include_hook_events), session_mirror=bool(args.session_mirror))


def _history(args: argparse.Namespace, settings: Any) -> HistoryOptions:
    from codeloop.session import store

    if args.resume and args.continue_:
        raise SetupError("--resume and --continue cannot be used together")
    if args.session_id and (args.resume or args.continue_):
        raise SetupError("--session-id starts a new session; it cannot be combined with --resume/--continue")
    if args.fork_session and not (args.resume or args.continue_):
        raise SetupError("--fork-session needs --resume or --continue")
    if args.resume_session_at and not (args.resume or args.continue_):
        raise SetupError("--resume-session-at needs --resume or --continue")
    session_id = None
    if args.session_id:
        try:
            session_id = store.validate_session_id(args.session_id)
        except ValueError as exc:
            raise SetupError(str(exc)) from None
    entry = SessionEntry.RESUME if args.resume else SessionEntry.CONTINUE if args.continue_ else SessionEntry.NEW
    return HistoryOptions(entry=entry, resume=args.resume or None, session_id=session_id, fork=bool(args.fork_session),
                          resume_at=args.resume_session_at or None, resume_drops_turn=args.resume_drops_turn or None,
                          persist=not args.no_session_persistence, name=args.name or None,
                          fork_busy=not args.no_fork_busy and settings.merged.get("forkBusySession") is not False)


def _entrypoint() -> str:
    """Who drives us: `cli` unless a wrapping runtime (an SDK) says otherwise."""
    return (os.environ.get("CODELOOP_ENTRYPOINT") or os.environ.get("CLAUDE_CODE_ENTRYPOINT") or "cli").strip()
