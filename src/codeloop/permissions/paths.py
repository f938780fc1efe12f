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

import errno
import os
import re
import stat
import sys
from collections.abc import Callable
from functools import lru_cache

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

    Check-then-open recipe: resolve first, decide on this realpath (and on the path as written),
    then open *this* string with `open_no_symlinks`: if a component is swapped for a symlink
    after the check, the open fails with ELOOP instead of following it somewhere the check
    never saw. (Resolving *after* the check would let a swap in between pick the target.)
    """
    if "\0" in path:
        raise ValueError("path contains a NUL byte")
    return os.path.realpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(path)))


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _components(real_path: str) -> list[str]:
    if not os.path.isabs(real_path):
        raise ValueError(f"not an absolute path: {real_path!r}")
    parts = [p for p in real_path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        # a realpath never holds these; walking `..` by fd would leave the checked tree
        raise OSError(errno.EINVAL, "path is not normalised", real_path)
    return parts


def open_dir_no_symlinks(real_path: str, *, create: bool = False, mode: int = 0o777) -> int:
    """A directory fd for `real_path`, reached without following a symlink at any component.

    `create` makes missing components (like `mkdir -p`) one by one under the fd of their
    parent, so a folder swapped for a link mid-way is refused rather than written through.
    """
    parts = _components(real_path)
    fd = os.open("/", _DIR_FLAGS)
    try:
        for comp in parts:
            try:
                nxt = os.open(comp, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(comp, mode, dir_fd=fd)
                except FileExistsError:
                    pass  # made by someone else meanwhile: the no-follow open below judges it
                nxt = os.open(comp, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.dup(fd)
    finally:
        os.close(fd)


def open_no_symlinks(real_path: str, flags: int, mode: int = 0o666) -> int:
    """os.open that refuses a symlink at *any* component (walks with dir fds + O_NOFOLLOW).

    Returns a file descriptor; raises OSError (ELOOP/ENOTDIR) when a component became a link.
    `real_path` must be absolute and normalised (what `resolve_for_open` returns). Where
    dir_fd is unsupported only the last component is protected (plain O_NOFOLLOW).
    """
    if os.open not in getattr(os, "supports_dir_fd", set()):
        return os.open(real_path, flags | _NOFOLLOW, mode)
    parts = _components(real_path)
    if not parts:
        return os.open("/", flags, mode)
    parent = open_dir_no_symlinks("/" + "/".join(parts[:-1]))
    try:
        return os.open(parts[-1], flags | _NOFOLLOW, mode, dir_fd=parent)
    finally:
        os.close(parent)


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


def deny_matcher(spec: str, origin: str, cwd: str) -> Callable[[str], bool]:
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


_MAGIC = re.compile(r"[*?\[{\\]")


def _walk_start(spec: str, origin: str, cwd: str) -> tuple[str, bool]:
    """Where the files a specifier names live: (folder or file, anchored?)."""
    base, glob, anchored = _anchor(spec.strip(), origin, cwd)
    static: list[str] = []
    for part in glob.strip("/").split("/"):
        if not part or _MAGIC.search(part) or part == "**":
            break
        static.append(part)
    return os.path.join(base, *static) if static else base, anchored


def inodes_named(specs: list[tuple[str, str]], cwd: str, roots: list[str], *,
                 limit: int = 200_000) -> frozenset[tuple[int, int]] | None:
    """(st_dev, st_ino) of every regular file the (specifier, origin) pairs name.

    What a hard link is judged by: a file whose inode is in this set *is* a denied file under
    another name. Anchored patterns are enumerated below their static prefix; patterns that
    match at any depth anywhere on disk (`.env`) are enumerated below `roots` (the working
    directories). Returns None when more than `limit` entries would have to be looked at, so
    the caller can fail closed instead of trusting a partial set.
    """
    found: set[tuple[int, int]] = set()
    budget = limit
    for spec, origin in specs:
        start, anchored = _walk_start(spec, origin, cwd)
        for top in ([start] if anchored else [start, *roots]):
            try:
                st = os.lstat(top)
            except OSError:
                continue
            tops = [(top, st)]
            if not stat.S_ISDIR(st.st_mode):
                budget -= 1
            else:
                tops = []
                for dirpath, _dirs, files in os.walk(top):
                    budget -= len(files) + 1
                    if budget < 0:
                        return None
                    for name in files:
                        full = os.path.join(dirpath, name)
                        try:
                            tops.append((full, os.lstat(full)))
                        except OSError:
                            continue
            for path, fst in tops:
                if stat.S_ISREG(fst.st_mode) and path_matches(
                        spec, path, origin=origin, cwd=cwd, restrictive=True):
                    found.add((fst.st_dev, fst.st_ino))
    return frozenset(found)


def physical(path: str) -> list[str | None]:
    """The lexical path, and where the kernel goes when a `..` follows a symlink (`hk/..` is the
    link target's parent): the only I/O here, an lstat per component before a `..`."""
    lexical = os.path.normpath(path)
    if "/.." not in path and not path.startswith(".."):
        return [lexical]
    cur = "/" if path.startswith("/") else ""
    for name in path.split("/"):
        if name in ("", "."):
            continue
        cur = os.path.dirname(os.path.realpath(cur)) if name == ".." else os.path.join(cur, name)
    kernel = os.path.normpath(cur or ".")
    return [lexical] if kernel == lexical else [lexical, kernel]
