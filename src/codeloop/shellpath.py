"""Finding a program on PATH for codeloop's own use (bash for commands and hooks, bwrap, rg, the
clipboard helpers): the one PATH search.

shutil.which's search, without importing shutil (and with it bz2 and lzma), except that only
absolute PATH entries count: an empty entry or a relative one (`.`, `bin`) would mean the current
directory — the project — so a `bash`, `bwrap` or `rg` planted in a repository could run as
codeloop's own shell, sandbox or search (shutil.which runs it). Cached per name and PATH value (it
was asked at every command).
"""

from __future__ import annotations

import os
from functools import lru_cache


def find_program(name: str, path: str | None = None) -> str | None:
    """The executable `name` on `path` (default: this process's PATH; none set: the system
    default), its absolute path, or None."""
    return _find(name, os.environ.get("PATH") if path is None else path)


def bash_path(path: str | None = None) -> str | None:
    """The bash commands and hooks run in, or None (then /bin/sh)."""
    return find_program("bash", path)


@lru_cache(maxsize=32)
def _find(name: str, path: str | None) -> str | None:
    for folder in (path if path is not None else os.defpath).split(os.pathsep):
        if not os.path.isabs(folder):
            continue
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def program(name: str) -> str:
    """`find_program(name)` for an argv: its absolute path, or FileNotFoundError — what running a
    missing program raises — rather than leaving the name to exec's own PATH search (which takes
    an empty entry for the current directory)."""
    found = find_program(name)
    if found is None:
        raise FileNotFoundError(2, f"{name}: not found on PATH", name)
    return found
