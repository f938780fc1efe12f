"""The command line: Claude Code's flags (and codeloop's own), parsed into a Namespace that only
start-up code reads (`cli.startup.options` resolves it into RunOptions).

Usage errors exit 1 with one line and a closest-flag hint, as Claude Code's do.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from codeloop.version import __version__

OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions", "manual")
EXIT_USAGE = 1  # Claude Code exits 1 on a usage error (argparse's default is 2)


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 1 with one line, as Claude Code's do; no prefix abbreviations
    (`--verb` is not `--verbose`)."""

    def __init__(self, **kw: Any) -> None:
        self._metavar_check: argparse.HelpFormatter | None = None
        super().__init__(allow_abbrev=False, **kw)

    def add_argument(self, *args: Any, **kw: Any) -> argparse.Action:
        # argparse builds a whole HelpFormatter (reading the terminal size) for every flag only to
        # check its metavar; one does for all ~90 flags of every start-up. Help still gets fresh ones.
        # A width given: the check does not wrap text, and asking the terminal imports shutil (with
        # bz2 and lzma) on the way to the first request.
        formatter: Any = self.formatter_class   # typeshed knows only its `prog` argument
        self._metavar_check = self._metavar_check or formatter(prog=self.prog, width=80)
        self._adding = True
        try:
            return super().add_argument(*args, **kw)
        finally:
            self._adding = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        if getattr(self, "_adding", False) and self._metavar_check is not None:
            return self._metavar_check
        return super()._get_formatter()

    def error(self, message: str) -> NoReturn:
        from codeloop.cli.startup.flag_hints import unknown_flag_hint

        message = unknown_flag_hint(message, [o for a in self._actions for o in a.option_strings])
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\nRun '{self.prog} --help' for usage.\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="codeloop",
        description="codeloop — an agentic coding harness. Without -p it opens an interactive session; "
                    "with -p it answers one prompt and exits.",
        epilog="Saved sessions: codeloop sessions list|show ID|export ID [--format json|markdown]. "
               "MCP servers: codeloop mcp add|add-json|list|get|remove. "
               "Plugins: codeloop plugin marketplace add|list|remove|update, install|enable|disable|uninstall|list.")
    p.add_argument("prompt", nargs="?", help="the prompt (print mode reads stdin when omitted)")
    p.add_argument("-v", "--version", action="version", version=f"{__version__} (codeloop)")
    p.add_argument("-p", "--print", dest="print_mode", action="store_true",
                   help="print the response and exit (headless; for scripts and CI)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                   help="print mode output: text, json (one result object) or stream-json (JSONL events)")
    p.add_argument("--input-format", choices=INPUT_FORMATS, default="text")
    p.add_argument("--verbose", action="store_true", help="verbose output (required by stream-json)")
    p.add_argument("--include-partial-messages", action="store_true",
                   help="stream-json: also emit raw stream_event deltas")
    p.add_argument("--model", help="model id, alias (sonnet, opus, haiku) or provider:model (openai:gpt-4o, "
                                   "ollama:qwen3:8b, openrouter:…), or local[:file.gguf] for the embedded "
                                   "local model; default $ANTHROPIC_MODEL")
    p.add_argument("--fallback-model", help="comma-separated models to fall back to when overloaded")
    p.add_argument("--max-turns", type=int, help="stop after this many model turns")
    p.add_argument("--token-budget", type=int, metavar="TOKENS",
                   help="keep the model working until it has spent this many output tokens in the turn "
                        '(also: end the prompt with "+500k")')
    p.add_argument("--system-prompt", help="replace the default system prompt")
    p.add_argument("--append-system-prompt", help="append to the system prompt")
    p.add_argument("--allowedTools", "--allowed-tools", dest="allowed_tools", nargs="+", action="extend",
                   metavar="TOOL", help='tools allowed without asking, e.g. "Read,Edit" or "Bash(git:*)"')
    p.add_argument("--disallowedTools", "--disallowed-tools", dest="disallowed_tools", nargs="+",
                   action="extend", metavar="TOOL", help="tools denied (and removed when named bare)")
    p.add_argument("--tools", dest="tools", nargs="+", action="extend", metavar="TOOL",
                   help='the only built-in tools to offer the model ("" for none)')
    p.add_argument("--permission-mode", choices=PERMISSION_MODES, help="permission mode for the session")
    p.add_argument("--dangerously-skip-permissions", action="store_true",
                   help="bypass all permission checks (same as --permission-mode bypassPermissions)")
    p.add_argument("--settings", metavar="FILE_OR_JSON", help="extra settings: a settings.json path or a JSON object")
    p.add_argument("--trust", action="store_true",
                   help="trust this folder's own configuration (hooks, env, allow rules…) for this run")
    p.add_argument("--sandbox", action="store_true",
                   help="run Bash commands inside the OS sandbox (bubblewrap), like sandbox.enabled in settings")
    p.add_argument("--no-sandbox", action="store_true",
                   help="interactive session: do not sandbox Bash by default (each command asks as without a "
                        "sandbox); settings that enable the sandbox still hold")
    p.add_argument("--add-dir", dest="add_dir", nargs="+", action="extend", metavar="DIR",
                   help="additional working directories tools may use")
    p.add_argument("-r", "--resume", metavar="SESSION_ID", help="resume a session by id")
    p.add_argument("-c", "--continue", dest="continue_", action="store_true",
                   help="continue the most recent session in this directory")
    p.add_argument("--session-id", metavar="UUID", help="use this id for a new session")
    p.add_argument("--no-session-persistence", action="store_true", help="do not write a transcript")
    p.add_argument("--fork-session", action="store_true", help="with --resume/--continue: continue in a new session")
    p.add_argument("--no-fork-busy", action="store_true",
                   help="refuse to resume a session another live codeloop is writing (default: fork it)")
    _add_integration_flags(p)
    from codeloop.cli.startup.preflight import add_claude_flags
    add_claude_flags(p)
    return p


def _add_integration_flags(p: argparse.ArgumentParser) -> None:
    """Flags SDKs and scripts pass (claude-agent-sdk's transport among them)."""
    p.add_argument("--replay-user-messages", action="store_true",
                   help="stream-json input: echo each user message back on stdout")
    p.add_argument("--permission-prompt-tool", metavar="TOOL",
                   help='who answers permission prompts in print mode: "stdio" (the SDK control protocol) '
                        "or an MCP tool name (mcp__server__tool)")
    p.add_argument("--json-schema", metavar="SCHEMA", help="structured output: the final answer must match "
                                                           "this JSON schema (JSON or a file path)")
    p.add_argument("--max-budget-usd", type=float, metavar="USD", help="stop once the session has cost this much")
    p.add_argument("--setting-sources", metavar="LIST",
                   help="comma-separated settings sources to load: user,project,local (default: all)")
    p.add_argument("--mcp-config", nargs="+", action="extend", metavar="FILE_OR_JSON",
                   help="MCP servers: .mcp.json-style files or JSON strings")
    p.add_argument("--strict-mcp-config", action="store_true", help="use only the servers from --mcp-config")
    p.add_argument("--system-prompt-file", metavar="FILE", help="read the system prompt from a file")
    p.add_argument("--max-thinking-tokens", type=int, metavar="N", help="enable extended thinking with this budget")
    p.add_argument("--thinking", choices=("enabled", "adaptive", "disabled"),
                   help="extended thinking (enabled/adaptive use --max-thinking-tokens or a default budget)")
    p.add_argument("--betas", nargs="+", action="extend", metavar="BETA", help="anthropic-beta headers to send")
    # Accepted so SDK-generated command lines parse; codeloop has no equivalent yet (warned about).
    p.add_argument("--include-hook-events", action="store_true",
                   help="stream-json: also emit hook_started / hook_response system messages")
    p.add_argument("--effort", choices=("low", "medium", "high", "xhigh", "max"),
                   help="reasoning effort: turns on extended thinking (output_config.effort where the model takes it)")
    hidden: tuple[tuple[str, dict[str, Any]], ...] = (
        ("--resume-session-at", {}), ("--resume-drops-turn", {}),
        ("--task-budget", {"metavar": "TOKENS"}),   # output_config.task_budget (Claude Code hides it too)
        ("--thinking-display", {}))
    for flag, kw in hidden:
        p.add_argument(flag, help=argparse.SUPPRESS, **kw)
    p.add_argument("--plugin-dir", action="append", metavar="DIR",
                   help="load a plugin folder (.claude-plugin/plugin.json, commands/, agents/, skills/, hooks/, "
                        ".mcp.json) for this session; repeatable")
    p.add_argument("--agents", metavar="JSON", help='subagents as JSON: {"name": {"description", "prompt", '
                                                    '"tools"?, "model"?, "maxTurns"?}}')
    p.add_argument("--session-mirror", action="store_true",
                   help="stream-json: also emit transcript_mirror frames (the Agent SDK's session_store)")


UNSUPPORTED = ("thinking_display",)
