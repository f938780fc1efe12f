"""The cyclic garbage collector during start-up.

Start-up makes objects that live as long as the process (modules, classes, the tool set and, on
a resume, the whole loaded history) and next to no cyclic garbage, yet the collector walks them
again and again while they are made: resuming a 2,000-turn session spent some 60 ms in
collections before its first request, and importing asyncio and its kin some 35 collections.
`pause` stops collecting in codeloop's own process before the parser loads (cli.main). The
headless front ends (print mode, stream-json) call `startup_done` once their session is open: it
moves everything made so far where collections no longer look (`gc.freeze`) and turns collecting
back on, so the turns' collections see only what the turns make. The REPL `resume`s as soon as
the command line is parsed. Reference counting frees everything as before; only cycles wait.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop collecting until `startup_done` (a no-op when collecting is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def startup_done() -> None:
    """Start-up's objects out of the collector's sight, and collecting on again; once, and only
    after `pause` turned it off."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def resume() -> None:
    """Collect again, nothing frozen: for a start-up that will not reach `startup_done` (the REPL);
    a no-op unless `pause` turned collecting off."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
