"""Where codeloop keeps its own files: the config dir (`~/.codeloop`, or `CODELOOP_CONFIG_DIR`).

Settings, trust, permission rules, the tool-schema cache and the session store all start from
here, so it sits in the config layer where every one of them can reach it.
"""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    env = os.environ.get("CODELOOP_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".codeloop"
