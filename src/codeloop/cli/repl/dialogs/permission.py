"""The REPL's permission dialog: what the user is asked before a tool runs, and what "don't ask
again" means for each kind of tool (as Claude Code does it).

Edit/Write are checked first against the file as it is (was it read? does `old_string` occur
exactly once?): an edit that cannot apply is refused with the tool's own error, without a
question, and the model tries again. One that can is shown — the coloured diff, or the new
file — inside the dialog. "Yes, and don't ask again" then switches the session to acceptEdits.
For Bash it offers a prefix rule (`Bash(git status:*)`) that is added to the session's rules
and saved to `.claude/settings.local.json`; for other tools it is remembered for this session.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

PREVIEW_MAX_BYTES = 2 * 2**20   # larger files are asked about without a diff
# Launchers that run whatever follows: never generalised to a prefix (the user would be allowing
# arbitrary code), only the exact command is remembered.
_LAUNCHERS = frozenset({"python", "python3", "node", "bash", "sh", "zsh", "env", "sudo", "xargs", "perl", "ruby",
                        "eval", "exec", "nohup", "timeout", "nice", "time", "watch", "bun", "deno", "npx", "uvx",
                        "su", "doas", "command", "builtin", "find"})
# Programs whose first argument is a subcommand worth keeping in the prefix (`git status:*`).
_SUBCOMMANDS = frozenset({"git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "kubectl", "pip", "pip3", "uv",
                          "poetry", "make", "gh", "brew", "apt", "apt-get", "systemctl", "dotnet", "mvn", "gradle"})
_COMPOUND = ("&&", "||", ";", "|", "`", "$(", ">", "<", "&", "\n")


def bash_rule(command: str) -> str:
    """The rule "don't ask again" saves for a Bash command: a prefix, or the exact command."""
    exact = f"Bash({command.strip()})"
    if any(op in command for op in _COMPOUND):
        return exact
    try:
        words = shlex.split(command)
    except ValueError:
        return exact
    if not words or words[0] in _LAUNCHERS or "/" in words[0] or "=" in words[0]:
        return exact
    prefix = words[0]
    if prefix in _SUBCOMMANDS:  # `git:*` would allow every git command: the subcommand or nothing
        if len(words) < 2 or not words[1][:1].isalnum() or "/" in words[1]:
            return exact
        prefix = f"{prefix} {words[1]}"
    return f"Bash({prefix}:*)"


def _subagent_running(repl: Any) -> bool:
    return any(r.name in ("Task", "Agent") for r in repl.renderer.progress.running.values())


def check_edit(repl: Any, tool_name: str, raw: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """(error, unified diff, created?) for an Edit/Write about to be asked: the error the tool
    would raise on the file as it is now, else what it would change (None when not shown)."""
    from codeloop.tools.base import ToolError
    from codeloop.tools.builtin.edit import apply_edit
    from codeloop.tools.builtin.write import ensure_fresh_read, unified_diff

    ctx = repl.conv.tool_context
    path = ctx.resolve(str(raw.get("file_path") or ""))
    try:
        exists = path.is_file()
        big = exists and path.stat().st_size > PREVIEW_MAX_BYTES
        old = path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff") if exists and not big else ""
    except OSError:
        return None, None, False   # the tool itself reports what is wrong with the path
    # A subagent keeps its own record of the files it read; only the main session's is at hand.
    check_read = exists and not _subagent_running(repl)
    try:
        if tool_name == "Write":
            if check_read:
                ensure_fresh_read(path, ctx)
            new = str(raw.get("content") or "")
        else:
            old_s, new_s = str(raw.get("old_string") or ""), str(raw.get("new_string") or "")
            if old_s == new_s:
                raise ToolError("No changes to make: old_string and new_string are exactly the same.")
            if not exists:
                if old_s:
                    from codeloop.tools.builtin.read import missing_file_error
                    raise missing_file_error(path, ctx)
                new = new_s
            else:
                if check_read:
                    ensure_fresh_read(path, ctx)
                if big:
                    return None, None, False
                if not old_s and old.strip():
                    raise ToolError("Cannot create new file - file already exists. Use a non-empty old_string "
                                    "to edit it, or Write to replace it.")
                new = apply_edit(old, old_s, new_s, bool(raw.get("replace_all")))[0] if old_s else new_s
    except ToolError as exc:
        return str(exc), None, False
    if big:
        return None, None, False
    return None, unified_diff(old if exists else "", new, path), not exists


async def ask_user(repl: Any, tool: Any, inp: Any, block: dict[str, Any]) -> Any:
    from codeloop.abort import AbortReason
    from codeloop.cli.repl.render import tool_label
    from codeloop.permissions.guarded import OUTSIDE_SANDBOX, wants_outside
    from codeloop.permissions.policy import PermissionMode, denial_message
    from codeloop.tools.base import PermissionBehavior, PermissionDecision

    raw = dict(block.get("input") or {})
    if tool.name in ("AskUserQuestion", "ExitPlanMode"):  # forms, not yes/no prompts (dialogs/tool_forms.py)
        from codeloop.cli.repl.dialogs.tool_forms import approve_plan, ask_questions
        return await (ask_questions if tool.name == "AskUserQuestion" else approve_plan)(repl, raw)
    policy = repl.conv.config.policy
    cwd: Path = repl.conv.config.cwd
    if tool.name in ("Edit", "Write"):
        error, diff, created = check_edit(repl, tool.name, raw)
        if error is not None:  # it would fail: no question, the model reads why and tries again
            return PermissionDecision(PermissionBehavior.DENY, error)
        verb = "Create" if created else "Edit" if tool.name == "Edit" else "Overwrite"
        if diff:
            repl.renderer.preview(f"{verb} file {raw.get('file_path', '')}", diff, created=created)
        title = f"Do you want to {'create' if created else 'make this edit to'} {Path(str(raw.get('file_path'))).name}?"
        always: tuple[str, str] | None = ("always-edits", "Yes, allow all edits during this session (shift+tab)")
        rule = None
        if policy.mode is PermissionMode.BYPASS:   # a guarded folder: once, never a switch out of bypass
            always = None
    else:
        rule = tool.name
        if tool.name == "Bash" and isinstance(raw.get("command"), str):
            rule = bash_rule(raw["command"])
        title = f"Allow {tool_label(tool.name, raw)}?"
        if tool.name == "WebFetch" and isinstance(raw.get("url"), str):  # the domain, not every URL
            from codeloop.permissions.hosts import describe
            from codeloop.permissions.rules import url_host  # its one spelling: `0x7f.1` saves 127.0.0.1
            host = url_host(raw["url"]) or ""
            rule = f"WebFetch(domain:{host})"
            if host and describe(host) != host:   # say where `http://2852039166/` really goes
                title = f"Allow {tool_label(tool.name, raw)}? It fetches from {describe(host)}."
        where = f"(saved to {Path('.claude') / 'settings.local.json'})" if tool.name == "Bash" else "this session"
        always = ("always", f"Yes, and don't ask again for {rule} {where}")
        if tool.name == "Bash" and wants_outside(inp, raw) and policy.sandbox is not None \
                and policy.sandbox.enabled:   # leaving the sandbox is approved call by call, never saved
            title = f"Allow {tool_label(tool.name, raw)} outside the sandbox? {OUTSIDE_SANDBOX}."
            always = None
    answer = await repl.choose(title, [("yes", "Yes"), *([always] if always else []),
                                       ("no", "No, and tell Claude what to do differently (esc)")])
    if answer == "always-edits":
        policy.set_mode(PermissionMode.ACCEPT_EDITS)
        repl._invalidate()
    elif answer == "always" and rule is not None:
        policy.allow_rules([rule])
        if tool.name == "Bash":
            from codeloop.config.settings_write import SettingsWriteError, add_permission_rule
            try:
                saved = add_permission_rule(cwd, rule)
                repl.show(f"  ⎿  Saved {rule} to {saved}", style="info")
            except SettingsWriteError as exc:
                repl.show(f"  ⎿  {rule} allowed for this session only: {exc}", style="warning")
    if answer in ("yes", "always", "always-edits"):
        return PermissionDecision(PermissionBehavior.ALLOW)
    # Like Claude Code, a refusal also stops the turn: the user says what to do instead.
    repl.dispatcher.interrupt(AbortReason.USER)
    ask = PermissionDecision(PermissionBehavior.ASK)
    return PermissionDecision(PermissionBehavior.DENY, denial_message(tool.name, ask, interactive=True))
