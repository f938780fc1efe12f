"""Turns parsed CLI flags into a ready Conversation: model, provider, tools, prompt, session.

Every failure here is a `SetupError` with a message meant for the user; none is a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

from codeloop.providers.aliases import resolve_model
from codeloop.session.options import BrokenSettingsError, NoKeyError, SetupError  # noqa: F401 (re-exported)
from codeloop.cli.startup.provider import _key_source, _provider_and_model, _wants_local
from codeloop.session.conversation import Conversation, ConversationConfig


def _permission_policy(args: argparse.Namespace, settings, cwd: Path):
    from codeloop.permissions.policy import PermissionMode, PermissionPolicy

    requested = ("bypassPermissions" if args.dangerously_skip_permissions else args.permission_mode) \
        or settings.default_mode() or "default"
    if requested == "bypassPermissions" and settings.bypass_disabled():
        raise SetupError("bypassPermissions mode is disabled by managed settings "
                         "(permissions.disableBypassPermissionsMode)")
    dirs = [str((cwd / d).resolve()) for d in [*settings.additional_directories(), *(args.add_dir or [])]]
    for d in dirs:
        if not Path(d).is_dir():
            raise SetupError(f"--add-dir: {d} is not a directory")
    policy = PermissionPolicy(mode=PermissionMode(requested), allow=list(args.allowed_tools),
                              deny=list(args.disallowed_tools), cwd=cwd,
                              settings_rules=[(str(b.value), r, o) for b, r, o in settings.permission_rules()],
                              additional_directories=dirs, bypass_disabled=settings.bypass_disabled())
    if getattr(args, "sandbox", False) or "sandbox" in settings.merged:   # imported only when asked for
        from codeloop.config.settings import claude_user_dir
        from codeloop.sandbox.runtime import session_sandbox
        from codeloop.session import store
        policy.sandbox, policy.rule_errors[:0] = session_sandbox(
            settings.merged, force_enable=bool(getattr(args, "sandbox", False)), roots=[str(cwd), *dirs],
            protected_dirs=[str(store.config_dir()), str(claude_user_dir())], read_deny=policy.read_deny_specs)
    return policy


def _load_settings(args: argparse.Namespace, cwd: Path) -> tuple[Any, bool, list[str]]:
    """The settings hierarchy, with the folder's own configuration only if the folder is trusted."""
    from codeloop.config.settings import load_settings
    from codeloop.config.trust import check_trust

    status = check_trust(cwd)
    warnings = [status.warning] if status.warning else []
    trusted = bool(args.trust) or status.trusted
    sources = _setting_sources(args)
    settings = load_settings(cwd, cli_settings=args.settings, trusted=trusted, sources=sources,
                             skip=frozenset(getattr(args, "skip_settings_files", None) or ()))
    if settings.broken:
        raise BrokenSettingsError(settings.broken)
    warnings += [f"settings: {e}" for e in settings.errors]
    warnings += settings.ignored_untrusted
    return settings, trusted, warnings


def _setting_sources(args: argparse.Namespace) -> set[str] | None:
    """--setting-sources as a set (None: all sources)."""
    if args.setting_sources is None:
        return None
    sources = {x.strip() for x in args.setting_sources.split(",") if x.strip()}
    unknown = sources - {"user", "project", "local"}
    if unknown:
        raise SetupError(f"--setting-sources: unknown source(s) {', '.join(sorted(unknown))} "
                         "(use user, project, local)")
    return sources


def _output_style(settings: Any, cwd: Path, sources: set[str] | None) -> tuple[Any, list[str]]:
    """The `outputStyle` setting's style: built-in, or a custom one from the output-styles folders
    of the sources in use. A project's styles, like its CLAUDE.md, are prompt text and need no
    trust; the setting that selects one comes from settings, which do."""
    from codeloop.config.settings import claude_user_dir
    from codeloop.context.output_styles import resolve_output_style, style_dirs
    from codeloop.session import store

    dirs = style_dirs(cwd, [store.config_dir(), claude_user_dir()], user=sources is None or "user" in sources,
                      project=sources is None or "project" in sources or "local" in sources)
    return resolve_output_style(settings.merged.get("outputStyle"), dirs)


def _tools(args: argparse.Namespace, agent_definitions: dict):
    from codeloop.tools.registry import builtin_tools, select_tools

    tools = builtin_tools(lazy=True, agent_definitions=agent_definitions)
    known = {t.name for t in tools}
    unknown = [n for n in (args.tools or []) if n not in known]
    if unknown:
        raise SetupError(f"unknown tool(s) in --tools: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return select_tools(tools, allowed=args.tools, disallowed=args.disallowed_tools)


def _load_history(args: argparse.Namespace, cwd: Path) -> tuple[str, list, list, list[str], list[dict]]:
    """(session_id, messages, permission denials, warnings, entries) for a new or resumed session."""
    from codeloop.session import store

    if args.resume and args.continue_:
        raise SetupError("--resume and --continue cannot be used together")
    if args.session_id and (args.resume or args.continue_):
        raise SetupError("--session-id starts a new session; it cannot be combined with --resume/--continue")
    if args.fork_session and not (args.resume or args.continue_):
        raise SetupError("--fork-session needs --resume or --continue")
    if getattr(args, "resume_session_at", None) and not (args.resume or args.continue_):
        raise SetupError("--resume-session-at needs --resume or --continue")
    if not (args.resume or args.continue_):
        if args.session_id:
            try:
                sid = store.validate_session_id(args.session_id)
            except ValueError as exc:
                raise SetupError(str(exc)) from None
            if store.session_path(cwd, sid).exists():
                raise SetupError(f"session {sid} already exists; use --resume {sid} to continue it")
            return sid, [], [], [], []
        return store.new_session_id(), [], [], [], []
    if args.continue_:
        sid = store.latest_session(cwd)
        if sid is None:
            raise SetupError(f"no previous session to continue in {cwd}")
        path = store.session_path(cwd, sid)
    else:
        try:
            sid = store.validate_session_id(args.resume)
        except ValueError as exc:
            from codeloop.cli.startup.preflight import find_session_by_name
            named = find_session_by_name(cwd, args.resume)  # a name given with -n/--name
            if named is None:
                raise SetupError(str(exc)) from None
            sid = named
        path = store.find_session(sid, cwd)
        if path is None:
            raise SetupError(f"No conversation found with session ID: {sid}")
    at = getattr(args, "resume_session_at", None)
    if at:   # truncating resume: history up to that record (the SDK's resume_session_at)
        return _load_truncated(args, cwd, sid, path, at)
    # After a compaction only what follows the last boundary is history; the rest stays on disk.
    from codeloop.session.resume import load_from_last_boundary

    loaded = load_from_last_boundary(path)
    if args.fork_session:
        # the fork starts as a copy of the original transcript under a new id; the original is untouched
        import shutil
        new_sid = store.new_session_id()
        new_path = store.session_path(cwd, new_sid)
        new_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, new_path)
        sid = new_sid
    denials = [{k: e.get(k) for k in ("tool_name", "tool_use_id", "tool_input")}
               for e in loaded.entries if e.get("type") == "permission-denial"]
    return sid, loaded.messages, denials, list(loaded.warnings), loaded.entries


def _load_truncated(args: argparse.Namespace, cwd: Path, sid: str, path: Path, at: str):
    """--resume-session-at: a fork gets only the kept records; otherwise the same file goes on
    from `at`, the records after it retracted (session.resume.branch_from)."""
    from codeloop.session import store
    from codeloop.session.resume import ResumeError, branch_from, load_until
    from codeloop.session.transcript import TranscriptError, TranscriptWriter, encode_entry

    try:
        loaded, dropped = load_until(path, at, getattr(args, "resume_drops_turn", None))
        if args.fork_session:
            sid = store.new_session_id()
            new_path = store.session_path(cwd, sid)
            new_path.parent.mkdir(parents=True, exist_ok=True)
            new_path.write_bytes(b"".join(encode_entry({**e, "sessionId": sid} if "sessionId" in e else e)
                                          for e in loaded.entries))
        elif dropped:
            writer = TranscriptWriter(path, sid, cwd)
            try:
                branch_from(writer, at, dropped)
                writer.sync()
            finally:
                writer.close()
    except (ResumeError, TranscriptError, OSError) as exc:
        raise SetupError(str(exc)) from None
    denials = [{k: e.get(k) for k in ("tool_name", "tool_use_id", "tool_input")}
               for e in loaded.entries if e.get("type") == "permission-denial"]
    return sid, loaded.messages, denials, list(loaded.warnings), loaded.entries


def _entrypoint() -> str:
    """Who drives us: `cli` unless a wrapping runtime (an SDK) says otherwise."""
    return (os.environ.get("CODELOOP_ENTRYPOINT") or os.environ.get("CLAUDE_CODE_ENTRYPOINT") or "cli").strip()


def _custom_system_prompt(args: argparse.Namespace) -> str | None:
    if args.system_prompt_file:
        try:
            return Path(args.system_prompt_file).read_text()
        except OSError as exc:
            raise SetupError(f"--system-prompt-file: cannot read {args.system_prompt_file}: {exc.strerror}") from None
    return args.system_prompt


DEFAULT_THINKING_BUDGET = 10_000
# --effort without a budget: codeloop's thinking budget per level ("max" is Claude Code's ultrathink).
EFFORT_BUDGETS = {"low": 4_096, "medium": DEFAULT_THINKING_BUDGET, "high": 16_000, "xhigh": 24_000, "max": 31_999}


def _thinking(args: argparse.Namespace) -> dict | None:
    """Extended thinking for the API: on with --max-thinking-tokens / MAX_THINKING_TOKENS,
    --thinking enabled|adaptive, or --effort (which also rides along as `effort`)."""
    if args.thinking == "disabled":
        return None
    budget, source = args.max_thinking_tokens, "--max-thinking-tokens"
    env = os.environ.get("MAX_THINKING_TOKENS", "").strip()
    if budget is None and env:
        if not env.isdigit():
            raise SetupError(f"MAX_THINKING_TOKENS must be a whole number of tokens, not {env!r}")
        budget, source = int(env), "MAX_THINKING_TOKENS"
        if budget == 0:   # Claude Code: 0 turns thinking off
            return None
    effort = getattr(args, "effort", None)
    config: dict | None = None
    if budget is not None:
        if budget < 1024:
            raise SetupError(f"{source} must be at least 1024 (the API's minimum thinking budget)")
        config = {"type": "enabled", "budget_tokens": budget}
    elif effort:
        config = {"type": "enabled", "budget_tokens": EFFORT_BUDGETS[effort]}
    elif args.thinking in ("enabled", "adaptive"):
        config = {"type": "enabled", "budget_tokens": DEFAULT_THINKING_BUDGET}
    if config is not None and effort:
        config["effort"] = effort
    return config


def _feature_flags(settings: Any, local: bool) -> dict[str, Any]:
    flags = dict(settings.feature_flags())
    if local:  # the local profile attaches the files a prompt names (see input.process.named_files)
        from codeloop.config.flags import ATTACH_NAMED_FILES
        flags[ATTACH_NAMED_FILES] = True
    return flags


def build_conversation(args: argparse.Namespace, *, interactive: bool) -> tuple[Conversation, list[str]]:
    from codeloop.context.prompt import context_loader
    from codeloop.session import store

    cwd = Path.cwd().resolve()
    if args.max_turns is not None and args.max_turns < 1:
        raise SetupError("--max-turns must be a positive integer")
    settings, trusted, warnings = _load_settings(args, cwd)
    local = _wants_local(args, settings)
    if local:  # the local-model profile narrows tools/prompt and switches the sandbox on
        from codeloop.cli.startup.local_profile import ProfileError, apply_profile

        try:
            warnings = apply_profile(args)
        except ProfileError as exc:
            raise SetupError(str(exc)) from None
        settings, trusted, more = _load_settings(args, cwd)
        warnings += more
    # settings "env" applies to this process (a trusted folder's own env only — see _load_settings)
    os.environ.update({k: str(v) for k, v in settings.env().items()})
    session_id, messages, denials, history_warnings, entries = _load_history(args, cwd)
    warnings += history_warnings
    from codeloop.cli.startup.preflight import FlagError, apply_main_agent
    from codeloop.tools.agents import load_agent_definitions

    definitions = load_agent_definitions(cwd, store.config_dir())
    warnings.extend(getattr(definitions, "warnings", []))
    try:
        if getattr(args, "agents", None):  # --agents JSON: Claude Code's definitions, above files
            from codeloop.tools.agents import definitions_from_json
            definitions.update(definitions_from_json(args.agents))
        apply_main_agent(args, definitions)  # --agent NAME: its prompt, tools and model for the main thread
    except (ValueError, FlagError) as exc:
        raise SetupError(str(exc)) from None
    provider, model = _provider_and_model(args, settings, session_id)
    fallback = [resolve_model(m) for m in (args.fallback_model or "").split(",") if m.strip()]
    if args.max_budget_usd is not None and not (math.isfinite(args.max_budget_usd) and args.max_budget_usd > 0):
        raise SetupError("--max-budget-usd must be a positive amount of dollars")
    if args.json_schema:
        from codeloop.session.structured import parse_schema
        try:
            parse_schema(args.json_schema)
        except Exception as exc:  # noqa: BLE001 — any unusable schema is the user's input error
            raise SetupError(f"--json-schema: {exc}") from None
    if args.token_budget is not None and args.token_budget < 1:
        raise SetupError("--token-budget must be a positive number of tokens")
    sources = _setting_sources(args)
    style, style_warnings = _output_style(settings, cwd, sources)
    warnings += style_warnings
    load_context = context_loader(cwd, store.config_dir(), custom=_custom_system_prompt(args),
                                  append=args.append_system_prompt, output_style=style,
                                  sources=frozenset(sources) if sources is not None else None,
                                  claude_md=not getattr(args, "bare", False))  # --bare: no CLAUDE.md discovery
    system_prompt, user_ctx = load_context()
    config = ConversationConfig(
        cwd=cwd, model=model, tools=_tools(args, definitions), load_context=load_context,
        fallback_models=fallback, agent_definitions=dict(definitions), entrypoint=_entrypoint(),
        feature_flags=_feature_flags(settings, local), hook_env=settings.env(),
        hooks={} if getattr(args, "bare", False) else settings.hooks(),  # --bare: no hooks
        resumed=bool(messages),
        token_budget=args.token_budget,
        system_prompt=system_prompt, max_budget_usd=args.max_budget_usd, thinking=_thinking(args),
        user_context=user_ctx, policy=_permission_policy(args, settings, cwd),
        max_turns=args.max_turns, persist=not args.no_session_persistence, interactive=interactive)
    if local and config.policy.mode.value == "bypassPermissions":
        runtime = getattr(provider, "runtime", None)
        if runtime is not None:
            runtime.stop()
        raise SetupError("the local model never runs with bypassPermissions (settings defaultMode)")
    conv = Conversation(config, provider, session_id=session_id, messages=messages, denials=denials,
                        entries=entries)
    conv.settings, conv.trusted = settings, trusted
    conv.output_style = style.name if style is not None else "default"   # system/init's output_style
    if sources is not None:
        from codeloop.context.memory import memory_file_names
        conv.nested_memory.file_names = memory_file_names(sources)
    if conv.writer is not None:   # Claude Code's metadata records, for its (and the SDK's) session readers
        conv.writer.claude_records = True
        conv.writer.pending_records.append({"type": "permission-mode", "permissionMode": config.policy.mode.value,
                                            "sessionId": session_id})
    if getattr(args, "name", None) and conv.tool_context.append_entry is not None:  # -n/--name, as Claude Code
        conv.tool_context.append_entry({"type": "custom-title", "customTitle": args.name, "sessionId": session_id})
    conv.tool_context.extra["sandbox"] = config.policy.sandbox   # the Bash tool runs inside it
    conv.api_key_source = _key_source(provider, settings)
    if any("(" in r for r in [*args.allowed_tools, *args.disallowed_tools]):
        warnings += config.policy.rule_errors if config.policy.rules is not None else []  # typed on this command line
        config.policy.rule_errors.clear()
    return conv, warnings


async def attach_mcp(conv: Conversation, args: argparse.Namespace) -> list[str]:
    """Start the configured MCP servers (in parallel, each bounded by MCP_TIMEOUT) and give their
    tools to the conversation. The MCP SDK is imported only when servers are configured."""
    from codeloop.mcp.config import load_mcp_configs

    settings = getattr(conv, "settings", None)
    configs, errors = load_mcp_configs(conv.config.cwd, settings_servers=settings.mcp_servers() if settings else {},
                                       cli_configs=list(args.mcp_config or []), strict=bool(args.strict_mcp_config),
                                       include_project=getattr(conv, "trusted", False))
    warnings = [f"mcp: {e}" for e in errors]
    if not getattr(conv, "trusted", False) and (conv.config.cwd / ".mcp.json").is_file():
        warnings.append(f"ignored MCP servers from {conv.config.cwd / '.mcp.json'}: this folder is not trusted "
                        "(trust it in an interactive codeloop or Claude Code session, pass --trust, "
                        "or set CODELOOP_TRUST=1)")
    if not configs:
        return warnings
    from codeloop.mcp.client import McpManager

    manager = McpManager()
    await manager.start(configs)
    conv.attach_mcp(manager)
    warnings += [f"mcp: server {name} failed: {err}" for name, err in manager.errors().items()]
    return warnings


def use_permission_prompt_tool(conv: Conversation, args: argparse.Namespace) -> None:
    """`--permission-prompt-tool mcp__server__tool`: an MCP tool answers permission prompts in
    print mode, with Claude Code's protocol — it gets {tool_name, input, tool_use_id} and answers
    JSON {"behavior": "allow", "updatedInput": …} or {"behavior": "deny", "message": …}.
    ("stdio" is the SDK control protocol, handled by the stream-json runner.)"""
    name = getattr(args, "permission_prompt_tool", None)
    if not name or name == "stdio":
        return
    tool = next((t for t in conv.tool_pool() if t.name == name), None)
    if tool is None:
        raise SetupError(f"--permission-prompt-tool: no such MCP tool {name!r} (is its server configured and up?)")

    async def ask(asked_tool: Any, inp: Any, block: dict) -> Any:
        import json as _json

        from codeloop.tools.base import PermissionBehavior, PermissionDecision, ToolError

        payload = {"tool_name": asked_tool.name, "input": dict(block.get("input") or {}),
                   "tool_use_id": block.get("id")}
        try:
            result = await tool.call(tool.input_model.model_validate(payload), conv.tool_context)
            content = result.content if isinstance(result.content, str) else "".join(
                b.get("text", "") for b in result.content if b.get("type") == "text")
            answer = _json.loads(content)
        except (ToolError, ValueError) as exc:
            return PermissionDecision(PermissionBehavior.DENY, f"permission prompt tool {name} failed: {exc}")
        if answer.get("behavior") == "allow":
            return PermissionDecision(PermissionBehavior.ALLOW, "", answer.get("updatedInput"))
        return PermissionDecision(PermissionBehavior.DENY, str(answer.get("message") or f"{name} denied it"))

    conv.ask_user = ask
