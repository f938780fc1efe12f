"""The cyclic garbage collector during a print-mode start-up.

Start-up makes objects that live as long as the process (modules, classes, the tool set and, on
a resume, the whole loaded history) and next to no cyclic garbage, yet the collector walks them
again and again while they are made: resuming a 2,000-turn session spent some 60 ms in
collections before its first request. `pause` stops collecting for start-up (only in codeloop's
own process, see cli.main); `startup_done` moves everything made so far where collections no
longer look (`gc.freeze`) and turns collecting back on, so the turns' collections see only what
the turns make. Reference counting frees everything as before; only cycles wait.
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
