"""`codeloop plugin …`: the subcommand's door (the words and the work: input.plugin_command)."""

from __future__ import annotations

import sys
from pathlib import Path


def plugin_main(argv: list[str]) -> int:
    from codeloop.input.plugin_command import EXIT_OK, run

    code, text = run(argv, Path.cwd().resolve())
    if text:
        (sys.stdout if code == EXIT_OK else sys.stderr).write(text + "\n")
    return code
