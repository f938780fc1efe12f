"""Lazy built-in tools: a tool's module is imported only when something beyond its name and API
schema is needed, and schemas come from a small on-disk cache.

Start-up is a feature: the first request can leave before pydantic and the tool modules are
imported. `warm_in_background` (called by the loop when its first request goes out) then imports
them on a daemon thread, so they overlap with the model's time to first token instead of
delaying the first tool call. The cache is
keyed by the codeloop version and the size/mtime of each tool's source file, so an edited or
upgraded tool never serves a stale schema; a missing or corrupt cache is simply rebuilt.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable

_CACHE_VERSION = 1
# Warmed first: the tools a session almost always calls, in about the order it calls them.
WARM_FIRST = ("Bash", "Read", "Grep", "Glob", "Edit", "Write")
_warm_started = False
WARM_DELAY_S = 0.03


class SchemaCache:
    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        self._schemas: dict[str, dict[str, Any]] | None = None

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._schemas is None:
            self._schemas = {}
            try:
                data = json.loads(self.path.read_text())
                if data.get("v") == _CACHE_VERSION and data.get("key") == self.key:
                    self._schemas = dict(data.get("schemas") or {})
            except (OSError, ValueError, AttributeError):
                pass
        return self._schemas

    def get(self, name: str) -> dict[str, Any] | None:
        return self._load().get(name)

    def put(self, name: str, schema: dict[str, Any]) -> None:
        schemas = self._load()
        schemas[name] = schema
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"v": _CACHE_VERSION, "key": self.key, "schemas": schemas}))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs start-up time


def cache_key(module_files: list[Path]) -> str:
    from codeloop.version import __version__

    parts = [__version__]
    for f in module_files:
        try:
            st = f.stat()
            parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{f.name}:missing")
    return "|".join(parts)


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
                    skip_pydantic_plugin_scan()
                    self._tool = getattr(importlib.import_module(self._module), self._class_name)(**self._kwargs)
        return self._tool

    def api_schema(self) -> dict[str, Any]:
        cached = self._cache.get(self.name) if self._cache is not None else None
        if cached is not None:
            return cached
        schema = self.real.api_schema()
        if self._cache is not None:
            self._cache.put(self.name, schema)
        return schema

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


def warm_in_background(tools: list[Any]) -> threading.Thread | None:
    """Once per process: import pydantic and the likely tools' modules on a daemon thread.

    Called when the first request is on its way, so the imports run while the model thinks; a tool
    call that arrives first simply waits for the import it needs (the import lock), never twice."""
    global _warm_started
    lazy = [t for t in tools if isinstance(t, LazyTool) and t._tool is None]
    if _warm_started or not lazy:
        return None
    _warm_started = True
    order = {name: i for i, name in enumerate(WARM_FIRST)}
    lazy = sorted((t for t in lazy if t.name in order), key=lambda t: order[t.name])

    def run() -> None:
        try:
            skip_pydantic_plugin_scan()
            import pydantic  # noqa: F401
            for tool in lazy:
                tool.real
        except Exception:  # noqa: BLE001 — a warm-up never fails anything: the real use reports it
            pass

    # A short delay lets the request leave first: importing holds the GIL the sender needs.
    thread = threading.Timer(WARM_DELAY_S, run)
    thread.name, thread.daemon = "codeloop-warm", True
    thread.start()
    return thread
