"""The interactive session's door: the questions asked before it starts, then its RunOptions.

In order: a terminal is required; an untrusted folder with its own configuration asks to be
trusted; broken settings files stop the start unless the user says to go on without them (their
deny rules then do not apply, and they are told so); no API key, where the embedded model did not
become the default at the door (a model was named, or it is not installed), ends with the one-line
no-key error. These are blocking prompts, asked before the event loop
starts. The REPL itself only ever sees the RunOptions.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from codeloop.cli.startup.options import resolve_options
from codeloop.session.options import BrokenSettingsError, RunOptions, SetupError

EXIT_ERROR = 1


def interactive_options(args: argparse.Namespace) -> RunOptions | int:
    """The REPL's options, or an exit status when it cannot (or should not) start."""
    from codeloop.config.trust import needs_trust, trust

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        sys.stderr.write("codeloop: the interactive session needs a terminal; use -p \"prompt\" for scripts.\n")
        return EXIT_ERROR
    cwd = Path.cwd().resolve()
    if not args.trust and needs_trust(cwd) and _ask_trust(cwd):
        trust(cwd)
    try:
        options = _with_settings_check(args)
        if _no_key(options):   # asked for Claude (or the embedded model is not installed): say how to go on
            from codeloop.session.local_profile import no_key_message
            from codeloop.session.store import config_dir

            sys.stderr.write(f"Error: {no_key_message('ANTHROPIC_API_KEY is not set.', config_dir())}\n")
            return EXIT_ERROR
    except SetupError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return EXIT_ERROR
    return options


def _no_key(options: RunOptions) -> bool:
    """No credentials for the Anthropic API (what its provider would refuse to start without)."""
    return (options.model.provider == "anthropic" and not options.model.api_key_helper
            and not os.environ.get("ANTHROPIC_API_KEY") and not os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def _ask_trust(cwd: Path) -> bool:
    from prompt_toolkit import prompt

    from codeloop.config.trust import check_trust, project_config_files

    files = "\n".join(f"  {p}" for p in project_config_files(cwd))
    parent = check_trust(cwd).not_inherited
    inherited = (f"{parent} is trusted, but that trust does not extend to the configuration of a subfolder "
                 "started in.\n\n" if parent else "")
    sys.stdout.write(f"Do you trust the files in this folder?\n\n  {cwd}\n\n{inherited}Its configuration can run "
                     f"commands or widen permissions (hooks, MCP servers, environment, agents, skills):\n{files}\n\n")
    try:
        answer = prompt("Trust this folder? 1) Yes, proceed  2) No, continue without its configuration  > ")
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("1", "y", "yes")


def _with_settings_check(args: argparse.Namespace) -> RunOptions:
    """Broken settings files stop the session before any query: the user fixes them, or says
    explicitly to go on without them."""
    from dataclasses import replace

    from prompt_toolkit import prompt

    try:
        return resolve_options(args, interactive=True)
    except BrokenSettingsError as exc:
        sys.stdout.write(f"{exc}\n\nFix the file(s) and restart, or continue WITHOUT them "
                         "(none of their settings, including permission deny rules, will apply).\n")
        try:
            go_on = prompt("Continue without these settings files? [y/N] > ").strip().lower() in ("y", "yes")
        except (EOFError, KeyboardInterrupt):
            go_on = False
        if not go_on:
            raise
        options = resolve_options(args, interactive=True,
                                  skip_settings=frozenset(p.path for p in exc.problems))
        return replace(options, warnings=(*options.warnings,
                                          *(f"settings file ignored at your request: {p.path}" for p in exc.problems)))
