"""The local model as the front ends offer it: a progress bar while it is assembled, and the
REPL's first-run offer when no API key is set (offered, never chosen for the user). The profile
itself (tools, prompt, sandbox) is `session.local_profile`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def progress_bar() -> tuple[Any, Any]:
    """(callback, finish) drawing a rich progress bar on stderr while the model is assembled."""
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in state:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            bar = Progress(TextColumn("preparing the local model"), BarColumn(), DownloadColumn(),
                           TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("model", total=total)
        state["bar"].update(state["task"], completed=done)

    def finish() -> None:
        if "bar" in state:
            state.pop("bar").stop()

    return update, finish


def offer_local_first_run(config_dir: Path, ask: Any = input) -> bool:
    """The REPL's first run without a key: offer the local model; True when the user takes it."""
    from codeloop.session.local_profile import local_model_status

    sys.stdout.write("\nNo API key is set. codeloop can run a small model on this machine instead "
                     "(slower and much weaker than a hosted model; "
                     f"{local_model_status(config_dir)}).\n")
    try:
        answer = ask("Use the local model for this session? [y/N] ")
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def startup_notice(text: str) -> None:
    """A one-line start-up notice on stderr, where someone is watching (a terminal)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"codeloop: {text}\n")
