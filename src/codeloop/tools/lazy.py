"""Lazy built-in tools: a tool's module is imported only when something beyond its name and API
schema is needed, and schemas come from a small on-disk cache.

Start-up is a feature: the first request can leave before pydantic and the tool modules are
imported. Beside each schema the cache keeps the tool's plain input spec (`tools.plain_input`),
so a plain input (a Bash command, say) is checked without pydantic. `warm_later` imports
pydantic and the common tools on a daemon thread while the model is still thinking: armed when
a request has gone out, it starts only if no tool call has arrived by then, since imports hold
the GIL the loop needs once the answer streams in. The cache is keyed by the codeloop version
and the size/mtime of each tool's source file, so an edited or upgraded tool never serves a
stale schema or spec; a missing or corrupt cache is simply rebuilt.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

_CACHE_VERSION = 2
# Warmed first: the tools a session almost always calls, in about the order it calls them.
WARM_FIRST = ("Bash", "Read", "Grep", "Glob", "Edit", "Write")
# Then what the first Bash call's permission check and start import (the shell scanner, the rules,
# _ctypes for protect_process): ~10 ms of the first tool turn otherwise.
# (git_reads is left out: a Bash check needs it only when some path is hidden from reads)
WARM_MODULES = ("codeloop.permissions.bash_gate", "codeloop.permissions.bash", "codeloop.permissions.readonly",
                "codeloop.permissions.rules", "codeloop.permissions.shell_writes",
                "codeloop.permissions.git_programs", "codeloop.permissions.guarded", "codeloop.permissions.consent",
                "codeloop.permissions.modes", "_ctypes")
# After a request went out, how long the model must stay silent before warming starts.
WARM_DELAY_S = 0.05
# Tool modules that import no pydantic themselves (their input model is a `base.LazyModel`).
PYDANTIC_FREE = frozenset(f"codeloop.tools.builtin.{m}" for m in ("bash", "read", "glob", "grep", "edit", "write"))
_warm = {"state": "idle"}   # idle | armed | started


class SchemaCache:
    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        self._schemas: dict[str, dict[str, Any]] | None = None
        self._plain: dict[str, dict[str, Any] | None] = {}

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._schemas is None:
            self._schemas = {}
            try:
                data = json.loads(self.path.read_text())
                if data.get("v") == _CACHE_VERSION and data.get("key") == self.key:
                    self._schemas = dict(data.get("schemas") or {})
                    self._plain = dict(data.get("plain") or {})
            except (OSError, ValueError, AttributeError):
                pass
        return self._schemas

    def get(self, name: str) -> dict[str, Any] | None:
        return self._load().get(name)

    def plain(self, name: str) -> dict[str, Any] | None:
        """The tool's plain input spec (None: its input needs pydantic, or it is not cached)."""
        self._load()
        return self._plain.get(name)

    def put(self, name: str, schema: dict[str, Any], plain: dict[str, Any] | None = None) -> None:
        schemas = self._load()
        schemas[name] = schema
        self._plain[name] = plain
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"v": _CACHE_VERSION, "key": self.key, "schemas": schemas,
                                       "plain": self._plain}))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs start-up time


def cache_key(module_files: list[Path]) -> str:
    from codeloop.version import __version__

    return "|".join([__version__, *map(file_key, module_files)])


def file_key(f: Path) -> str:
    """One source file's part of a cache key: its name, size and modification time."""
    try:
        st = os.stat(str(f))
        return f"{f.name}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return f"{f.name}:missing"


class LazyTool:
    """Stands in for a tool; `name` and `api_schema()` are served without importing it."""

    def __init__(self, name: str, module: str, class_name: str, cache: SchemaCache | None,
                 *, gate: Callable[[Any], bool] | None = None, should_defer: bool = False,
                 kwargs: dict[str, Any] | None = None, max_result_chars: float = 100_000,
                 interruptible: bool = False) -> None:
        self.name = name
        self._module, self._class_name, self._cache = module, class_name, cache
        self._kwargs = kwargs or {}
        # Facts known without importing the tool: its cheap gate and whether it is deferred.
        self._gate, self.should_defer, self.max_result_chars = gate, should_defer, max_result_chars
        self.interruptible = interruptible
        self._tool: Any = None
        self._lock = threading.Lock()   # the warm-up thread and the loop may both ask first

    @property
    def real(self) -> Any:
        if self._tool is None:
            with self._lock:
                if self._tool is None:
                    if self._module not in PYDANTIC_FREE:
                        skip_pydantic_plugin_scan()
                    self._tool = getattr(importlib.import_module(self._module), self._class_name)(**self._kwargs)
        return self._tool

    def api_schema(self) -> dict[str, Any]:
        cached = self._cache.get(self.name) if self._cache is not None else None
        if cached is not None:
            return cached
        schema = self.real.api_schema()
        if self._cache is not None:
            from codeloop.tools.plain_input import spec_of

            self._cache.put(self.name, schema, spec_of(self.real.input_model))
        return schema

    def plain_input(self, raw: Any) -> Any:
        """`raw` checked without pydantic (a `plain_input.PlainInput`), or None: validate it with
        the input model."""
        spec = self._cache.plain(self.name) if self._cache is not None else None
        if spec is None:
            return None
        from codeloop.tools.plain_input import check

        return check(spec, raw)

    def is_enabled(self, ctx: Any) -> bool:
        # The registry's gate mirrors the tool's own is_enabled, so no import is needed to
        # answer; built-ins without a gate are always on.
        if self._gate is not None:
            return bool(self._gate(ctx))
        return True if self._tool is None else bool(self._tool.is_enabled(ctx))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self.real, attr)

    def __repr__(self) -> str:
        return f"<LazyTool {self.name}{' (loaded)' if self._tool is not None else ''}>"


def skip_pydantic_plugin_scan() -> None:
    """Spare the first pydantic model build a scan of every installed distribution's entry points
    (25-140 ms here) looking for pydantic plugins, which codeloop's tool models never use.

    Only when the user has not configured plugins (PYDANTIC_DISABLE_PLUGINS); the environment is
    left alone, so commands the tools run still load their plugins."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") is not None:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:
        return
    if getattr(_loader, "_plugins", False) is None:
        _loader._plugins = {}


def warm_later(tools: list[Any], waiting: Callable[[], bool]) -> Callable[[], None] | None:
    """Arrange to import pydantic and the likely tools' modules on a daemon thread, once per process.

    Returns the function to call once the request is out (None: nothing left to warm, or armed
    already). `WARM_DELAY_S` later the thread starts if `waiting()` still says no tool call has
    arrived — the model is thinking, so the imports overlap its time to first token; otherwise
    the next request may arm it again. A tool call that needs an import the thread is running
    waits for it (the import lock), never imports twice."""
    lazy = [t for t in tools if isinstance(t, LazyTool) and t._tool is None]
    if _warm["state"] != "idle" or not lazy:
        return None
    _warm["state"] = "armed"
    order = {name: i for i, name in enumerate(WARM_FIRST)}
    lazy = sorted((t for t in lazy if t.name in order), key=lambda t: order[t.name])

    def run() -> None:
        if not waiting():
            _warm["state"] = "idle"
            return
        _warm["state"] = "started"
        try:
            skip_pydantic_plugin_scan()
            import pydantic  # noqa: F401
            for tool in lazy:
                _ = tool.real.input_model  # the access imports the module and builds the model
            for module in WARM_MODULES:
                importlib.import_module(module)
        except Exception:  # noqa: BLE001 — a warm-up never fails anything: the real use reports it
            pass

    def start() -> None:
        if not waiting():   # a tool call came first: no thread at all
            _warm["state"] = "idle"
            return
        threading.Thread(target=run, name="codeloop-warm", daemon=True).start()

    def arm() -> None:
        # The delay is the running loop's timer, not a Timer thread: starting a thread waits until
        # it runs (milliseconds on a busy machine), a cost a fast answer should never pay.
        import asyncio

        try:
            asyncio.get_running_loop().call_later(WARM_DELAY_S, start)
        except RuntimeError:   # no loop here: a timer thread does the waiting
            timer = threading.Timer(WARM_DELAY_S, run)
            timer.name, timer.daemon = "codeloop-warm", True
            timer.start()

    return arm
