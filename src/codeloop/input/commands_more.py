"""The everyday built-ins added for issue 27, registered beside `commands.BUILTINS`.

Each handler lives in its own module and is imported only when its command first runs (start-up
time matters: `CommandRegistry.load` runs for every REPL), so the table here names the module
and function. Information commands: /context, /mcp, /agents, /hooks, /doctor (`commands_info`,
`context_usage`); memory: /memory and the `#` shortcut (`memory`); the session's set-up:
/add-dir, /sandbox, /output-style, /vim (`commands_setup`); /export (`export`); prompt commands
the model answers: /review, /security-review, /statusline (`commands_review`).
"""

from __future__ import annotations

import importlib

from codeloop.input.commands import Command, CommandHost, CommandOutcome, CommandType, Handler


def lazy(module: str, name: str) -> Handler:
    """A handler that imports `codeloop.input.<module>` when the command first runs."""
    async def run(host: CommandHost, args: str) -> CommandOutcome:
        handler: Handler = getattr(importlib.import_module(f"codeloop.input.{module}"), name)
        return await handler(host, args)
    run.__name__ = name
    return run


L, P = CommandType.LOCAL, CommandType.PROMPT


def more_builtins() -> tuple[Command, ...]:
    return (
        Command("context", "Show what fills the context window, as a grid", L, lazy("context_usage", "context_command"),
                immediate=True),
        Command("mcp", "Show MCP servers, their status and tools (reconnect <name>)", L,
                lazy("commands_info", "mcp_command"), argument_hint="[reconnect <server>]"),
        Command("memory", "Show the memory files in use; open one in $EDITOR", L, lazy("memory", "memory_command"),
                argument_hint="[user|project|local|path]"),
        Command("agents", "List the agent definitions (built-in, user, project)", L,
                lazy("commands_info", "agents_command")),
        Command("hooks", "Show the configured hooks by event and matcher", L, lazy("commands_info", "hooks_command")),
        Command("doctor", "Check the installation: Python, sandbox, ripgrep, API key, settings, MCP", L,
                lazy("commands_info", "doctor_command")),
        Command("add-dir", "Add a working directory for this session", L, lazy("commands_setup", "add_dir_command"),
                argument_hint="<path>"),
        Command("sandbox", "Show the sandbox status and settings (on|off toggles it)", L,
                lazy("commands_setup", "sandbox_command"), argument_hint="[on|off]"),
        Command("output-style", "Show or select the output style", L, lazy("commands_setup", "output_style_command"),
                argument_hint="[name]"),
        Command("vim", "Toggle between vim and normal editing", L, lazy("commands_setup", "vim_command")),
        Command("export", "Export the conversation as markdown to a file or the clipboard", L,
                lazy("export", "export_command"), argument_hint="[file]"),
        Command("review", "Review the current changes, or a pull request", P, lazy("commands_review", "review"),
                argument_hint="[PR number]", allowed_tools=REVIEW_TOOLS),
        Command("security-review", "Review the pending changes on this branch for security issues", P,
                lazy("commands_review", "security_review"), allowed_tools=REVIEW_TOOLS),
        Command("statusline", "Have the model set up the statusLine setting", P,
                lazy("commands_review", "statusline"), argument_hint="[what to show]"),
    )


# Read-only git and gh calls the review prompts run without asking, for their own query only.
REVIEW_TOOLS = ("Bash(git diff:*)", "Bash(git status:*)", "Bash(git log:*)", "Bash(git show:*)",
                "Bash(git remote show:*)", "Bash(gh pr view:*)", "Bash(gh pr diff:*)", "Bash(gh pr list:*)",
                "Read", "Glob", "Grep")
