"""The embedded local model as the front ends show it: the one start-up line of a keyless run,
and the progress of its one-time assembly — a bar on a terminal's stderr, plain lines (every
10 %) when stderr is a pipe or a file, so scripts and the SDKs' logs see it too. The profile
itself (tools, prompt, sandbox) and the keyless choice are `session.local_profile`.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

_STEP = 10   # percent between plain progress lines


def announce(options: Any, stream: TextIO | None = None) -> None:
    """A keyless run's one line on stderr, before anything slow happens."""
    if options.model.keyless:
        from codeloop.session.local_profile import keyless_notice

        (stream or sys.stderr).write(f"codeloop: {keyless_notice(options.model.model)}\n")


def show_progress(options: Any, host: Any) -> Any:
    """Lend `host` a progress display when the embedded model serves; the function that ends it."""
    if not options.local_profile:
        return lambda: None
    host.progress, finish = progress_bar()
    return finish


def progress_bar(stream: TextIO | None = None) -> tuple[Any, Any]:
    """(callback(done, total), finish) showing the model's assembly on `stream` (stderr)."""
    out = stream or sys.stderr
    if out.isatty():
        return _rich_bar(out)
    state = {"shown": -_STEP}

    def update(done: int, total: int) -> None:
        pct = 100 * done // total if total else 100
        if pct >= state["shown"] + _STEP or (done >= total and state["shown"] < 100):
            state["shown"] = pct - pct % _STEP if done < total else 100
            out.write(f"codeloop: preparing the local model: {state['shown']}% "
                      f"({done / 1e6:,.0f} of {total / 1e6:,.0f} MB)\n")
            out.flush()

    return update, lambda: None


def _rich_bar(out: TextIO) -> tuple[Any, Any]:
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in state:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            bar = Progress(TextColumn("preparing the local model"), BarColumn(), DownloadColumn(),
                           TimeRemainingColumn(), console=Console(file=out, force_terminal=True), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("model", total=total)
        state["bar"].update(state["task"], completed=done)

    def finish() -> None:
        if "bar" in state:
            state.pop("bar").stop()

    return update, finish


def startup_notice(text: str) -> None:
    """A one-line start-up notice on stderr, where someone is watching (a terminal)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"codeloop: {text}\n")
