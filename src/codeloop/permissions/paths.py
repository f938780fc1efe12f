"""Path patterns of Read/Edit rules, and opening the path that was actually checked.

Owns: Claude Code's gitignore-style path specifiers (`//abs`, `~/home`, `/settings-root`,
`./cwd`, bare `x/**`, slash-less `*.env` at any depth), the two forms a path is checked in
(lexical absolute and `realpath`), and `resolve_for_open` / `open_no_symlinks`, which let a tool
open exactly the path the decision was made on.

Why two forms: the lexical form catches what the model *wrote* (`/tmp/../etc/passwd`), the
realpath catches what the kernel will *open* (a symlink into a denied directory). Deny rules
match if either form matches; allow rules must match the realpath.
"""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from typing import Callable

_SETTINGS_DIRS = (".claude", ".codeloop")


def project_root_for(origin: str, cwd: str) -> str:
    """Directory a `/x` pattern is relative to: the project holding the settings file.

    `<root>/.claude/settings.json` → `<root>`; any other settings file → its directory;
    rules from the command line ("cli") or without a file → cwd.
    """
    if not origin or origin == "cli" or not os.path.isabs(origin):
        return os.path.normpath(cwd)
    folder = os.path.dirname(os.path.normpath(origin))
    if os.path.basename(folder) in _SETTINGS_DIRS:
        return os.path.dirname(folder)
    return folder


def path_forms(path: str, cwd: str) -> tuple[str, str]:
    """(lexical absolute, realpath) of a tool's path argument."""
    if "\0" in path:
        raise ValueError("path contains a NUL byte")
    joined = os.path.join(cwd, os.path.expanduser(path))
    return os.path.normpath(joined), os.path.realpath(joined)


def resolve_for_open(path: str, cwd: str | None = None) -> str:
    """The path a tool must open after its permission check: the symlink-free realpath.

    Check-then-open recipe: decide on this realpath (path_decision does), then open *this*
    string, not the original, with `open_no_symlinks` (or at least O_NOFOLLOW): if someone
    swaps a component for a symlink after the check, the open fails with ELOOP instead of
    following it somewhere the check never saw.
    """
    return os.path.realpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(path)))


def open_no_symlinks(real_path: str, flags: int, mode: int = 0o666) -> int:
    """os.open that refuses a symlink at *any* component (walks with dir fds + O_NOFOLLOW).

    Returns a file descriptor; raises OSError (ELOOP/ENOTDIR) when a component became a link.
    Falls back to a plain O_NOFOLLOW open where dir_fd is unsupported.
    """
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if os.open not in getattr(os, "supports_dir_fd", set()) or not os.path.isabs(real_path):
        return os.open(real_path, flags | nofollow, mode)
    parts = [p for p in real_path.split("/") if p]
    fd = os.open("/", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for comp in parts[:-1]:
            nxt = os.open(comp, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not parts:
            return os.dup(fd)
        return os.open(parts[-1], flags | nofollow, mode, dir_fd=fd)
    finally:
        os.close(fd)


def _glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and "]" in glob[i + 2:]:
            end = glob.index("]", i + 2)
            body = glob[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _anchor(spec: str, origin: str, cwd: str) -> tuple[str, str, bool]:
    """(base directory, glob relative to it, anchored?) for a path specifier."""
    if spec.startswith("//"):
        return "/", spec[2:], True
    if spec == "~" or spec.startswith("~/"):
        return os.path.expanduser("~"), spec[2:], True
    if spec.startswith("/"):
        return project_root_for(origin, cwd), spec[1:], True
    if spec.startswith("./"):
        return cwd, spec[2:], True
    # gitignore: a slash anywhere but at the end anchors; otherwise it matches at any depth
    return cwd, spec, "/" in spec.rstrip("/")


def anchor_spec(spec: str, origin: str, cwd: str) -> tuple[str, str, bool]:
    """(base directory, glob relative to it, anchored?) of a Read/Edit specifier (the sandbox
    uses it to find the concrete paths a deny rule covers)."""
    return _anchor(spec.strip(), origin, os.path.normpath(cwd))


@lru_cache(maxsize=512)
def _compile(spec: str, origin: str, cwd: str, anywhere: bool, ignore_case: bool) -> list[re.Pattern[str]]:
    base, glob, anchored = _anchor(spec.strip(), origin, cwd)
    if glob.endswith("/"):
        glob += "**"
    if not glob:
        glob = "**"
    glob = glob.lstrip("/")
    # `dir/**` also names `dir` itself (so Grep/Glob rooted at it are covered), and matching a
    # directory covers what is inside it (gitignore semantics).
    while glob.endswith("/**"):
        glob = glob[:-3]
    tail = (_glob_to_regex(glob) if glob and glob != "**" else ".*") + "(?:/.*)?"
    flags = re.IGNORECASE if ignore_case else 0
    if not anchored and anywhere:
        return [re.compile(r"(?:.*/)?" + tail, flags)]
    bases = {os.path.normpath(base), os.path.realpath(base)}
    prefix = "" if anchored else "(?:.*/)?"
    return [re.compile(re.escape(b.rstrip("/")) + "/" + prefix + tail, flags) for b in sorted(bases)]


def deny_matcher(spec: str, origin: str, cwd: str) -> "Callable[[str], bool]":
    """`path_matches(spec, ·, restrictive=True)` with the patterns compiled once (the sandbox
    tests every path of a project walk against it)."""
    ignore_case = sys.platform in ("darwin", "win32")
    patterns = _compile(spec, origin, os.path.normpath(cwd), True, ignore_case)
    return lambda path: any(p.fullmatch(path) for p in patterns)


def path_matches(spec: str, path: str, *, origin: str, cwd: str, restrictive: bool) -> bool:
    """Whether absolute `path` matches a Read/Edit specifier.

    `restrictive` (deny/ask rules): slash-less patterns like `.env` match at any depth
    anywhere on disk, and on case-insensitive platforms case is ignored — erring towards
    refusing. Allow rules stay anchored under cwd.
    """
    ignore_case = restrictive and sys.platform in ("darwin", "win32")
    return any(p.fullmatch(path) for p in _compile(spec, origin, os.path.normpath(cwd),
                                                   restrictive, ignore_case))
