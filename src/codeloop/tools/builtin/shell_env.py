"""The environment the model's shell commands get: codeloop's own, without its secrets.

A command the model writes (Bash, a background task, sandboxed or not) must not be able to
print the API key: `env`, `printenv` and `/proc/$PPID/environ` are the first things a
prompt-injected model tries. So, as Codex does by default, variables whose names contain KEY,
SECRET, TOKEN, PASSWORD or CREDENTIAL, and the model providers' variables, are left out —
except those the user names: settings `env` (set for the session on purpose) and the `passEnv`
setting (names, or prefixes ending in `*`; trusted sources only, like `env`).

`/proc/<codeloop>/environ` still holds the environment codeloop started with, whatever
`os.environ` now says; `protect_process` makes codeloop's process non-dumpable before its first
command, which makes that file (and `mem`) unreadable to other processes of the same user
(`CODELOOP_ALLOW_PTRACE=1` keeps debuggers and profilers working).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache

SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL")
PROVIDER_PREFIXES = ("ANTHROPIC_", "OPENAI_", "OPENROUTER_", "CLAUDE_CODE_OAUTH", "AZURE_OPENAI_")
ALLOW_PTRACE_ENV = "CODELOOP_ALLOW_PTRACE"
_PR_SET_DUMPABLE = 4
_protected = False


@lru_cache(maxsize=4096)   # asked for every variable at every command: the names rarely change
def is_secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS) or upper.startswith(PROVIDER_PREFIXES)


def _passes(name: str, passed: Iterable[str]) -> bool:
    for pattern in passed:
        if pattern.endswith("*") and name.startswith(pattern[:-1]) or name == pattern:
            return True
    return False


def command_environment(passed: Iterable[str] = (), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: codeloop's environment) without its secrets, but for the names in `passed`."""
    keep = tuple(passed)
    env = os.environ if base is None else base
    return {k: v for k, v in env.items() if not is_secret(k) or _passes(k, keep)}


def shell_path() -> str:
    """The shell commands run in: bash on PATH (`codeloop.shellpath`: never one planted in the
    project), else /bin/sh."""
    from codeloop.shellpath import bash_path

    return bash_path() or "/bin/sh"


def protect_process() -> None:
    """Make this process non-dumpable (once): other processes of the user — the model's commands
    — can no longer read its /proc files, its starting environment among them. Linux only; a
    failure leaves things as they were (the environment the commands get is scrubbed anyway)."""
    global _protected
    if _protected or not sys.platform.startswith("linux") or os.environ.get(ALLOW_PTRACE_ENV) == "1":
        return
    _protected = True
    try:
        _prctl(_PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError, ImportError):
        pass


def _prctl(option: int, arg: int) -> int:
    """libc's prctl(option, arg, 0, 0, 0). Through `_ctypes`, the C half of ctypes, when it offers
    dlsym and a plain call (CPython's does): the `ctypes` package defines some 60 classes on import,
    about a seventh of the first tool turn's own work, to make this one call. Its calling convention
    is the one `ctypes.CDLL` uses for int arguments, so the call is the same."""
    import _ctypes

    dlopen, dlsym, call = (getattr(_ctypes, n, None) for n in ("dlopen", "dlsym", "call_function"))
    if dlopen is not None and dlsym is not None and call is not None:
        try:
            return int(call(dlsym(dlopen(None, os.RTLD_NOW), "prctl"), (option, arg, 0, 0, 0)))
        except (TypeError, ValueError):
            pass   # CPython calls call_function a debugging aid: if its shape ever changes, ctypes does it
    import ctypes

    return int(ctypes.CDLL(None).prctl(option, arg, 0, 0, 0))
