"""Where codeloop keeps its own files: the config dir (`~/.codeloop`, or `CODELOOP_CONFIG_DIR`).

Settings, trust, permission rules, the tool-schema cache and the session store all start from
here, so it sits in the config layer where every one of them can reach it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def config_root() -> str:
    """The config dir as a string, without loading pathlib: the CLI's first step (the import
    cache, cli.startup.importcache) reads it before the modules it serves are loaded."""
    env = os.environ.get("CODELOOP_CONFIG_DIR")
    path = os.path.expanduser(env) if env else os.path.join(os.path.expanduser("~"), ".codeloop")
    if path.startswith("~"):   # as pathlib's expanduser: never a folder named "~" in the project
        raise RuntimeError("Could not determine home directory.")
    return path


def config_dir() -> Path:
    from pathlib import Path

    return Path(config_root())


def import_cache_root() -> str | None:
    """Where the CLI's import cache (cli.startup.importcache) keeps its files:
    `CODELOOP_IMPORT_CACHE` (a folder; `0` or `off`: no cache) or the config dir's cache folder."""
    chosen = os.environ.get("CODELOOP_IMPORT_CACHE", "")
    if chosen.lower() in ("0", "off", "false", "no"):
        return None
    # normalised (no `//`, no trailing `/`), as config_dir()'s paths are: it is also a protected path
    return os.path.abspath(os.path.expanduser(chosen) if chosen else os.path.join(config_root(), "cache"))
