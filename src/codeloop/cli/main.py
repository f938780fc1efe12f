"""Command-line entry point: Claude Code compatible flags; picks print mode or the REPL.

Kept import-light: `codeloop --version` must not load httpx, pydantic or the loop.
"""

from __future__ import annotations

import argparse
import sys

from codeloop.cli.startup.tool_lists import tool_list as _tool_list
from codeloop.version import __version__

OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")
EXIT_USAGE = 1  # Claude Code exits 1 on a usage error (argparse's default is 2)


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 1 with one line, as Claude Code's do; no prefix abbreviations
    (`--verb` is not `--verbose`)."""

    def __init__(self, **kw) -> None:
        super().__init__(allow_abbrev=False, **kw)

    def error(self, message: str):  # type: ignore[override]
        from codeloop.cli.startup.flag_hints import unknown_flag_hint

        message = unknown_flag_hint(message, [o for a in self._actions for o in a.option_strings])
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\nRun '{self.prog} --help' for usage.\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="codeloop",
        description="codeloop — an agentic coding harness. Without -p it opens an interactive session; "
                    "with -p it answers one prompt and exits.",
        epilog="Saved sessions: codeloop sessions list|show ID|export ID [--format json|markdown]. "
               "MCP servers: codeloop mcp add|add-json|list|get|remove.")
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
    p.add_argument("--add-dir", dest="add_dir", nargs="+", action="extend", metavar="DIR",
                   help="additional working directories tools may use")
    p.add_argument("-r", "--resume", metavar="SESSION_ID", help="resume a session by id")
    p.add_argument("-c", "--continue", dest="continue_", action="store_true",
                   help="continue the most recent session in this directory")
    p.add_argument("--session-id", metavar="UUID", help="use this id for a new session")
    p.add_argument("--no-session-persistence", action="store_true", help="do not write a transcript")
    p.add_argument("--fork-session", action="store_true", help="with --resume/--continue: continue in a new session")
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
    for flag, kw in (("--resume-session-at", {}), ("--resume-drops-turn", {}), ("--task-budget", {}),
                     ("--plugin-dir", {"action": "append"}), ("--thinking-display", {})):
        p.add_argument(flag, help=argparse.SUPPRESS, **kw)
    p.add_argument("--agents", metavar="JSON", help='subagents as JSON: {"name": {"description", "prompt", '
                                                    '"tools"?, "model"?, "maxTurns"?}}')
    p.add_argument("--session-mirror", action="store_true",
                   help="stream-json: also emit transcript_mirror frames (the Agent SDK's session_store)")


UNSUPPORTED = ("task_budget",
               "plugin_dir", "thinking_display")


def _mark_undecodable_output() -> None:
    """Text holding bytes that are not UTF-8 (file names, command output) is written with a
    visible \\xNN marker instead of crashing the writer or emitting invalid UTF-8."""
    import codecs

    def mark(exc: UnicodeError) -> tuple[str, int]:
        if not isinstance(exc, UnicodeEncodeError):
            raise exc
        from codeloop.messages import mark_undecodable   # only once such text shows up
        return mark_undecodable(exc.object[exc.start:exc.end]), exc.end

    handler = "codeloop-mark"
    codecs.register_error(handler, mark)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=handler)
            except (ValueError, OSError):
                pass


def main(argv: list[str] | None = None) -> int:
    # Called without argv, this is the process's own entry point (`codeloop`, `python -m codeloop`):
    # a finished print-mode run may then end the process at once (see below).
    owns_process = argv is None
    # httpcore probes for trio at import (~70 ms where it is installed); the CLI runs on asyncio only.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    # `import httpx` loads its own CLI module when rich is installed (rich + click + pygments, ~50 ms);
    # httpx falls back to a stub without it.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    argv = sys.argv[1:] if argv is None else argv
    _mark_undecodable_output()
    if argv[:1] == ["sessions"]:
        from codeloop.cli.commands.sessions import sessions_main
        return sessions_main(argv[1:])
    if argv[:1] == ["mcp"]:
        from codeloop.cli.commands.mcp import mcp_main
        return mcp_main(argv[1:])
    if argv[:1] == ["batch"]:
        from codeloop.cli.commands.batch import batch_main
        return batch_main(argv[1:])
    args = build_parser().parse_args(argv)
    if owns_process:
        # Before the modules that define dataclasses load: their generated methods' compiled code
        # comes from the cache (see codecache); saved when the run ends. Only in codeloop's own
        # process: a host calling main(argv) keeps its `dataclasses` untouched.
        import atexit

        from codeloop.cli.startup import codecache
        codecache.install()
        atexit.register(codecache.save)
    for name in UNSUPPORTED:
        if vars(args)[name]:
            sys.stderr.write(f"codeloop: warning: --{name.replace('_', '-')} is not supported yet; ignored\n")
    from codeloop.cli.startup.preflight import FlagError, prepare
    try:
        prepare(args)
    except FlagError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return EXIT_USAGE
    if (problem := _check_tool_flags(args)) is not None:
        sys.stderr.write(f"Error: {problem}\n")
        return EXIT_USAGE
    args.allowed_tools = _tool_list(args.allowed_tools) or []
    args.disallowed_tools = _tool_list(args.disallowed_tools) or []
    args.tools = _tool_list(args.tools)
    _check_model(args)
    if args.print_mode or args.input_format == "stream-json":  # SDKs drive stream-json without -p
        from codeloop.cli.headless.entry import run_headless
        code = run_headless(args)
        if owns_process:
            # The run has returned: transcript synced and closed, tools' processes reaped, the
            # result line written. Skip the interpreter's teardown (flushes stdout/stderr first).
            from codeloop.cli.lifecycle import hard_exit
            hard_exit(code)
        return code
    from codeloop.cli.startup.interactive import interactive_options
    options = interactive_options(args)
    if isinstance(options, int):
        return options
    from codeloop.cli.repl.app import run_repl
    return run_repl(options)


_VARIADIC = (("allowed_tools", "--allowedTools"), ("disallowed_tools", "--disallowedTools"), ("tools", "--tools"))


def _check_tool_flags(args: argparse.Namespace) -> str | None:
    """The list flags take every word after them, so `-p --allowedTools Read Edit "fix it"` would
    make the prompt a tool name. A last word that is no tool rule (it has spaces, say) is taken
    back as the prompt; with no prompt left at all, the error says what happened. Unknown tool
    names get a warning with the closest real one."""
    from codeloop.cli.startup.flag_hints import looks_like_rule, tool_warnings

    given = [(dest, flag) for dest, flag in _VARIADIC if vars(args)[dest]]
    if args.prompt is None and given:
        dest, flag = given[-1]
        values = vars(args)[dest]
        last = values[-1] if values else ""
        # Tool names are CamelCase (or mcp__…); a lower-case word or a sentence is the prompt.
        if last and "," not in last and (not looks_like_rule(last) or last[:1].islower() and "(" not in last
                                         and not last.startswith("mcp__")):
            args.prompt = values.pop()
    for dest, flag in given:
        for line in tool_warnings(flag, [v for v in _tool_list(vars(args)[dest]) or [] if v]):
            sys.stderr.write(f"codeloop: warning: {line}\n")
    if args.prompt is None and given and args.print_mode and sys.stdin.isatty():
        dest, flag = given[-1]
        last = vars(args)[dest][-1] if vars(args)[dest] else ""
        return (f"no prompt: {flag} took every word after it as a tool name (the last was {last!r}); "
                f"put the prompt before {flag}, or end the list with --  (codeloop -p {flag} Read Edit -- "
                '"your prompt")')
    return None


def _check_model(args: argparse.Namespace) -> None:
    import os

    if not args.model or os.environ.get("CODELOOP_PROVIDER", "anthropic").lower() != "anthropic":
        return
    from codeloop.providers.select import model_problem

    if (problem := model_problem(args.model)) is not None:
        sys.stderr.write(f"codeloop: warning: --model: {problem}\n")


if __name__ == "__main__":
    raise SystemExit(main())
