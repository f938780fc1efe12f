"""Turns parsed CLI flags into a ready Conversation: model, provider, tools, prompt, session.

Every failure here is a `SetupError` with a message meant for the user; none is a traceback.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from codeloop.session.conversation import Conversation, ConversationConfig

MODEL_ALIASES = {"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5"}


class SetupError(Exception):
    """A problem with the user's flags, environment or session files."""


def resolve_model(flag: str | None) -> str:
    from codeloop.providers.models import DEFAULT_MODEL

    model = (flag or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL).strip()
    return MODEL_ALIASES.get(model, model)


def _permission_policy(args: argparse.Namespace):
    from codeloop.permissions.policy import PermissionMode, PermissionPolicy

    mode = PermissionMode.BYPASS if args.dangerously_skip_permissions else PermissionMode(
        args.permission_mode or "default")
    return PermissionPolicy(mode=mode, allow=list(args.allowed_tools), deny=list(args.disallowed_tools))


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
    from codeloop.context.resume import load_from_last_boundary
    from codeloop.session import store

    if args.resume and args.continue_:
        raise SetupError("--resume and --continue cannot be used together")
    if args.session_id and (args.resume or args.continue_):
        raise SetupError("--session-id starts a new session; it cannot be combined with --resume/--continue")
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
            raise SetupError(str(exc)) from None
        path = store.find_session(sid, cwd)
        if path is None:
            raise SetupError(f"No conversation found with session ID: {sid}")
    # After a compaction only what follows the last boundary is history; the rest stays on disk.
    loaded = load_from_last_boundary(path)
    denials = [{k: e.get(k) for k in ("tool_name", "tool_use_id", "tool_input")}
               for e in loaded.entries if e.get("type") == "permission-denial"]
    return sid, loaded.messages, denials, list(loaded.warnings), loaded.entries


def _entrypoint() -> str:
    """Who drives us: `cli` unless a wrapping runtime (an SDK) says otherwise."""
    return (os.environ.get("CODELOOP_ENTRYPOINT") or os.environ.get("CLAUDE_CODE_ENTRYPOINT") or "cli").strip()


def _feature_flags() -> dict:
    return {}


def build_conversation(args: argparse.Namespace, *, interactive: bool) -> tuple[Conversation, list[str]]:
    from codeloop.context.prompt import build_system_prompt, user_context
    from codeloop.providers.anthropic import AnthropicProvider
    from codeloop.providers.errors import AuthenticationError
    from codeloop.session import store

    cwd = Path.cwd().resolve()
    if args.max_turns is not None and args.max_turns < 1:
        raise SetupError("--max-turns must be a positive integer")
    session_id, messages, denials, warnings, entries = _load_history(args, cwd)
    try:
        provider = AnthropicProvider()
    except AuthenticationError as exc:
        raise SetupError(str(exc)) from None
    from codeloop.tools.agents import load_agent_definitions

    definitions = load_agent_definitions(cwd, store.config_dir())
    warnings.extend(getattr(definitions, "warnings", []))
    fallback = [resolve_model(m) for m in (args.fallback_model or "").split(",") if m.strip()]
    if args.token_budget is not None and args.token_budget < 1:
        raise SetupError("--token-budget must be a positive number of tokens")
    config = ConversationConfig(
        cwd=cwd, model=resolve_model(args.model), tools=_tools(args, definitions), fallback_models=fallback,
        agent_definitions=dict(definitions), entrypoint=_entrypoint(), feature_flags=_feature_flags(),
        token_budget=args.token_budget,
        system_prompt=build_system_prompt(cwd, custom=args.system_prompt, append=args.append_system_prompt),
        user_context=user_context(cwd, store.config_dir()), policy=_permission_policy(args),
        max_turns=args.max_turns, persist=not args.no_session_persistence, interactive=interactive)
    conv = Conversation(config, provider, session_id=session_id, messages=messages, denials=denials,
                        entries=entries)
    return conv, warnings
