"""Command-line entry point: Claude Code compatible flags; picks print mode or the REPL.

Kept import-light: `codeloop --version` must not load httpx, pydantic or the loop. Importing this
module loads nothing else (not even the parser), so that codeloop's own process can put the
import cache (cli.startup.importcache) in place before the modules it serves load.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


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
    if owns_process:
        # First of all: the modules start-up loads come from one file (see importcache); the code
        # caches are saved when the run ends (atexit, or cli.lifecycle.hard_exit). Only in
        # codeloop's own process: a host calling main(argv) keeps its imports untouched.
        import atexit

        from codeloop.cli.startup import importcache, save_caches
        from codeloop.config.paths import import_cache_root

        atexit.register(save_caches)
        if (folder := import_cache_root()) is not None:
            importcache.install(folder)
            # before argparse and the standard library's modules compile their patterns (see recache)
            from codeloop.cli.startup import recache
            recache.install(folder)
        # modules start-up loads only because others name them run when first used (see deferred)
        from codeloop.cli.startup import deferred
        deferred.defer()
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
    if argv[:1] == ["plugin"]:
        from codeloop.cli.commands.plugin import plugin_main
        return plugin_main(argv[1:])
    if argv[:1] == ["batch"]:
        from codeloop.cli.commands.batch import batch_main
        return batch_main(argv[1:])
    if owns_process:
        from codeloop.cli.startup import collector
        collector.pause()   # start-up makes next to no cyclic garbage (see collector)
    from codeloop.cli.startup.parser import EXIT_USAGE, UNSUPPORTED, build_parser
    args = build_parser().parse_args(argv)
    if owns_process:
        if not (args.print_mode or args.input_format == "stream-json"):
            collector.resume()   # the headless modes say when their start-up is over (startup_done)
        # Before the modules that define dataclasses load: their generated methods' compiled code
        # comes from the cache (see codecache), saved with the others. Only in codeloop's own
        # process: a host calling main(argv) keeps its `dataclasses` untouched.
        from codeloop.cli.startup import child_watch, codecache, dcreplay
        codecache.install()
        dcreplay.install()   # and what dataclasses did to each class, done again from a record
        child_watch.install()   # a pidfd per child on 3.11, not a thread per Bash call
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
    from codeloop.cli.startup.tool_lists import tool_list as _tool_list
    args.allowed_tools = _tool_list(args.allowed_tools) or []
    args.disallowed_tools = _tool_list(args.disallowed_tools) or []
    args.tools = _tool_list(args.tools)
    _check_model(args)
    if args.print_mode or args.input_format == "stream-json":  # SDKs drive stream-json without -p
        code = run_headless(args)
        if owns_process:
            # The run has returned: transcript synced and closed, tools' processes reaped, the
            # result line written. Skip the interpreter's teardown (flushes stdout/stderr first).
            from codeloop.cli.lifecycle import hard_exit
            hard_exit(code)
        return code
    from codeloop.cli.startup.interactive import interactive_options
    from codeloop.cli.startup.local_offer import announce
    options = interactive_options(args)
    if isinstance(options, int):
        return options
    announce(options)
    from codeloop.cli.repl.app import run_repl
    return run_repl(options)


def run_headless(args: argparse.Namespace) -> int:
    """The headless door: checks that need only the command line, RunOptions, then print mode
    (one prompt) or the stream-json session (many: the SDKs' protocol). A start-up failure is
    reported as the run's result would have been."""
    from codeloop.cli.headless.output import EXIT_ERROR, report_setup_error
    from codeloop.cli.startup.options import resolve_options
    from codeloop.session.options import InputFormat, OutputFormat, SetupError

    if args.output_format == "stream-json" and not args.verbose:
        sys.stderr.write("Error: When using --print, --output-format=stream-json requires --verbose\n")
        return EXIT_ERROR
    if args.input_format == "stream-json":
        if args.output_format != "stream-json":
            sys.stderr.write("Error: --input-format=stream-json requires output-format=stream-json.\n")
            return EXIT_ERROR
        if args.prompt:
            sys.stderr.write("Error: with --input-format=stream-json the prompt is read from stdin, not the "
                             "command line.\n")
            return EXIT_ERROR
    try:
        options = resolve_options(args, interactive=False)
    except SetupError as exc:
        report_setup_error(str(exc), OutputFormat(args.output_format), args.resume or args.session_id or "")
        return EXIT_ERROR
    from codeloop.cli.startup.local_offer import announce
    announce(options)   # a keyless run says so once, whichever front end serves it
    if options.output.input_format is InputFormat.STREAM_JSON:  # multi-turn JSONL session (SDKs)
        from codeloop.cli.headless.stream_json import run_stream_json_mode
        return run_stream_json_mode(options)
    from codeloop.cli.headless.print_mode import run_print_mode
    return run_print_mode(options)


_VARIADIC = (("allowed_tools", "--allowedTools"), ("disallowed_tools", "--disallowedTools"), ("tools", "--tools"))


def _check_tool_flags(args: argparse.Namespace) -> str | None:
    """The list flags take every word after them, so `-p --allowedTools Read Edit "fix it"` would
    make the prompt a tool name. A last word that is no tool rule (it has spaces, say) is taken
    back as the prompt; with no prompt left at all, the error says what happened. Unknown tool
    names get a warning with the closest real one."""
    given = [(dest, flag) for dest, flag in _VARIADIC if vars(args)[dest]]
    if not given:
        return None
    from codeloop.cli.startup.flag_hints import looks_like_rule, tool_warnings
    from codeloop.cli.startup.tool_lists import tool_list as _tool_list

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
