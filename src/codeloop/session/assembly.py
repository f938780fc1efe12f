"""The one assembly: RunOptions → a ready Conversation, for every front end, the library and
every subagent. Front ends render events and collect input; they never assemble capabilities.

    options ─▶ history        new · resume · continue · fork · truncating resume (assembly_parts);
                              held by this process, or forked while another writes it (claim)
            ─▶ provider       + model + fallback; the embedded model started with the host's progress
            ─▶ policy         rules from flags and settings, directories, the sandbox
            ─▶ tools          built-ins narrowed by --tools / --disallowedTools; agents for Agent
            ─▶ prompt         system prompt, output style, CLAUDE.md (re-read per query), hooks, flags
            ─▶ plugins        resolved at the door (RunOptions.plugins): their hooks join the settings'
                              hooks, their MCP servers the others, their skills the tool context
            ─▶ MCP servers    started before the session exists; their tools join every pool
            ─▶ Conversation   transcript, typed tool context, pipeline + compactor, memory, tasks
            ─▶ permissions    asked through the host, or --permission-prompt-tool's MCP tool

`successor` builds the session that follows /clear, /resume or /rewind from the same options
and shared parts; `session.subagent` builds a subagent's Conversation on top of its parent's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from codeloop.providers.base import Preconnects
from codeloop.session.assembly_parts import (History, load_history, make_policy, make_provider, make_tools,
                                             output_style, permission_prompt_tool, session_hooks, start_mcp,
                                             style_name)
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.session.options import RunOptions, SetupError
from codeloop.session.parts import SessionHost, SessionParts


async def open_session(options: RunOptions, host: SessionHost | None = None, *,
                       provider: Any = None) -> tuple[Conversation, list[str]]:
    """The session for `options`, MCP servers started; (conversation, warnings for the user).
    SetupError (one line for the user) when it cannot be built."""
    from codeloop.permissions.project_files import ProjectFiles

    host = host or SessionHost()
    files = ProjectFiles(options.cwd)   # every prompt file the project brings is read through it
    history = load_history(options)
    try:
        prov, model = (provider, options.model.model or "") if provider is not None else make_provider(
            options, host, history.session_id)
    except BaseException:
        _let_go(history)
        raise
    if isinstance(prov, Preconnects):
        prov.preconnect()   # the first request's connection is made while the session is assembled
    try:
        manager, warnings = await start_mcp(options)
        style, style_warnings = output_style(options, files)
        warnings += style_warnings
        try:
            conv = build_session(options, host, provider=prov, model=model, history=history, mcp=manager,
                                 style=style, files=files)
        except BaseException:
            if manager is not None:
                await manager.aclose()
            raise
    except BaseException:
        _let_go(history)
        if provider is None:
            await _close_provider(prov)
        raise
    warnings += [f"mcp: {line}" for line in (manager.problems() if manager else [])]
    return conv, [*options.warnings, *history.warnings, *warnings, *files.drain(), *_rule_warnings(conv, options)]


def _let_go(history: History) -> None:
    """A session that failed to start holds nothing (the REPL may try again, with the local model)."""
    if history.hold is not None:
        history.hold.release()


def build_session(options: RunOptions, host: SessionHost, *, provider: Any, model: str, history: History,
                  mcp: Any = None, style: Any = None, files: Any = None) -> Conversation:
    """The Conversation itself, from parts already made (the library calls this without MCP).
    `style`: the output style in use (None: the default). `files`: the reader of the project's
    prompt files (permissions.project_files; None: a new one), whose warnings the session shows."""
    from codeloop.context.prompt import context_loader
    from codeloop.permissions.project_files import ProjectFiles
    from codeloop.session import store

    cwd, settings = options.cwd, options.settings
    files = files if files is not None else ProjectFiles(cwd)
    load_context = context_loader(cwd, store.config_dir(), custom=options.prompts.system_prompt,
                                  append=options.prompts.append, output_style=style, files=files,
                                  sources=options.setting_sources, claude_md=options.prompts.claude_md)
    system_prompt, user_ctx = load_context()
    config = ConversationConfig(
        cwd=cwd, model=model, tools=make_tools(options), load_context=load_context,
        fallback_models=list(options.model.fallback), agent_definitions=dict(options.agents),
        entrypoint=options.entrypoint, feature_flags=dict(options.feature_flags), hook_env=settings.env(),
        env_pass=_env_pass(settings),
        hooks=session_hooks(options), resumed=bool(history.messages),
        token_budget=options.limits.token_budget, task_budget=options.limits.task_budget,
        system_prompt=system_prompt,
        max_budget_usd=options.limits.max_budget_usd,
        thinking=dict(options.model.thinking) if options.model.thinking is not None else None,
        user_context=user_ctx, policy=make_policy(options), max_turns=options.limits.max_turns,
        max_output_tokens=options.limits.max_output_tokens, persist=options.history.persist,
        interactive=options.interactive, setup_trigger=options.setup)
    records = [{"type": "permission-mode", "permissionMode": config.policy.mode.value, "sessionId": history.session_id}]
    holder: list[Conversation] = []
    tool_name = options.permissions.prompt_tool
    ask = host.ask_user
    if tool_name and tool_name != "stdio":   # an MCP tool answers permission prompts
        ask = permission_prompt_tool(mcp, tool_name, lambda: holder[0])
    parts = SessionParts(settings=settings, trusted=options.trusted, mcp=mcp, output_style=style_name(style, options),
                         api_key_source=_key_source(provider, options), listeners=list(host.listeners),
                         claude_records=True, records=records, memory_file_names=_memory_names(options),
                         options=options, spawn=_spawn_subagent, project_files=files, hold=history.hold)
    conv = Conversation(config, provider, session_id=history.session_id, messages=history.messages,
                        denials=history.denials, entries=history.entries, ask_user=ask, parts=parts)
    holder.append(conv)
    if options.history.name:   # -n/--name, as Claude Code records it
        conv._write_entry({"type": "custom-title", "customTitle": options.history.name, "sessionId": conv.session_id})
    return conv


def successor(conv: Conversation, *, session_id: str | None = None, messages: list[Any] | None = None,
              denials: list[Any] | None = None, entries: list[Any] | None = None,
              keep_checkpoints: bool = False, rewind_at: int | None = None, hold: Any = None) -> Conversation:
    """The session that follows `conv` in the same front end (/clear, /resume, /rewind): the same
    config, provider, MCP servers, listeners and typed-ahead input; a fresh session by default.
    `keep_checkpoints`: the file checkpoints go on with it (/rewind keeps their prompts).
    `rewind_at`: /rewind to before `conv.messages[rewind_at]` — the same session goes on from the
    message before it, as Claude Code's does: its transcript retracts the messages from there on and
    marks where the parentUuid chain continues (session.resume.branch_from), so a later `-c` or
    `--resume` rebuilds exactly the kept conversation plus what follows.
    `hold`: the resumed session's (session.claim); a fresh one is held when first written."""
    from codeloop.hooks.events import CallbackSource
    from codeloop.session import store

    if rewind_at is not None:
        from codeloop.session.resume import branch_from

        messages, dropped = conv.messages[:rewind_at], conv.messages[rewind_at:]
        branch_from(conv.persistence, messages[-1].uuid if messages else None,
                    [{"type": m.role, "uuid": m.uuid} for m in dropped])
        conv.sync()
        session_id = conv.session_id
        if hold is None:   # the same session goes on: this process's hold on it moves along
            hold, conv.persistence.hold = conv.persistence.hold, None
        # and so do its background tasks: closing the old conversation no longer stops them
        from codeloop.tools.made_on_use import made

        # (one never made goes on unmade: the successor makes its own when first read)
        background, conv.tool_context.background = made(conv.tool_context, "background"), None
    else:
        background = None
    config = replace(conv.config, resumed=bool(messages))
    sid = session_id or store.new_session_id()
    records = [{"type": "permission-mode", "permissionMode": config.policy.mode.value, "sessionId": sid}]
    parts = replace(conv.parts, records=records, queue=conv.queue, owns_mcp=True, listeners=conv.side_listeners,
                    file_history=conv.file_history if keep_checkpoints else None, hold=hold,
                    background=background)
    conv.hand_over()
    new = Conversation(config, conv.provider, session_id=sid, messages=messages, denials=denials, entries=entries,
                       ask_user=conv.ask_user, parts=parts)
    old = conv.hooks.runner
    if old is not None and type(old.callbacks) is not CallbackSource:   # the SDK's registrations stay
        new.add_hook_callbacks(old.callbacks)
        new.hooks.runner.observer = old.observer
    return new


async def _spawn_subagent(conv: Conversation, *args: Any, **kw: Any) -> Any:
    """The Agent tool's capability: session.subagent, imported when a subagent first runs (it
    brings the Agent tool's pydantic model, which the first request does not need)."""
    from codeloop.session.subagent import spawn_for

    return await spawn_for(conv, *args, **kw)


def _env_pass(settings: Any) -> tuple[str, ...]:
    """What the model's commands may see of the secret-looking variables: what settings `env` sets
    for the session, and what `passEnv` names (both from trusted sources only)."""
    named = settings.merged.get("passEnv")
    extra = [str(n) for n in named if isinstance(n, str) and n] if isinstance(named, list) else []
    return (*settings.env(), *extra)


def _memory_names(options: RunOptions) -> tuple[str, ...] | None:
    if options.setting_sources is None:
        return None
    from codeloop.context.memory import memory_file_names

    return tuple(memory_file_names(set(options.setting_sources)))


def _key_source(provider: Any, options: RunOptions) -> str:
    from codeloop.providers.select import api_key_source

    name = getattr(provider, "name", "anthropic")
    try:
        return api_key_source(name, helper=name == "anthropic" and bool(options.model.api_key_helper))
    except ValueError:
        return "none"


def _rule_warnings(conv: Conversation, options: RunOptions) -> list[str]:
    """Problems in the rules typed on this command line (settings files' are reported as they load)."""
    policy = conv.config.policy
    if not options.permissions.cli_rules_typed or policy.rules is None:
        return []
    warnings = list(policy.rule_errors)
    policy.rule_errors.clear()
    return warnings


async def _close_provider(provider: Any) -> None:
    runtime = getattr(provider, "runtime", None)
    if runtime is not None:
        runtime.stop()
    closer = getattr(provider, "aclose", None)
    if closer is not None:
        await closer()


__all__ = ["SessionHost", "SetupError", "build_session", "open_session", "successor"]
