"""Standard-library modules start-up loads only because another module names them, loaded when
something first uses them instead.

`dataclasses` imports `inspect` (with `ast`, `_ast`'s hundred node classes, `dis`) and `copy`,
`pathlib` imports `ntpath`, `fnmatch` and, through `urllib.parse`, `ipaddress`, `ssl` imports
`base64` (with `struct` and the `_struct` and `binascii` extensions); a headless run uses none of
them before its first request, nor in its first tool calls: ~40 M instructions, a tenth of
start-up. Not the modules whose first use is where a warning or a traceback is printed
(`linecache`'s `tokenize`, `traceback`'s `textwrap`): that happens anywhere, a finaliser or a
half-loaded module among them, no place to run a module's code for the first time.

`defer` puts in `sys.modules` a module object for each that holds only its spec and the
attributes made from it (`__file__`, `__cached__`, `__loader__`…); `import x` finds it there as
usual (the import system reads only `__spec__`), code walking `sys.modules` reads those without
running anything, and the first use of anything else in it (an attribute, `from x import y`,
`dir`, setting an attribute) runs the module's code in that same object, which then is the
ordinary module the import would have made: whoever imported it early sees the same thing as
whoever imports it later. Code that fails leaves the module as it was (still deferred, still in
`sys.modules`), so each use raises the error again, as each import of a failing module does.
The first use happens under a per-module lock, so a second thread waits for the code to have
run rather than seeing half a module; code run while loading that reaches back into the module
(a circular import) sees it partly made, as with a usual import. Only in codeloop's own process
(cli.main), for modules not loaded yet; a module whose spec is not found, or that is not a
source or frozen module, is left to the usual import.
"""

from __future__ import annotations

import sys
import types
from _thread import RLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MODULES = ("inspect", "ipaddress", "ntpath", "base64", "copy", "fnmatch", "struct")
_METADATA = frozenset({"__spec__", "__name__", "__file__", "__cached__", "__loader__", "__package__"})
_locks: dict[str, Any] = {}     # module name → its RLock (held while its code runs)
_running: set[str] = set()      # modules whose code is running now (on the thread holding the lock)


class DeferredModule(types.ModuleType):
    """A module whose code has not run yet; any use but reading what the import made runs it."""

    def __getattribute__(self, attr: str) -> Any:
        if attr in _METADATA:
            # what the import system reads (`__spec__`: is it still initialising?) and what code
            # walking sys.modules reads, set before the code runs and the same after: no use
            namespace = types.ModuleType.__getattribute__(self, "__dict__")
            if attr in namespace:
                return namespace[attr]
        load(self)
        return types.ModuleType.__getattribute__(self, attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        load(self)
        types.ModuleType.__setattr__(self, attr, value)

    def __delattr__(self, attr: str) -> None:
        load(self)
        types.ModuleType.__delattr__(self, attr)


def defer(names: tuple[str, ...] = MODULES) -> None:
    """Put a deferred module in `sys.modules` for each name not imported yet."""
    import importlib.machinery
    import importlib.util

    for name in names:
        if name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        # source or frozen modules only: an extension module's code runs as its object is made
        if spec is None or not (isinstance(spec.loader, importlib.machinery.SourceFileLoader)
                                or spec.loader is importlib.machinery.FrozenImporter):
            continue
        module = importlib.util.module_from_spec(spec)
        _locks[name] = RLock()
        types.ModuleType.__setattr__(module, "__class__", DeferredModule)
        sys.modules[name] = module


def load(module: types.ModuleType) -> None:
    """Run a deferred module's code (once; other threads wait for it); nothing for a loaded one."""
    if type(module) is not DeferredModule:
        return
    namespace = types.ModuleType.__getattribute__(module, "__dict__")
    spec = namespace["__spec__"]
    with _locks[spec.name]:
        if type(module) is not DeferredModule or spec.name in _running:
            return   # loaded meanwhile, or this thread is running its code (a circular import)
        _running.add(spec.name)
        before = dict(namespace)
        try:
            spec.loader.exec_module(module)
        except BaseException:
            # as a failed import: nothing of the half-run code stays, the next use tries again
            namespace.clear()
            namespace.update(before)
            raise
        else:
            types.ModuleType.__setattr__(module, "__class__", types.ModuleType)
        finally:
            _running.discard(spec.name)


def is_deferred(module: object) -> bool:
    """Whether `module`'s code has not run yet (what walks over sys.modules must not touch)."""
    return type(module) is DeferredModule
