"""Start-up: the only code that reads the parsed command line.

    parser.py        Claude Code's flags (and codeloop's), usage errors in one line
    preflight.py     flags that act on the process before a session exists (debug, worktree, files)
    options.py       the door: Namespace + settings + environment → a frozen RunOptions
    interface.py     the REPL's settings at the door: statusLine, editorMode
    interactive.py   the REPL's start-up questions (trust, broken settings, no key), then its options
    local_offer.py   the keyless run's start-up line and the embedded model's assembly progress
    flag_hints.py    "did you mean" for flags, tools and models
    tool_lists.py    tool-list flags as Claude Code takes them
    codecache.py     the compiled-dataclass cache that shortens start-up
    dcreplay.py      dataclass processing replayed from a record for codeloop's own classes
    importcache.py   the stored code of the modules start-up loads
    recache.py       the stored matcher code of the regular expressions start-up compiles
    deferred.py      standard-library modules whose code runs at their first use

`save_caches` writes back what a run added to the code caches, at its end.
"""

import sys

# the import cache last: it stores the modules the other caches' saves loaded
_CACHES = ("codeloop.cli.startup.codecache", "codeloop.cli.startup.dcreplay", "codeloop.cli.startup.recache",
           "codeloop.cli.startup.importcache")


def save_caches() -> None:
    """Save each code cache this process installed (once each; at exit: atexit, or
    cli.lifecycle.hard_exit, which skips atexit)."""
    for name in _CACHES:
        if (cache := sys.modules.get(name)) is not None:
            cache.save()
