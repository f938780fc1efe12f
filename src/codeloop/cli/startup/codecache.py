"""A compile cache for the methods `dataclasses` generates, kept between runs.

codeloop defines some 70 dataclasses before its first request; `dataclasses` writes each one's
`__init__`, `__repr__`, `__eq__`… as source text and compiles it with `exec`, which was the
largest single cost of start-up after the interpreter itself. The generated text depends only
on the class's shape, so `install` gives the `dataclasses` module an `exec` that looks the
compiled code up by that text (in a marshal file per Python version in the config dir's cache)
and compiles only what is new; `save` writes the new entries back, once per process, when the
run ends. The code run is exactly what `exec` would have compiled from the same text, so no
behaviour changes; a missing, stale or corrupt file only costs the compile, and a file that is
not this user's alone (another account could plant code in it) is not read (importcache's rule).
"""

from __future__ import annotations

import builtins
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from codeloop.cli.startup.importcache import read_table, save_new

MAX_ENTRIES = 2000   # a bound on the file, whatever defines dataclasses in this process
_FORMAT = 2          # bumped whenever what is stored changes meaning
_state: dict[str, Any] = {"path": None, "known": None, "new": {}}


def _cache_path() -> Path:
    from codeloop.config.paths import config_dir

    return config_dir() / "cache" / f"dataclass-code.{sys.implementation.cache_tag}.marshal"


def install() -> None:
    """Give `dataclasses` the caching `exec` (once per process; never fails the run). The file is
    read at the first `exec`: a run whose classes all come from dcreplay's records never reads it."""
    import dataclasses

    if getattr(dataclasses, "exec", None) is _exec:
        return
    try:
        _state.update(path=_cache_path(), known=None, new={})
    except Exception:  # noqa: BLE001 — no cache: dataclasses compile as usual
        return
    dataclasses.exec = _exec   # type: ignore[attr-defined]   # shadows the builtin for that module only


def _known() -> dict[Any, Any]:
    known = _state["known"]
    if known is None:
        # code that runs: only from a file of this user's that no one else can write
        try:
            known = read_table(str(_state["path"]), (_FORMAT, sys.version))
        except Exception:  # noqa: BLE001 — unreadable: compile as usual
            known = {}
        _state["known"] = known
    return known


def _exec(source: Any, globals: Any = None, locals: Any = None) -> None:
    # Only codeloop's own classes are stored: other packages' dataclasses (pydantic's, when a tool's
    # model is built) are not on the way to the first request, and the file is read whole.
    if type(source) is str:
        module = str((globals or {}).get("__name__", ""))
        known = _known()
        code = known.get(source)
        if type(code) is not CodeType:   # (absent, or an entry of the file that is no code)
            # dont_inherit: this module's own `from __future__ import annotations` must not turn the
            # generated methods' annotations into strings (exec of the text in dataclasses would not)
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if (module == "codeloop" or module.startswith("codeloop.")) and len(known) < MAX_ENTRIES:
                known[source] = _state["new"][source] = code
        source = code
    builtins.exec(source, globals, locals)


def save() -> None:
    """Write the entries compiled in this process (if any) for the next run."""
    save_new(_state, (_FORMAT, sys.version))
