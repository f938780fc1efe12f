"""The everyday built-ins added for issue 27, registered beside `commands.BUILTINS`.

Each handler lives in its own module and is imported only when its command first runs (start-up
time matters: `CommandRegistry.load` runs for every REPL), so the table here names the module
and function. Information commands: /context, /mcp, /agents, /hooks, /doctor (`commands_info`,
`context_usage`); memory: /memory and the `#` shortcut (`memory`); the session's set-up:
/add-dir, /sandbox, /output-style, /vim (`commands_setup`); /export (`export`); prompt commands
the model answers: /review, /security-review, /statusline (`commands_review`); /plugin
(`plugin_command`, issue 28).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

# This module imports nothing of `commands` (which imports it): it hands over plain specs, and
# `CommandRegistry.load` makes them `Command`s.
Runner = Callable[[Any, str], Awaitable[Any]]


def lazy(module: str, name: str) -> Runner:
    """A handler that imports `codeloop.input.<module>` when the command first runs."""
    async def run(host: Any, args: str) -> Any:
        handler: Runner = getattr(importlib.import_module(f"codeloop.input.{module}"), name)
        return await handler(host, args)
    run.__name__ = name
    return run


# Read-only git and gh calls the review prompts run without asking, for their own query only.
REVIEW_TOOLS = ("Bash(git diff:*)", "Bash(git status:*)", "Bash(git log:*)", "Bash(git show:*)",
                "Bash(git remote show:*)", "Bash(gh pr view:*)", "Bash(gh pr diff:*)", "Bash(gh pr list:*)",
                "Read", "Glob", "Grep")


def spec(name: str, description: str, kind: str, module: str, function: str, **kw: Any) -> dict[str, Any]:
    """The fields of a `commands.Command`; `kind` is a CommandType value (local | prompt)."""
    return {"name": name, "description": description, "type": kind, "handler": lazy(module, function), **kw}


def more_builtins() -> tuple[dict[str, Any], ...]:
    L, P = "local", "prompt"
    return (
        spec("context", "Show what fills the context window, as a grid", L, "context_usage", "context_command",
             immediate=True),
        spec("mcp", "Show MCP servers, their status and tools (reconnect, login, logout <name>)", L, "commands_info",
             "mcp_command", argument_hint="[reconnect <server>]"),
        spec("memory", "Show the memory files in use; open one in $EDITOR", L, "memory", "memory_command",
             argument_hint="[user|project|local|path]"),
        spec("agents", "List the agent definitions (built-in, user, project)", L, "commands_info", "agents_command",
             immediate=True),
        spec("hooks", "Show the configured hooks by event and matcher", L, "commands_info", "hooks_command",
             immediate=True),
        spec("doctor", "Check the installation: Python, sandbox, ripgrep, API key, settings, MCP", L,
             "commands_info", "doctor_command", immediate=True),
        spec("add-dir", "Add a working directory for this session", L, "commands_setup", "add_dir_command",
             argument_hint="<path>"),
        spec("sandbox", "Show the sandbox status and settings (on|off toggles it)", L, "commands_setup",
             "sandbox_command", argument_hint="[on|off]"),
        spec("output-style", "Show or select the output style", L, "commands_setup", "output_style_command",
             argument_hint="[name]"),
        spec("vim", "Toggle between vim and normal editing", L, "commands_setup", "vim_command"),
        spec("export", "Export the conversation as markdown to a file or the clipboard", L, "export",
             "export_command", argument_hint="[file]"),
        spec("review", "Review the current changes, or a pull request", P, "commands_review", "review",
             argument_hint="[PR number]", allowed_tools=REVIEW_TOOLS),
        spec("security-review", "Review the pending changes on this branch for security issues", P,
             "commands_review", "security_review", allowed_tools=REVIEW_TOOLS),
        spec("statusline", "Have the model set up the statusLine setting", P, "commands_review", "statusline",
             argument_hint="[what to show]"),
        spec("plugin", "Manage plugins and marketplaces (install, enable, disable, list…)", L, "plugin_command",
             "plugin_command", aliases=("plugins",),
             argument_hint="[install|enable|disable|uninstall|list|marketplace] …"),
    )
