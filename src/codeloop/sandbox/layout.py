"""What the sandboxed filesystem looks like: writable roots, protected paths, masked paths.

Owns `Layout` and `plan_layout`. Everything is resolved to real paths here, once per Bash
call, so a symlink (`/tmp/x -> /`) can never widen a writable root, and a protected path that
is itself a symlink makes the plan fail (`LayoutError`): a mount cannot pin a symlink, so the
sandbox refuses to start rather than leave it writable.

Protected paths inside a writable root stay read-only. A protected path that does not exist yet
is still made read-only: bubblewrap creates an empty mount point for it (an empty file or
folder), which `runtime.py` removes again after the call. Every folder between a root and a
protected path is bind-mounted onto itself too, which makes it a mount point the sandboxed
command cannot rename (`mv .git .old && mkdir .git` would otherwise sidestep `.git/config`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

# Per writable root: (relative path, kind). A missing `.git` is protected as a whole, so the
# sandbox cannot plant a repository whose config runs programs on the next `git status`.
# Editor and husky folders run programs too (tasks, run configurations, hooks at the next commit):
# read-only, as Claude Code guards them.
_ROOT_PROTECTED = ((".claude", "dir"), (".codeloop", "dir"), (".mcp.json", "file"),
                   (".git/config", "file"), (".git/hooks", "dir"), (".vscode", "dir"), (".idea", "dir"),
                   (".husky", "dir"))
# In the home folder (matters only when home lies inside a writable root).
_HOME_PROTECTED = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
                   ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc",
                   ".gitconfig", ".inputrc", ".claude.json", ".npmrc", ".vimrc", ".exrc")
# Folders of programs or configuration that starts them: git's per-user config, ssh (`Match exec`,
# `ProxyCommand`), fish, Claude Code's and codeloop's own, and the user's bin folders on $PATH.
_HOME_PROTECTED_DIRS = (".config/git", ".ssh", ".config/fish", ".claude", ".codeloop", ".config/systemd",
                        ".config/autostart", ".local/bin", "bin")
# Files in a `.git` folder that redirect where git reads its config from (`commondir` points at
# another repository folder; `config.worktree` adds config). A missing one cannot get a
# placeholder (git dies on an empty `commondir`), so it is kept absent instead: whatever the call
# created there is removed when the call ends, before any host git can read it.
_GIT_REDIRECTS = ("commondir", "config.worktree")
# An unanchored Read deny pattern (`.env`) is looked for in the writable roots; past this many
# entries the walk gives up and the sandbox refuses, rather than leave a match unmasked.
MAX_WALK_ENTRIES = 200_000
_ANY = frozenset("*?[")


class LayoutError(Exception):
    """The sandbox cannot be set up safely; the message says why and what to do."""


class Kind(str, Enum):
    FILE = "file"
    DIR = "dir"


@dataclass(frozen=True)
class Protected:
    """A protected path in the sandbox layout: its kind and whether it exists."""
    path: str
    kind: Kind
    exists: bool


@dataclass
class Layout:
    """The sandbox's mounts: writable roots, pins, protected and masked paths."""
    roots: list[str]                                    # writable, real paths
    pins: list[str] = field(default_factory=list)       # folders bound onto themselves
    protected: list[Protected] = field(default_factory=list)
    masked: list[tuple[str, Kind]] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)     # removed after the call if created


def _real_root(path: str, what: str) -> str | None:
    real = os.path.realpath(path)
    if real == "/":
        raise LayoutError(f"{what} {path} resolves to '/', which the sandbox will not make writable")
    return real if os.path.isdir(real) else None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _lexists(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _protect(root: str, rel: str, kind: Kind, layout: Layout) -> None:
    """Protect root/rel: pin the folders on the way, stop at the first missing component."""
    parts = [p for p in rel.split("/") if p]
    cur = root
    for i, name in enumerate(parts):
        cur = os.path.join(cur, name)
        if any(p.path == cur for p in layout.protected):
            return                              # already protected as a whole (or a placeholder)
        st = _lexists(cur)
        last = i == len(parts) - 1
        if st is None:
            layout.protected.append(Protected(cur, kind if last else Kind.DIR, False))
            return
        if stat.S_ISLNK(st.st_mode):
            raise LayoutError(f"{cur} is a symlink, so the sandbox cannot keep it read-only; "
                              f"replace it with a real file or folder, or disable the sandbox")
        if last:
            layout.protected.append(Protected(cur, Kind.DIR if stat.S_ISDIR(st.st_mode) else Kind.FILE, True))
            return
        if not stat.S_ISDIR(st.st_mode):
            # `.git` as a file (a worktree's pointer): the pointer itself is what must not change
            layout.protected.append(Protected(cur, Kind.FILE, True))
            return
        if cur not in layout.pins:
            layout.pins.append(cur)


def _under_roots(path: str, roots: list[str]) -> str | None:
    return next((r for r in roots if _inside(path, r) and path != r), None)


def plan_layout(roots: Iterable[str], *, home: str, global_protected: Iterable[str],
                deny_write: Iterable[str], masks: Iterable[tuple[str, Kind]]) -> Layout:
    """The layout for one call. `global_protected` are folders (config dirs) protected wherever
    they are; `deny_write` extra protected paths; `masks` the Read-deny paths to hide."""
    real_roots: list[str] = []
    for r in roots:
        real = _real_root(r, "writable folder")
        if real and real not in real_roots:
            real_roots.append(real)
    layout = Layout(real_roots)
    for root in real_roots:
        for rel, kind in _ROOT_PROTECTED:
            _protect(root, rel, Kind(kind), layout)
        _git_redirects(root, layout)
    extra = [(os.path.join(home, f), Kind.FILE) for f in _HOME_PROTECTED]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    extra += [(os.path.join(home, d), Kind.DIR) for d in _HOME_PROTECTED_DIRS]
    if xdg:
        extra.append((os.path.join(xdg, "git"), Kind.DIR))
    extra += [(p, Kind.DIR) for p in global_protected]
    extra += [(p, Kind.DIR if os.path.isdir(p) else Kind.FILE) for p in deny_write]
    for path, kind in extra:
        # resolve the parent (a symlinked home is fine), never the protected name itself
        path = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
        under = _under_roots(path, real_roots)
        if under is not None:
            _protect(under, os.path.relpath(path, under), kind, layout)
    # a hard link to a protected file elsewhere in a root would be a writable alias of it
    linked = [(p.path, Kind.FILE) for p in layout.protected if p.exists and p.kind is Kind.FILE]
    for path, _ in _hard_links(linked, real_roots):
        if all(p.path != path for p in layout.protected):
            layout.protected.append(Protected(path, Kind.FILE, True))
    seen: set[str] = set()
    for path, kind in masks:
        if path not in seen and not any(_inside(path, m) for m, _ in layout.masked):
            seen.add(path)
            layout.masked.append((path, kind))
            _pin_parents(path, real_roots, layout)
    return layout


def _pin_parents(path: str, roots: list[str], layout: Layout) -> None:
    """Pin the folders between a root and a masked path: renaming one (`mv keys k2`) would move
    the file out from under its mask for the next call."""
    root = _under_roots(path, roots)
    if root is None:
        return
    cur = root
    for name in os.path.relpath(os.path.dirname(path), root).split("/"):
        if name in ("", "."):
            break
        cur = os.path.join(cur, name)
        st = _lexists(cur)
        if st is None or not stat.S_ISDIR(st.st_mode):
            return
        if cur not in layout.pins:
            layout.pins.append(cur)


def _git_redirects(root: str, layout: Layout) -> None:
    """Protect (or keep absent) the files that redirect git's config, in the root's git folder
    and, for a worktree, in the folder its `.git` file points at when that lies in a root."""
    dot_git = os.path.join(root, ".git")
    st = _lexists(dot_git)
    if st is None:
        return
    gitdirs = [dot_git] if stat.S_ISDIR(st.st_mode) else []
    if stat.S_ISREG(st.st_mode):
        try:
            with open(dot_git, encoding="utf-8", errors="replace") as f:
                line = f.read(4096).strip()
        except OSError:
            line = ""
        if line.startswith("gitdir:"):
            target = os.path.realpath(os.path.join(root, line[7:].strip()))
            if _under_roots(target, layout.roots) is not None and os.path.isdir(target):
                gitdirs.append(target)
                for rel, kind in (("config", Kind.FILE), ("hooks", Kind.DIR), ("gitdir", Kind.FILE)):
                    t = _under_roots(target, layout.roots)
                    _protect(t, os.path.relpath(os.path.join(target, rel), t), kind, layout)  # type: ignore[arg-type]
    for gd in gitdirs:
        for name in _GIT_REDIRECTS:
            path = os.path.join(gd, name)
            fst = _lexists(path)
            if fst is None:
                layout.absent.append(path)
            elif stat.S_ISLNK(fst.st_mode):
                raise LayoutError(f"{path} is a symlink, so the sandbox cannot keep it read-only; "
                                  f"replace it with a real file, or disable the sandbox")
            else:
                layout.protected.append(Protected(path, Kind.DIR if stat.S_ISDIR(fst.st_mode) else Kind.FILE, True))
                root_of = _under_roots(gd, layout.roots)
                if root_of is not None:
                    _pin_parents(path, layout.roots, layout)


# -- Read-deny paths -----------------------------------------------------------------------------
def _walk(top: str, budget: list[int]) -> Iterable[tuple[str, os.DirEntry[str]]]:
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            budget[0] -= 1
            if budget[0] < 0:
                raise LayoutError(f"too many files under {top} to find every path a Read deny rule covers; "
                                  f"anchor the rule (e.g. Read(./path)) or disable the sandbox")
            yield d, e
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)


def find_masks(specs: Iterable[tuple[str, str, bool, Callable[[str], bool]]],
               roots: list[str]) -> list[tuple[str, Kind]]:
    """Concrete paths to mask for Read deny specifiers.

    `specs` holds (base, glob, anchored, matches) per specifier: `anchor_spec`'s split and the
    permission layer's own matcher, so the sandbox hides exactly what a Read would be refused.
    Literal anchored specs cost one lstat; patterns walk their base (anchored) or the writable
    roots (unanchored, `.env` at any depth), each folder once for all patterns. Regular files
    hard-linked to a masked file are masked too.
    """
    out: list[tuple[str, Kind]] = []
    walks: dict[str, list[Callable[[str], bool]]] = {}
    for base, glob, anchored, matches in specs:
        glob = glob.rstrip("/")
        while glob.endswith("/**"):
            glob = glob[:-3]
        if anchored and not (_ANY & set(glob)) and glob not in ("", "**"):
            path = os.path.normpath(os.path.join(base, glob))
            for p in {path, os.path.realpath(path)}:
                st = _lexists(p)
                if st is not None:
                    out.append((p, Kind.DIR if stat.S_ISDIR(st.st_mode) else Kind.FILE))
            continue
        for top in ([base] if anchored else roots):
            walks.setdefault(top, []).append(matches)
    budget = [MAX_WALK_ENTRIES]
    for top, matchers in walks.items():
        if not os.path.isdir(top):
            continue
        if any(m(top) for m in matchers):
            out.append((top, Kind.DIR))
            continue
        for _d, e in _walk(top, budget):
            if any(m(e.path) for m in matchers):
                out.append((e.path, Kind.DIR if e.is_dir(follow_symlinks=False) else Kind.FILE))
    return out + _hard_links(out, roots)


def _hard_links(masked: list[tuple[str, Kind]], roots: list[str]) -> list[tuple[str, Kind]]:
    inodes = set()
    for path, kind in masked:
        st = _lexists(path)
        if kind is Kind.FILE and st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            inodes.add((st.st_dev, st.st_ino))
    if not inodes:
        return []
    found: list[tuple[str, Kind]] = []
    budget = [MAX_WALK_ENTRIES]
    for root in roots:
        for _d, e in _walk(root, budget):
            if e.is_file(follow_symlinks=False):
                st = e.stat(follow_symlinks=False)
                if (st.st_dev, st.st_ino) in inodes:
                    found.append((e.path, Kind.FILE))
    return found
