"""The assembly's parts, each made from RunOptions: the history to start from, the provider,
the permission policy with its sandbox, the built-in tools, the output style, the MCP servers,
and the MCP tool that answers permission prompts (`--permission-prompt-tool`).

Every failure is a `SetupError` with one line for the user.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.session.options import NoKeyError, RunOptions, SessionEntry, SetupError

if TYPE_CHECKING:
    from codeloop.session.conversation import Conversation
    from codeloop.session.parts import SessionHost


@dataclass(eq=False)
class History:
    """Where a session starts: its id, messages, permission denials and transcript entries."""
    session_id: str
    messages: list[Any] = field(default_factory=list)
    denials: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hold: Any = None   # session.hold.SessionHold: this process writes the session (None: taken on first write)


def _denials(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: e.get(k) for k in ("tool_name", "tool_use_id", "tool_input")}
            for e in entries if e.get("type") == "permission-denial"]


def load_history(options: RunOptions) -> History:
    """A new session, or the one --resume / --continue names (forked or truncated as asked)."""
    from codeloop.session import store

    h, cwd = options.history, options.cwd
    if h.entry is SessionEntry.NEW:
        if h.session_id is not None:
            if store.session_path(cwd, h.session_id).exists():
                raise SetupError(f"session {h.session_id} already exists; use --resume {h.session_id} to continue it")
            return History(h.session_id)
        return History(store.new_session_id())
    if h.entry is SessionEntry.CONTINUE:
        sid = store.latest_session(cwd)
        if sid is None:
            raise SetupError(f"no previous session to continue in {cwd}")
        path = store.session_path(cwd, sid)
    else:
        sid = _resume_id(cwd, h.resume or "")
        found = store.find_session(sid, cwd)
        if found is None:
            raise SetupError(f"No conversation found with session ID: {sid}")
        path = found
    hold = None
    if h.fork and h.persist and not h.resume_at:   # --fork-session of a live session: up to its last finished turn
        from codeloop.session.claim import fork_busy
        from codeloop.session.hold import holder

        if (busy := holder(path)) is not None:
            got = fork_busy(path, sid, cwd, busy)
            return History(got.session_id, got.messages, _denials(got.entries), got.entries, got.warnings,
                           hold=got.hold)
    if h.persist and not h.fork:   # one writer per session: hold it, or fork it (session.claim)
        from codeloop.session.claim import SessionBusy, claim
        from codeloop.session.resume import ResumeError

        try:
            got = claim(path, sid, cwd, refuse=not h.fork_busy, at=h.resume_at)
        except (SessionBusy, ResumeError, OSError) as exc:
            raise SetupError(str(exc)) from None
        if got.forked_from is not None:
            return History(got.session_id, got.messages, _denials(got.entries), got.entries,
                           [got.notice, *got.warnings], hold=got.hold)
        hold = got.hold
    try:
        return _load(options, sid, path, hold)
    except BaseException:
        if hold is not None:
            hold.release()
        raise


def _load(options: RunOptions, sid: str, path: Path, hold: Any) -> History:
    from codeloop.session import store

    h, cwd = options.history, options.cwd
    if h.resume_at:   # truncating resume: history up to that record (the SDK's resume_session_at)
        return _load_truncated(options, sid, path, hold)
    from codeloop.session.resume import load_from_last_boundary

    # After a compaction only what follows the last boundary is history; the rest stays on disk.
    loaded = load_from_last_boundary(path)
    if h.fork:
        # the fork starts as a copy of the original transcript under a new id; the original is untouched
        import shutil
        sid = store.new_session_id()
        new_path = store.session_path(cwd, sid)
        new_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, new_path)
    return History(sid, loaded.messages, _denials(loaded.entries), loaded.entries, list(loaded.warnings), hold)


def _resume_id(cwd: Path, value: str) -> str:
    from codeloop.session import store
    from codeloop.session.store import find_session_by_name

    try:
        return store.validate_session_id(value)
    except ValueError as exc:
        named = find_session_by_name(cwd, value)  # a name given with -n/--name
        if named is None:
            raise SetupError(str(exc)) from None
        return named


def _load_truncated(options: RunOptions, sid: str, path: Path, hold: Any) -> History:
    """--resume-session-at: a fork gets only the kept records; otherwise the same file goes on
    from `at`, the records after it retracted (session.resume.branch_from)."""
    from codeloop.session import store
    from codeloop.session.resume import ResumeError, branch_from, load_until
    from codeloop.session.transcript import TranscriptError, TranscriptWriter, _scan_last_uuid, encode_entry

    h, cwd = options.history, options.cwd
    at = h.resume_at or ""
    try:
        loaded, dropped = load_until(path, at, h.resume_drops_turn)
        if h.fork:
            sid = store.new_session_id()
            new_path = store.session_path(cwd, sid)
            new_path.parent.mkdir(parents=True, exist_ok=True)
            new_path.write_bytes(b"".join(encode_entry({**e, "sessionId": sid} if "sessionId" in e else e)
                                          for e in loaded.entries))
        elif dropped or _scan_last_uuid(path) != at:   # another branch's leaf: go on from there
            writer = TranscriptWriter(path, sid, cwd)
            try:
                branch_from(writer, at, dropped)
                writer.sync()
            finally:
                writer.close()
            if hold is not None:
                hold.settle(at)   # a fork made now copies this branch
    except (ResumeError, TranscriptError, OSError) as exc:
        raise SetupError(str(exc)) from None
    return History(sid, loaded.messages, _denials(loaded.entries), loaded.entries, list(loaded.warnings), hold)


# -- provider ------------------------------------------------------------------------------------

def make_provider(options: RunOptions, host: SessionHost, session_id: str) -> tuple[Any, str]:
    """(provider, model id). A missing key is a NoKeyError naming where to get one and the alternatives."""
    from codeloop.providers.errors import AuthenticationError
    from codeloop.providers.select import make_provider as make

    m = options.model
    if m.provider == "local":
        return _start_local(options, host)
    try:
        if m.provider == "anthropic":
            from codeloop.config.install_id import metadata_user_id
            from codeloop.providers.anthropic import AnthropicProvider

            key = _api_key_from_helper(m.api_key_helper) if m.api_key_helper else None
            return (AnthropicProvider(api_key=key, betas=list(m.betas), user_id=metadata_user_id(session_id)),
                    m.model or "")
        return make(m.provider), m.model or ""
    except AuthenticationError as exc:
        if m.provider != "anthropic":
            raise SetupError(str(exc)) from None
        from codeloop.session.local_profile import no_key_message
        from codeloop.session.store import config_dir

        raise NoKeyError(no_key_message(str(exc), config_dir())) from None
    except ValueError as exc:
        raise SetupError(str(exc)) from None


def _api_key_from_helper(command: str) -> str:
    """`apiKeyHelper`: a command whose stdout is the API key (trusted settings only)."""
    import subprocess

    try:
        out = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"apiKeyHelper failed: {exc}") from None
    if out.returncode != 0 or not out.stdout.strip():
        raise SetupError(f"apiKeyHelper exited {out.returncode} without printing a key: {out.stderr.strip()[:200]}")
    return out.stdout.strip()


def _start_local(options: RunOptions, host: SessionHost) -> tuple[Any, str]:
    """The embedded model: assembled and verified if needed (the host shows progress), started."""
    from codeloop.providers.local import context_size
    from codeloop.providers.local_model import LocalModelError
    from codeloop.session.local_profile import start_local

    # the window the runtime was started with is what compaction must plan for
    os.environ.setdefault("CODELOOP_CONTEXT_WINDOW", str(context_size()))
    try:
        # a keyless run has said at the door which model serves it: no second line
        return start_local(options.model.model, progress=host.progress,
                           notice=None if options.model.keyless else host.notice)
    except LocalModelError as exc:
        raise SetupError(str(exc)) from None


# -- policy, tools, style --------------------------------------------------------------------------

def make_policy(options: RunOptions) -> Any:
    from codeloop.permissions.policy import PermissionPolicy

    p, settings, cwd = options.permissions, options.settings, options.cwd
    dirs = [str(d) for d in p.add_dirs]
    policy = PermissionPolicy(mode=p.mode, allow=list(p.allow), deny=list(p.deny), cwd=cwd,
                              settings_rules=[(str(b.value), r, o) for b, r, o in settings.permission_rules()],
                              additional_directories=dirs, bypass_disabled=settings.bypass_disabled(),
                              auto_rules=p.auto_rules)
    if p.sandbox or p.sandbox_default or "sandbox" in settings.merged:   # imported only when asked for
        from codeloop.config.settings import claude_user_dir
        from codeloop.sandbox.runtime import session_sandbox
        from codeloop.session import store
        policy.sandbox, policy.rule_errors[:0] = session_sandbox(
            settings.merged, force_enable=p.sandbox or p.sandbox_default, roots=[str(cwd), *dirs],
            protected_dirs=[str(store.config_dir()), str(claude_user_dir())], read_deny=policy.read_deny_specs)
    return policy


def make_tools(options: RunOptions) -> list[Any]:
    from codeloop.tools.registry import builtin_tools, select_tools

    tools = builtin_tools(lazy=True, agent_definitions=dict(options.agents) or None)
    known = {t.name for t in tools}
    unknown = [n for n in (options.tools or ()) if n not in known]
    if unknown:
        raise SetupError(f"unknown tool(s) in --tools: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return select_tools(tools, allowed=list(options.tools) if options.tools is not None else None,
                        disallowed=list(options.permissions.deny))


def output_style(options: RunOptions, files: Any = None) -> tuple[Any, list[str]]:
    """The `outputStyle` setting's style: built-in, or a custom one from the output-styles folders
    of the sources in use. A project's styles, like its CLAUDE.md, are prompt text and need no
    trust; the setting that selects one comes from settings, which do."""
    from codeloop.config.settings import claude_user_dir
    from codeloop.context.output_styles import resolve_output_style, style_dirs
    from codeloop.session import store

    sources = options.setting_sources
    # An untrusted folder may name a style (the name runs nothing) but not pick its own prompt text
    # to replace the system prompt with: then only built-in and user styles answer to the name.
    project = sources is None or "project" in sources or "local" in sources
    if not options.trusted and _chosen_in_project(options.settings, "outputStyle"):
        project = False
    dirs = style_dirs(options.cwd, [store.config_dir(), claude_user_dir()], user=sources is None or "user" in sources,
                      project=project)
    return resolve_output_style(options.settings.merged.get("outputStyle"), dirs, files)


def _chosen_in_project(settings: Any, key: str) -> bool:
    """Whether the value of `key` in force comes from the folder's own settings files."""
    from codeloop.config.settings import PROJECT_SCOPES

    source = next((s for s in settings.sources if key in s.data), None)   # highest precedence first
    return source is not None and source.scope in PROJECT_SCOPES


def style_name(style: Any, options: RunOptions) -> str:
    """The output style system/init reports: the one in use, else the name configured (as Claude
    Code reports it, even one with no definition here), else "default"."""
    configured = options.settings.merged.get("outputStyle")
    if style is not None:
        return str(style.name)
    return configured.strip() if isinstance(configured, str) and configured.strip() else "default"


# -- MCP -------------------------------------------------------------------------------------------

async def start_mcp(options: RunOptions) -> tuple[Any, list[str]]:
    """Start the configured MCP servers (in parallel, each bounded by MCP_TIMEOUT): (manager or
    None, warnings). The MCP SDK (and mcp.config) is imported only when servers are configured."""
    from codeloop.mcp.sources import load_mcp_configs

    cwd, settings = options.cwd, options.settings
    configs, errors = load_mcp_configs(cwd, settings_servers=settings.mcp_servers(),
                                       cli_configs=list(options.mcp.configs), strict=options.mcp.strict,
                                       include_project=options.trusted)
    warnings = [f"mcp: {e}" for e in errors]
    if options.plugins and not options.mcp.strict:
        configs, more = _plugin_servers(options.plugins, configs)
        warnings += more
    if not options.trusted and (cwd / ".mcp.json").is_file():
        warnings.append(f"ignored MCP servers from {cwd / '.mcp.json'}: this folder is not trusted "
                        "(trust it in an interactive codeloop or Claude Code session, pass --trust, "
                        "or set CODELOOP_TRUST=1)")
    if not configs:
        return None, warnings
    from codeloop.mcp.client import McpManager

    manager = McpManager()
    manager.sign_in = False   # no start-up waits on a person: an OAuth server is needs-auth until /mcp login
    await manager.start(configs)
    return manager, warnings


def _plugin_servers(plugins: Any, configs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The plugins' MCP servers after the configured ones, named `plugin:<plugin>:<server>` as
    Claude Code names them (their tools: mcp__plugin_<plugin>_<server>__<tool>)."""
    from codeloop.mcp.config import Source, parse_server

    out, warnings = dict(configs), []
    for plugin in plugins:
        for name, raw in plugin.mcp_servers.items():
            full = f"plugin:{plugin.name}:{name}"
            try:
                out[full] = parse_server(full, raw, Source.PLUGIN)
            except ValueError as exc:
                warnings.append(f"mcp: plugin {plugin.name} ({plugin.root}): MCP server {name!r}: {exc}")
    return out, warnings


def session_hooks(options: RunOptions) -> dict[str, Any]:
    """The settings' hooks, then the plugins' (none with --bare)."""
    if not options.hooks:
        return {}
    hooks = options.settings.hooks()
    if not options.plugins:
        return hooks
    from codeloop.config.plugins import merged_hooks

    return merged_hooks(hooks, options.plugins)


def permission_prompt_tool(mcp: Any, name: str, conv: Callable[[], Conversation]) -> Any:
    """`--permission-prompt-tool mcp__server__tool`: an MCP tool answers permission prompts, with
    Claude Code's protocol — it gets {tool_name, input, tool_use_id} and answers JSON
    {"behavior": "allow", "updatedInput": …} or {"behavior": "deny", "message": …}."""
    tool = next((t for t in (mcp.tools() if mcp is not None else []) if t.name == name), None)
    if tool is None:
        raise SetupError(f"--permission-prompt-tool: no such MCP tool {name!r} (is its server configured and up?)")

    async def ask(asked_tool: Any, inp: Any, block: dict[str, Any]) -> Any:
        import json

        from codeloop.tools.base import PermissionBehavior, PermissionDecision, ToolError

        payload = {"tool_name": asked_tool.name, "input": dict(block.get("input") or {}),
                   "tool_use_id": block.get("id")}
        try:
            result = await tool.call(tool.input_model.model_validate(payload), conv().tool_context)
            content = result.content if isinstance(result.content, str) else "".join(
                b.get("text", "") for b in result.content if b.get("type") == "text")
            answer = json.loads(content)
        except (ToolError, ValueError) as exc:
            return PermissionDecision(PermissionBehavior.DENY, f"permission prompt tool {name} failed: {exc}")
        if answer.get("behavior") == "allow":
            return PermissionDecision(PermissionBehavior.ALLOW, "", answer.get("updatedInput"))
        return PermissionDecision(PermissionBehavior.DENY, str(answer.get("message") or f"{name} denied it"))

    return ask
