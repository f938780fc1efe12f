"""The headless door: checks that need only the command line, RunOptions, then print mode (one
prompt) or the stream-json session (many, the SDKs' protocol).

A start-up failure is reported the way the run would have reported its result: a line on stderr
in text mode, a JSON error result otherwise (what a script or an SDK reads).
"""

from __future__ import annotations

import argparse
import sys

from codeloop.cli.headless.output import EXIT_ERROR, report_setup_error
from codeloop.session.options import InputFormat, OutputFormat, SetupError


def run_headless(args: argparse.Namespace) -> int:
    from codeloop.cli.startup.options import resolve_options

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
    if options.output.input_format is InputFormat.STREAM_JSON:  # multi-turn JSONL session (SDKs)
        from codeloop.cli.headless.stream_json import run_stream_json_mode
        return run_stream_json_mode(options)
    from codeloop.cli.headless.print_mode import run_print_mode
    return run_print_mode(options)


__all__ = ["run_headless"]
