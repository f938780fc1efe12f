"""The session set-up built-ins: /add-dir, /sandbox, /output-style and /vim.

/add-dir gives the session another working directory the way `--add-dir` does at start-up: the
permission policy's `additional_directories` (edits there count as inside the workspace) and the
sandbox's writable `roots` — the policy and the Bash tool share that one Sandbox object, and a
successor session (/clear, /resume) shares the policy, so all of them see it at once.

/sandbox shows whether Bash runs in the sandbox, whether bubblewrap starts here, and the
`sandbox` settings in force; `/sandbox on|off` switches it for this session unless managed
settings decide it, and refuses to switch on where bubblewrap cannot start (Bash would refuse
every command).

/output-style lists the styles (default, the built-ins, custom ones from output-styles folders)
or selects one: the next prompt is built with it, and it is saved as `outputStyle` in the
project's `.claude/settings.local.json`, as Claude Code saves it.

/vim flips editorMode between vim and normal through the front end's `set_editor_mode`, the
hook the REPL's vim editing implements (`toggle_editor_mode` is the one place that asks it).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.input.commands import CommandOutcome

if TYPE_CHECKING:
    from codeloop.input.commands import CommandHost
    from codeloop.session.conversation import Conversation


# -- /add-dir -------------------------------------------------------------------------------------

def add_directory(conv: Conversation, raw: str) -> str:
    """Add `raw` (relative to the cwd, `~` expanded) as a working directory; the line to show."""
    policy = conv.config.policy
    path = (conv.config.cwd / os.path.expanduser(raw)).resolve()
    if not path.is_dir():
        return f"/add-dir: {path} is not a directory" if path.exists() else f"/add-dir: {path} does not exist"
    if policy.inside_workdirs(str(path)):
        return f"{path} is already a working directory of this session."
    policy.additional_directories.append(str(path))
    sandbox = policy.sandbox
    if sandbox is not None and str(path) not in sandbox.roots:
        sandbox.roots.append(str(path))
    where = " (writable inside the sandbox too)" if sandbox is not None and sandbox.enabled else ""
    return f"Added {path} as a working directory for this session{where}."


async def add_dir_command(host: CommandHost, args: str) -> CommandOutcome:
    if not args.strip():
        dirs = host.conv.config.policy.additional_directories
        return CommandOutcome("Usage: /add-dir <path>" + (f"\nAdded so far: {', '.join(dirs)}" if dirs else ""))
    return CommandOutcome(add_directory(host.conv, args.strip()))


# -- /sandbox -------------------------------------------------------------------------------------

def _managed_sandbox(conv: Conversation) -> bool:
    """Whether managed settings decide `sandbox.enabled` (then the user may not switch it)."""
    sources = getattr(conv.settings, "sources", None) or []
    return any(s.scope.value == "managed" and "enabled" in (s.data.get("sandbox") or {}) for s in sources)


def sandbox_status(conv: Conversation) -> str:
    from codeloop.sandbox.bwrap import probe

    sandbox = conv.config.policy.sandbox
    on = sandbox is not None and sandbox.enabled
    p = probe()
    lines = [f"Sandbox: {'on — Bash commands run inside bubblewrap' if on else 'off — Bash commands run unsandboxed'}",
             f"bubblewrap: {p.path + ' starts a sandbox' if p.error is None and p.path else p.error}"]
    if sandbox is not None:
        s = sandbox.settings
        lines += [f"  auto-allow sandboxed Bash: {s.auto_allow}",
                  f"  allow unsandboxed (dangerouslyDisableSandbox): {s.allow_unsandboxed}",
                  f"  fail if unavailable: {s.fail_if_unavailable}",
                  f"  excluded commands: {', '.join(s.excluded_commands) or '(none)'}",
                  f"  network: {', '.join(s.allowed_domains) or 'no network'}",
                  f"  writable: {', '.join([*sandbox.roots, *s.allow_write])}",
                  f"  read-only inside those: {', '.join(s.deny_write) or '(none)'}",
                  f"  hidden: {', '.join(s.deny_read) or '(none beyond Read deny rules and credentials)'}"]
    lines.append("Managed settings decide the sandbox here." if _managed_sandbox(conv)
                 else "/sandbox on | off switches it for this session.")
    return "\n".join(lines)


def set_sandbox(conv: Conversation, enable: bool) -> str:
    from codeloop.sandbox.bwrap import probe

    policy = conv.config.policy
    sandbox = policy.sandbox
    if (sandbox is not None and sandbox.enabled) == enable:
        return f"The sandbox is already {'on' if enable else 'off'}."
    if _managed_sandbox(conv):
        return "The sandbox is set by managed settings; it cannot be switched here."
    if enable and ((p := probe()).error is not None or p.path is None):
        return f"Sandbox not switched on: {p.error}"
    if sandbox is None:   # none was built at start-up: build it as the assembly does (session.assembly_parts)
        from codeloop.config.settings import claude_user_dir
        from codeloop.sandbox.runtime import session_sandbox
        from codeloop.session import store

        merged = getattr(conv.settings, "merged", None) or {}
        sandbox, _ = session_sandbox(merged, force_enable=True,
                                     roots=[str(conv.config.cwd), *policy.additional_directories],
                                     protected_dirs=[str(store.config_dir()), str(claude_user_dir())],
                                     read_deny=policy.read_deny_specs)
        policy.sandbox = conv.tool_context.sandbox = sandbox
    else:   # the policy and the Bash tool hold this same object: both see the switch
        sandbox.settings = replace(sandbox.settings, enabled=enable)
    return f"Sandbox {'on: Bash commands run inside bubblewrap' if enable else 'off: Bash commands run unsandboxed'}" \
           " for this session."


async def sandbox_command(host: CommandHost, args: str) -> CommandOutcome:
    arg = args.strip().lower()
    if not arg:
        return CommandOutcome(sandbox_status(host.conv))
    sandbox = host.conv.config.policy.sandbox
    if arg == "toggle":
        arg = "off" if sandbox is not None and sandbox.enabled else "on"
    if arg not in ("on", "off"):
        return CommandOutcome("Usage: /sandbox [on|off|toggle]")
    return CommandOutcome(set_sandbox(host.conv, arg == "on"))


# -- /output-style ------------------------------------------------------------------------------------

def _style_dirs(conv: Conversation) -> list[Any]:
    from codeloop.config.settings import claude_user_dir
    from codeloop.context.output_styles import style_dirs
    from codeloop.session import store

    return style_dirs(conv.config.cwd, [store.config_dir(), claude_user_dir()])


def available_styles(conv: Conversation) -> dict[str, str]:
    """name → description (source) of every style this session can select."""
    from codeloop.context.output_styles import BUILT_IN, custom_styles

    custom, _ = custom_styles(_style_dirs(conv))
    out = {"default": "Claude's default: concise, for software engineering"}
    for name, style in {**BUILT_IN, **custom}.items():
        about = style.description or (style.instructions.splitlines()[0][:70] if style.instructions else "")
        out[name] = f"{about} ({style.source.value})"
    return out


def save_local_setting(cwd: Path, key: str, value: Any) -> Path:
    """Set `key` in the project's `.claude/settings.local.json`, keeping everything else there."""
    from codeloop.config.settings_write import local_settings_path
    from codeloop.fsutil import atomic_write_json

    path = local_settings_path(cwd)
    data: Any = {}
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a JSON object; not changed")
    data[key] = value
    atomic_write_json(path, data, indent=2)
    return path


def select_style(conv: Conversation, name: str) -> str:
    from codeloop.context.output_styles import resolve_output_style

    style, warnings = resolve_output_style(name, _style_dirs(conv))
    if warnings:
        return warnings[-1].removeprefix("settings: ").replace("; using the default style", "")
    chosen = style.name if style is not None else "default"
    loader = conv.config.load_context
    if loader is not None and hasattr(loader, "output_style"):
        loader.output_style = style     # the system prompt of the next query is built with it
    conv.output_style = chosen
    try:
        where = f"; saved to {save_local_setting(conv.config.cwd, 'outputStyle', chosen)}"
    except (OSError, ValueError) as exc:
        where = f" (not saved: {exc})"
    custom = loader is not None and getattr(loader, "custom", None) is not None
    note = " (--system-prompt replaces the prompt, so the style has no effect in this session)" if custom else ""
    return f"Output style set to {chosen}{where}.{note}"


async def output_style_command(host: CommandHost, args: str) -> CommandOutcome:
    conv = host.conv
    if args.strip():
        return CommandOutcome(select_style(conv, args.strip()))
    styles = available_styles(conv)
    host.show(f"Output style: {conv.output_style}")
    choice = await host.choose("Choose an output style", [(n, f"{n} — {d}") for n, d in styles.items()])
    if choice is None:
        return CommandOutcome(f"Output style unchanged: {conv.output_style}")
    return CommandOutcome(select_style(conv, choice))


# -- /vim -----------------------------------------------------------------------------------------

def toggle_editor_mode(host: CommandHost) -> str:
    """Flip editorMode (vim ⇄ normal) for this session through the front end's `toggle_vim()`
    (the REPL's vim editing: True when vim is on now). The line to show."""
    toggle = getattr(host, "toggle_vim", None)
    if toggle is None:
        return "Vim editing is not available in this front end (editorMode stays normal)."
    return ("Editor mode set to vim. Esc switches to normal mode, i back to insert." if toggle()
            else "Editor mode set to normal.")


async def vim_command(host: CommandHost, args: str) -> CommandOutcome:
    return CommandOutcome(toggle_editor_mode(host))
