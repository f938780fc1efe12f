"""The compiled form of the regular expressions a run compiles, kept in one file between runs.

`re` compiles a pattern in pure Python (parse, then generate the matcher's code) before handing
the code to `_sre.compile`; on the way to the first request some 40 patterns are compiled, most
of them by the standard library's modules as they load (textwrap, tokenize, logging, json,
string) and by argparse, about 3 ms. The generated code depends only on the pattern, its flags
and the interpreter, so `install` gives `re` a compile that hands `_sre.compile` the code an
earlier run generated for the same (pattern, flags) and generates only what is new; `save` writes
the new entries back when the run ends. The pattern object made is the one `re` would have made
from the same arguments (`_sre.compile` checks the code it is given, and an entry it refuses is
dropped and compiled the usual way), so no behaviour changes, with two guards:

- a pattern whose parsing may warn (a FutureWarning for `[[`, `--`, `&&`, `~~`, `||` in a set; a
  DeprecationWarning for an odd group name, non-ASCII only) is never stored, so it warns each
  time as before; nor is one compiled with `re.DEBUG` (which prints);
- the file holds code the matcher runs: it is read only when it is a regular file of this user's
  that no one else can write (importcache's rule), and lives in the import cache's folder
  (`CODELOOP_IMPORT_CACHE`, `off` turns both off), a path no tool may write.

At most `MAX_ENTRIES` patterns are kept, the ones used most recently (a run's hits move to the
end), each at most `MAX_PATTERN` characters: patterns a tool compiles from a model's input
(globs) come and go without pushing out the ones every run needs.
"""

from __future__ import annotations

import os
import sys
from _thread import get_ident
from array import array

TYPE_CHECKING = False
if TYPE_CHECKING:   # typing is loaded later, through the modules this cache serves
    from typing import Any

MAX_ENTRIES = 512
MAX_PATTERN = 4096
_FORMAT = 1          # bumped whenever what is stored changes meaning
_MAY_WARN = ("[[", "--", "&&", "~~", "||")
_state: dict[str, Any] = {"path": None, "known": {}, "new": {}, "hits": set(), "compile": None, "code": None,
                         "sre": None}
_made_code: dict[int, list[int]] = {}   # thread → the code its compile in progress generated


def _version(sre: Any) -> tuple[Any, ...]:
    return (_FORMAT, sys.version, sre.MAGIC, sre.CODESIZE)


def install(folder: str) -> None:
    """Give `re` the caching compile (once per process; never fails the run)."""
    import re

    from codeloop.cli.startup.importcache import read_table

    compiler: Any = getattr(re, "_compiler")   # noqa: B009 — private: no stub to type it by

    if compiler.compile is _compile or array("I").itemsize != compiler._sre.CODESIZE:
        return
    path = os.path.join(folder, f"regex-code.{sys.implementation.cache_tag}.marshal")
    # a missing or corrupt file: every pattern is compiled as usual, and the file rewritten
    _state.update(path=path, known=read_table(path, _version(compiler._sre)), new={}, hits=set(),
                  compile=compiler.compile, code=compiler._code, sre=compiler._sre)
    compiler._code = _code   # looked up by compile at each call: it sees the code generated
    compiler.compile = _compile


def _storable(pattern: str | bytes, flags: int) -> bool:
    import re

    if flags & re.DEBUG or len(pattern) > MAX_PATTERN or not pattern.isascii():
        return False
    text = pattern if isinstance(pattern, str) else pattern.decode("ascii")
    return not any(mark in text for mark in _MAY_WARN)


def _compile(p: Any, flags: int = 0) -> Any:
    original = _state["compile"]
    kind = type(p)
    if kind is not str and kind is not bytes:   # a parsed pattern (re.Scanner): nothing to look up
        return original(p, flags)
    key = (p, int(flags))
    entry = _state["known"].get(key)
    if entry is not None:
        try:
            final_flags, code, groups, groupindex, indexgroup = entry
            made = _state["sre"].compile(p, final_flags, memoryview(code).cast("I").tolist(), groups,
                                dict(groupindex), indexgroup)
        except (RuntimeError, TypeError, ValueError, OverflowError):
            _state["known"].pop(key, None)   # code _sre refuses: compiled below, and replaced
        else:
            _state["hits"].add(key)
            return made
    ident = get_ident()
    try:
        made = original(p, flags)
    finally:
        code = _made_code.pop(ident, None)
    if code is not None and _storable(p, key[1]):
        try:
            stored = array("I", code).tobytes()
        except OverflowError:
            return made
        entry = (made.flags, stored, made.groups, dict(made.groupindex), _index_group(made.groupindex, made.groups))
        _state["known"][key] = _state["new"][key] = entry
    return made


def _code(p: Any, flags: int) -> list[int]:
    # The matcher's code cannot be read back from a pattern object: keep what `compile` generated
    # (per thread, which compiles one pattern at a time) for `_compile` to store.
    code: list[int] = _state["code"](p, flags)
    _made_code[get_ident()] = code
    return code


def _index_group(groupindex: Any, groups: int) -> tuple[str | None, ...]:
    names: list[str | None] = [None] * (groups + 1)
    for name, index in groupindex.items():
        names[index] = name
    return tuple(names)


def save() -> None:
    """Write this run's new entries (if any) with the others, the least recently used dropped."""
    path, new = _state["path"], _state["new"]
    if path is None or not new:
        return
    _state["new"] = {}
    from codeloop.cli.startup.importcache import write_table

    known, hits = _state["known"], _state["hits"]
    order = [k for k in known if k not in hits and k not in new] + [k for k in known if k in hits] + list(new)
    kept = {k: known[k] for k in order[-MAX_ENTRIES:] if k in known}
    write_table(path, _version(_state["sre"]), kept)
