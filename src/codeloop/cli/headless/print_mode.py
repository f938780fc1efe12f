"""Headless print mode (-p): one prompt in, text | json | stream-json out, exit status out.

Output shapes follow Claude Code's, so scripts written against `claude -p` keep working.
SIGINT/SIGTERM abort the query cleanly: tools get their tool_results, the transcript is
synced, and a result line is still printed. Signals always win: if that takes longer than
`lifecycle.GRACE_S` (a tool thread stuck in a blocking call), the result line is written anyway
and the process ends (`lifecycle.ExitGuard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from typing import Any, TextIO

from codeloop.abort import AbortController, AbortReason
from codeloop.cli.headless import loop_signals
from codeloop.cli.headless.output import (EXIT_ERROR, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM, STRUCTURED_RETRY_LIMIT,
                                          Printer, apply_structured, build_result, emit, error_result,
                                          report_setup_error)
from codeloop.events import SystemEvent, UserEvent
from codeloop.session.options import OutputFormat, RunOptions

# With a prompt argument, piped input is optional: wait this long for its first byte (Claude Code
# waits 3 s too), so `codeloop -p "q"` started from a script with an idle stdin does not hang.
STDIN_WAIT_S = 3.0


def _stdin_ready(timeout: float) -> bool:
    import select

    try:
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
    except (OSError, ValueError):   # not selectable (e.g. a closed or unusual stdin): read it
        return True
    return bool(ready)


def join_stdin(piped: str, prompt: str) -> str:
    """Piped input first, then the question, as `cat foo.py | claude -p "explain"` sends them."""
    if not piped.strip():
        return prompt
    return f"{piped.rstrip(chr(10))}\n\n{prompt}"


def _read_prompt(given: str | None) -> str:
    if sys.stdin is None or sys.stdin.isatty():
        return given or ""
    if given is None:
        return _read_stdin()
    if not _stdin_ready(STDIN_WAIT_S):
        sys.stderr.write(f"codeloop: warning: no input on stdin after {STDIN_WAIT_S:.0f}s; "
                         "going on with the prompt alone (redirect stdin from /dev/null to skip the wait)\n")
        return given
    return join_stdin(_read_stdin(), given)


def _read_stdin() -> str:
    # Bytes that are not UTF-8 are kept (surrogateescape) and marked when the request is encoded.
    raw = getattr(sys.stdin, "buffer", None)
    return raw.read().decode("utf-8", "surrogateescape") if raw is not None else sys.stdin.read()


async def _run(options: RunOptions, prompt: str, out: TextIO) -> int:
    from codeloop.cli.lifecycle import ExitGuard, hard_exit, install_daemon_executor
    from codeloop.session.assembly import SessionHost, open_session
    from codeloop.session.options import SetupError

    started = time.monotonic()
    install_daemon_executor(asyncio.get_running_loop())   # no tool thread can hold the exit
    text = options.output.format is OutputFormat.TEXT
    printer = Printer(options.output, out)
    from codeloop.cli.startup.local_offer import show_progress, startup_notice

    host = SessionHost(listeners=[printer.side_event], notice=startup_notice)
    finish = show_progress(options, host)   # the embedded model's one-time assembly, on stderr
    try:
        conv, warnings = await open_session(options, host)
    except SetupError as exc:
        report_setup_error(str(exc), options.output.format, options.history.requested_id)
        return EXIT_ERROR
    finally:
        finish()
    printer.conv = conv
    for w in warnings:
        sys.stderr.write(f"codeloop: warning: {w}\n")
    from codeloop.cli.startup import collector
    collector.startup_done()   # the session (and any resumed history) is built: collect again
    if conv.ended_by_model:
        message = (f"Session {conv.session_id} was ended by the model and cannot be resumed. "
                   "Start a new session.")
        if text:
            sys.stderr.write(f"Error: {message}\n")
        else:
            emit(out, {**error_result(conv.session_id, [message]), "terminal_reason": "ended_by_model"})
        await conv.provider.aclose()
        return EXIT_ERROR
    if prompt.lstrip().startswith("/mcp__") and conv.mcp is not None and _slash_commands_enabled():
        from codeloop.input.mcp_input import expand_slash
        try:   # a connected MCP server's prompt: what the server returns is what is sent
            prompt = await expand_slash(conv, prompt) or prompt
        except ValueError as exc:
            if text:
                sys.stderr.write(f"Error: {exc}\n")
            else:
                emit(out, error_result(conv.session_id, [str(exc)]))
            await conv.aclose()
            await conv.provider.aclose()
            return EXIT_ERROR

    abort = AbortController()
    got_signal: list[int] = []

    def fallback_result(signum: int) -> None:
        name = signal.Signals(signum).name
        res = {**error_result(conv.session_id, [f"Interrupted by {name}: stopped without waiting for the "
                                                "running tool"], duration_ms=(time.monotonic() - started) * 1000),
               "terminal_reason": "aborted_tools"}
        if text:
            sys.stderr.write(f"Error: {res['errors'][0]}\n")
        else:
            emit(out, res)

    guard = ExitGuard(fallback_result)

    def on_signal(signum: int) -> None:
        got_signal.append(signum)
        abort.abort(AbortReason.USER if signum == signal.SIGINT else AbortReason.SIGNAL)
        guard.signalled(signum)

    give_back_signals = loop_signals.handle(on_signal)

    printer.init()
    if options.output.format is OutputFormat.STREAM_JSON and options.output.include_hook_events:
        from codeloop.cli.headless.sdk_glue import install_hook_events
        install_hook_events(conv, out)
    command, _, focus = prompt.strip().partition(" ")
    structured: dict[str, Any] = {}
    overrides = contextlib.ExitStack()   # a custom command's allowed-tools and model, for its query
    if command.startswith("/") and command != "/compact" and _slash_commands_enabled():
        prompt = _expand_custom_command(options, prompt, conv, overrides)
    if command == "/compact" and _slash_commands_enabled():
        events = conv.compact(focus.strip())
    elif options.limits.json_schema is not None:
        from codeloop.session.structured import run_structured
        events = run_structured(conv, prompt, dict(options.limits.json_schema), STRUCTURED_RETRY_LIMIT, abort=abort)
    else:
        from codeloop.config.flags import ATTACH_NAMED_FILES
        # @file mentions, as in the REPL (no "@" and no named-file attaching: skip the import)
        if "@" in prompt or conv.config.feature_flags.get(ATTACH_NAMED_FILES):
            from codeloop.input.process import mention_attachments
            for notice in await mention_attachments(conv, prompt):
                sys.stderr.write(f"codeloop: {notice}\n")
        events = conv.submit(prompt, abort=abort)
    try:
        async for ev in events:
            if isinstance(ev, UserEvent) and printer.prompt_uuid is None:
                printer.prompt_uuid = ev.message.uuid
            if isinstance(ev, SystemEvent) and ev.subtype.startswith("structured_output"):
                structured[ev.subtype] = ev.data
                continue
            printer.event(ev)
    finally:
        overrides.close()
        give_back_signals()
        await conv.aclose()
        await conv.provider.aclose()
    result = apply_structured(build_result(conv, conv.last_terminal, started=started, final_text=printer.final_text,
                                           stop_reason=printer.stop_reason), structured, printer.final_text)
    if not guard.settle():
        await asyncio.sleep(3600)   # the watchdog wrote the result line and is ending the process
    printer.result(result)
    if got_signal:
        # the transcript is closed and the result written: nothing left worth waiting for
        hard_exit(EXIT_SIGINT if got_signal[0] == signal.SIGINT else EXIT_SIGTERM)
    return EXIT_ERROR if result["is_error"] else EXIT_OK


def _expand_custom_command(options: RunOptions, prompt: str, conv: Any, overrides: contextlib.ExitStack) -> str:
    """`/name args` naming a custom or plugin command: the prompt it expands to, its allowed-tools
    and model entered into `overrides`; any other text as it is."""
    from codeloop.input.custom_commands import expanded_prompt
    from codeloop.session.store import config_dir

    found = expanded_prompt(prompt, options.cwd, config_dir(), options.plugins)
    if found is None:
        return prompt
    text, command = found
    if command.allowed_tools or command.model:
        from codeloop.input.dispatch import query_overrides

        overrides.enter_context(query_overrides(conv, command.allowed_tools, command.model))
    return text


def _slash_commands_enabled() -> bool:
    from codeloop.input.commands import slash_commands_enabled
    return slash_commands_enabled()


def run_print_mode(options: RunOptions) -> int:
    prompt = _read_prompt(options.prompt)
    if not prompt.strip():
        sys.stderr.write("Error: Input must be provided either through stdin or as a prompt argument "
                         "when using --print\n")
        return EXIT_ERROR
    try:
        return loop_signals.run(_run(options, prompt, sys.stdout))
    except KeyboardInterrupt:
        return EXIT_SIGINT

