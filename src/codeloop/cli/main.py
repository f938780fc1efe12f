"""Command-line entry point: Claude Code compatible flags; picks print mode or the REPL.

Kept import-light: `codeloop --version` must not load httpx, pydantic or the loop.
"""

from __future__ import annotations

import argparse
import sys

from codeloop import __version__

OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


def _tool_list(values: list[str] | None) -> list[str] | None:
    """`--allowedTools "Read,Edit" Bash` → ["Read", "Edit", "Bash"]; commas inside (…) are kept."""
    if values is None:
        return None
    out: list[str] = []
    for value in values:
        depth, cur = 0, ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (ch == "," or ch.isspace()):
                if cur.strip():
                    out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        if cur.strip():
            out.append(cur.strip())
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="codeloop",
        description="codeloop — an agentic coding harness. Without -p it opens an interactive session; "
                    "with -p it answers one prompt and exits.")
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
    p.add_argument("--model", help="model id or alias (sonnet, opus, haiku); default $ANTHROPIC_MODEL")
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
    p.add_argument("--add-dir", dest="add_dir", nargs="+", action="extend", metavar="DIR",
                   help="additional working directories tools may use")
    p.add_argument("-r", "--resume", metavar="SESSION_ID", help="resume a session by id")
    p.add_argument("-c", "--continue", dest="continue_", action="store_true",
                   help="continue the most recent session in this directory")
    p.add_argument("--session-id", metavar="UUID", help="use this id for a new session")
    p.add_argument("--no-session-persistence", action="store_true", help="do not write a transcript")
    return p


def main(argv: list[str] | None = None) -> int:
    # httpcore probes for trio at import (~70 ms where it is installed); the CLI runs on asyncio only.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    args = build_parser().parse_args(argv)
    args.allowed_tools = _tool_list(args.allowed_tools) or []
    args.disallowed_tools = _tool_list(args.disallowed_tools) or []
    args.tools = _tool_list(args.tools)
    if args.print_mode:
        from codeloop.cli.print_mode import run_print_mode
        return run_print_mode(args)
    sys.stderr.write("codeloop: the interactive REPL is not available yet; use -p \"prompt\".\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
