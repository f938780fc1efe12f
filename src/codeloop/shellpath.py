"""Where bash is: the one PATH search shared by the Bash tool and hook commands.

shutil.which's search, without importing shutil (and with it bz2 and lzma), except that an empty
PATH entry is not taken to mean the current directory: a `bash` planted in the project must never
be what runs the model's commands or the user's hooks. Cached per PATH value (it was asked at
every command).
"""

from __future__ import annotations

import os
from functools import lru_cache


def bash_path(path: str | None = None) -> str | None:
    """The bash found on `path` (default: this process's PATH; none set: the system default), or None."""
    return _bash_on(os.environ.get("PATH") if path is None else path)


@lru_cache(maxsize=8)
def _bash_on(path: str | None) -> str | None:
    for folder in (path if path is not None else os.defpath).split(os.pathsep):
        candidate = os.path.join(folder, "bash")
        if folder and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
