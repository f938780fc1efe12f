"""Configuration a sandboxed call planted anywhere in the writable roots: found, reverted, reported.

Bind mounts protect the project's own `.git/config`, hooks, `.claude/`, `.codeloop/` and
`.mcp.json`, but not the same names in subfolders, which cannot be listed before the call
creates them. So around every sandboxed call (`runtime.Sandbox.prepare`):

1. `take(roots, previous)` walks the roots and records only the sensitive names: `.git` (a
   folder: its `config`, `config.worktree`, `commondir`, `hooks/`, `index` and the same in
   `modules/*` and `worktrees/*`; a file: its bytes), `.claude/`, `.codeloop/`, `.mcp.json`,
   and folders laid out like a bare repository. A folder whose (inode, mtime, ctime) did not
   change since the previous snapshot is not listed again (ctime cannot be set back by a
   process), so after the first walk a call costs one `lstat` per folder.
2. `revert(before, after)` compares and undoes, and returns one line per thing undone:
   - `.claude/`, `.codeloop/`, `.mcp.json`: new entries removed, changed or removed files put
     back from the saved bytes (a changed file too big to have been saved is removed);
   - git configuration: a new or changed config keeps only what cannot start a program
     (`_SAFE_KEY`: what `git init`, `clone`, `worktree add`, `submodule` write) — a changed one
     gets its old bytes back, a new one is rewritten with its safe entries; a new or changed
     hook (not `*.sample`, which never runs) is removed or put back; a `commondir` or `.git`
     file must point into a git folder this scan watches, or it is removed; a new gitlink in an
     index that existed before puts the old index back.
   A brand-new repository (`git init sub`, `git clone`) stays usable: only what would run a
   program outside the sandbox is taken out of it. Fails closed: past `MAX_ENTRIES` listed
   entries the walk before a call raises `TooBig` and the caller refuses the call.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any

from codeloop.sandbox.gitconf import config_entries, index_gitlinks, render_config, safe_key

SENSITIVE = frozenset({".git", ".claude", ".codeloop", ".mcp.json"})
MAX_ENTRIES = 1_000_000
MAX_SAVED = 1 << 20                 # bytes kept per file to put it back
_GIT_FILES = ("config", "config.worktree", "commondir", "index")


class TooBig(Exception):
    """More entries under the roots than the scan will list."""


@dataclass(frozen=True)
class Entry:
    """One watched path as it was: kind (file, dir, link, other), identity and saved bytes."""
    kind: str
    key: tuple[int, ...] = ()
    data: bytes | None = None       # regular files up to MAX_SAVED


@dataclass
class Snapshot:
    """The sensitive entries under the roots, and each folder's listing (for the next walk)."""
    entries: dict[str, Entry] = field(default_factory=dict)
    gitdirs: set[str] = field(default_factory=set)
    folders: dict[str, tuple[tuple[int, ...], Any]] = field(default_factory=dict)


def _entry(path: str, prev: Snapshot | None) -> Entry | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return Entry("dir", (st.st_ino,))
    if stat.S_ISLNK(st.st_mode):
        return Entry("link", (st.st_ino, st.st_ctime_ns))
    if not stat.S_ISREG(st.st_mode):
        return Entry("other", (st.st_ino,))
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    old = prev.entries.get(path) if prev else None
    if old is not None and old.key == key:
        return old
    data = None
    if st.st_size <= MAX_SAVED or os.path.basename(path) == "index":
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
        except OSError:
            data = None
    return Entry("file", key, data)


def _tree(top: str, snap: Snapshot, prev: Snapshot | None, budget: list[int]) -> None:
    """Record `top` and, for a folder, everything under it (a `.claude/`, a `hooks/`)."""
    stack = [top]
    while stack:
        path = stack.pop()
        e = _entry(path, prev)
        if e is None:
            continue
        snap.entries[path] = e
        if e.kind != "dir":
            continue
        try:
            names = os.listdir(path)
        except OSError:
            continue
        budget[0] -= len(names)
        if budget[0] < 0:
            raise TooBig(path)
        stack.extend(f"{path}/{n}" for n in names)


def _gitdir(gd: str, snap: Snapshot, prev: Snapshot | None, budget: list[int], depth: int = 0) -> None:
    """A git folder's files that name programs or other git folders, and its nested git folders."""
    snap.gitdirs.add(gd)
    for name in _GIT_FILES:
        e = _entry(os.path.join(gd, name), prev)
        if e is not None:
            snap.entries[os.path.join(gd, name)] = e
    _tree(os.path.join(gd, "hooks"), snap, prev, budget)
    if depth > 8:
        return
    for sub in ("modules", "worktrees"):
        stack = [os.path.join(gd, sub)]
        while stack:
            d = stack.pop()
            try:
                names = os.listdir(d)
            except OSError:
                continue
            budget[0] -= len(names)
            if budget[0] < 0:
                raise TooBig(d)
            for n in names:
                p = os.path.join(d, n)
                if os.path.isdir(p) and not os.path.islink(p):
                    if os.path.exists(os.path.join(p, "HEAD")):
                        _gitdir(p, snap, prev, budget, depth + 1)
                    elif sub == "modules":          # a submodule name may hold slashes
                        stack.append(p)


def _listing(d: str, budget: list[int]) -> tuple[tuple[str, ...], tuple[tuple[str, bool], ...], bool] | None:
    """A folder's subfolders, its sensitive entries and whether it is laid out like a bare
    repository: all a later walk needs, so an unchanged folder costs one lstat."""
    try:
        with os.scandir(d) as it:
            items = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return None
    budget[0] -= len(items)
    if budget[0] < 0:
        raise TooBig(d)
    names = {n for n, _ in items}
    bare = {"HEAD", "objects", "refs"} <= names and not d.endswith("/.git")
    return (tuple(n for n, is_dir in items if is_dir and n not in SENSITIVE),
            tuple((n, is_dir) for n, is_dir in items if n in SENSITIVE), bare)


def take(roots: list[str], previous: Snapshot | None = None, *, skip: frozenset[str] = frozenset(),
         limit: int = MAX_ENTRIES) -> Snapshot:
    """The sensitive entries under `roots` (real paths); `skip` the paths mounted read-only; more
    than `limit` entries listed raises TooBig."""
    snap, budget = Snapshot(), [limit]
    stack = list(dict.fromkeys(roots))
    cache = previous.folders if previous else {}
    folders, lstat, is_dir_mode = snap.folders, os.lstat, stat.S_ISDIR
    while stack:
        d = stack.pop()
        try:
            st = lstat(d)
        except OSError:
            continue
        if not is_dir_mode(st.st_mode):
            continue
        ident = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        cached = cache.get(d)
        if cached is not None and cached[0] == ident:
            listing = cached[1]
        else:
            found = _listing(d, budget)
            if found is None:
                continue
            listing = found
        folders[d] = (ident, listing)
        subdirs, sensitive, bare = listing
        if bare:
            _gitdir(d, snap, previous, budget)      # a bare repository: git uses it from inside
        for name, is_dir in sensitive:
            path = f"{d}/{name}"
            if path in skip:
                continue
            if name == ".git" and is_dir:
                snap.entries[path] = Entry("dir")
                _gitdir(path, snap, previous, budget)
            else:
                _tree(path, snap, previous, budget)
        stack.extend(f"{d}/{n}" for n in subdirs)
    return snap


# -- comparing and undoing -----------------------------------------------------------------------
def _remove(path: str) -> bool:
    import shutil

    if os.path.realpath(os.path.dirname(path)) != os.path.dirname(path):
        return False                    # a folder on the way became a link: never act through it
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _put(path: str, data: bytes) -> bool:
    """Write `data` at `path` in place of whatever is there now (file, link or folder)."""
    parent = os.path.dirname(path)
    if os.path.realpath(parent) != parent or not _remove(path):
        return False
    tmp = os.path.join(parent, f".codeloop-restore-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def _undo(path: str, old: Entry | None, what: str, out: list[str]) -> None:
    """Put `path` back as `old` was (remove it when it is new or was not saved)."""
    if old is not None and old.kind == "file" and old.data is not None:
        ok, verb = _put(path, old.data), "restored"
    else:
        ok, verb = _remove(path), "removed"
    out.append(f"{verb} {path} ({what})" if ok else f"could NOT undo {path} ({what}); remove it by hand")


def _owner_gitdir(path: str, gitdirs: set[str]) -> str | None:
    d = os.path.dirname(path)
    while d not in gitdirs and d != os.path.dirname(d):
        d = os.path.dirname(d)
    return d if d in gitdirs else None


def _empty(path: str, e: Entry | None, snap: Snapshot) -> bool:
    """Still what bwrap makes as a mount point: nothing, an empty file or an empty folder."""
    if e is None or (e.kind == "file" and e.key[1] == 0):
        return True
    return e.kind == "dir" and not any(p.startswith(path + "/") for p in snap.entries)


def revert(before: Snapshot, after: Snapshot, placeholders: frozenset[str] = frozenset()) -> list[str]:
    """Undo what changed between the snapshots that could run a program later; one line each.
    `placeholders` are mount points bwrap made for missing protected paths: left alone while empty."""
    out: list[str] = []
    paths = sorted(set(before.entries) | set(after.entries), key=lambda p: (p.count("/"), p))
    done: list[str] = []
    for path in paths:
        old, new = before.entries.get(path), after.entries.get(path)
        if old == new or any(path.startswith(d + "/") for d in done):
            continue
        if path in placeholders and _empty(path, new, after):
            continue
        name = os.path.basename(path)
        gd = _owner_gitdir(path, before.gitdirs | after.gitdirs)
        rel = os.path.relpath(path, gd) if gd is not None else ""
        if gd is not None and (rel in _GIT_FILES or rel == "hooks" or rel.startswith("hooks/")):
            _git_change(path, gd, old, new, before, after, out)
            continue
        parts = path.split("/")
        if ".claude" in parts or ".codeloop" in parts or name == ".mcp.json":
            if new is None and old is not None and old.kind == "dir":
                if os.path.realpath(os.path.dirname(path)) == os.path.dirname(path):
                    try:                       # made again, its files put back one by one
                        os.makedirs(path, 0o755, exist_ok=True)
                    except OSError:
                        pass
                continue
            if new is not None and new.kind == "dir" and old is not None and old.kind == "dir":
                continue
            if new is not None and new.kind == "dir" and old is None:
                _remove(path)
                done.append(path)
                out.append(f"removed {path} (new configuration codeloop or Claude Code would load)")
                continue
            _undo(path, old, "configuration codeloop or Claude Code would load", out)
        elif name == ".git" and new is not None and new.kind != "dir":
            if new.kind == "file" and _points_into(path, new.data, after.gitdirs):
                continue
            _undo(path, old, "a .git file names the folder git reads configuration from", out)
    return out


def _points_into(path: str, data: bytes | None, gitdirs: set[str]) -> bool:
    text = (data or b"").decode("utf-8", "replace").strip()
    if text.startswith("gitdir:"):
        text = text[7:].strip()
    elif os.path.basename(path) != "commondir":
        return False
    # exactly a git folder this scan watched (its config and hooks were checked), nothing deeper
    return os.path.realpath(os.path.join(os.path.dirname(path), text)) in gitdirs


def _git_change(path: str, gd: str, old: Entry | None, new: Entry | None, before: Snapshot,
                after: Snapshot, out: list[str]) -> None:
    name, rel = os.path.basename(path), os.path.relpath(path, gd)
    if new is None:
        return                                 # removing git files or hooks starts nothing
    if rel.startswith("hooks" + os.sep):
        if new.kind == "dir" or (name.endswith(".sample") and new.kind == "file"):
            return
        _undo(path, old, "a git hook runs on commit, checkout, merge", out)
    elif rel == "hooks":
        if new.kind != "dir":
            _undo(path, old, "git's hooks folder", out)
    elif name in ("config", "config.worktree"):
        _config_change(path, old, new, out)
    elif name == "commondir":
        if not (new.kind == "file" and _points_into(path, new.data, after.gitdirs)):
            _undo(path, old, "commondir names the folder git reads configuration from", out)
    elif name == "index" and gd in before.gitdirs:
        added = _gitlinks(new) - (_gitlinks(old) if old is not None else frozenset())
        if added:
            shown = ", ".join(sorted(p.decode("utf-8", "replace") for p in added)[:5])
            _undo(path, old, f"new gitlink {shown}: git status would run git inside it; the index is back "
                             f"as before this command, so stage again without it, or ask the user to add the "
                             f"submodule outside the sandbox", out)


def _config_change(path: str, old: Entry | None, new: Entry, out: list[str]) -> None:
    if new.kind != "file" or new.data is None:
        _undo(path, old, "git configuration replaced by something git cannot vouch for", out)
        return
    after = config_entries(new.data)
    had = config_entries(old.data) if old is not None and old.kind == "file" and old.data is not None else []
    if after is None:
        _undo(path, old, "git configuration git cannot read", out)
        return
    bad = [f"{k}={v}" for k, v in after if not safe_key(k) and (k, v) not in (had or [])]
    if not bad:
        return
    why = "it names programs git would run: " + ", ".join(bad[:3])
    if old is not None and old.kind == "file" and old.data is not None:
        _undo(path, old, why, out)
        return
    kept = [(k, v) for k, v in after if safe_key(k)]
    ok = _put(path, render_config(kept)) if kept else _remove(path)
    out.append(f"{'rewrote' if kept else 'removed'} {path} without what {why}" if ok
               else f"could NOT undo {path} ({why}); remove it by hand")


def _gitlinks(e: Entry) -> frozenset[bytes]:
    return index_gitlinks(e.data if e.kind == "file" else None)


_previous: dict[tuple[str, ...], Snapshot] = {}
_NOTE = ("The sandbox undid configuration this command wrote that would run programs outside the sandbox "
         "later (git config, hooks, gitlinks, .git files, .claude/, .codeloop/, .mcp.json):\n")


class Watch:
    """One call's watch: the snapshot before (raises TooBig), and `finish()` after."""

    def __init__(self, roots: list[str], skip: frozenset[str], placeholders: frozenset[str] = frozenset()) -> None:
        import time

        self.roots, self.skip, self.key, self.placeholders = roots, skip, tuple(roots), placeholders
        t = time.perf_counter()
        self.before = take(roots, _previous.get(self.key), skip=skip)
        _previous[self.key] = self.before
        self.cost_ms = (time.perf_counter() - t) * 1000

    def finish(self) -> list[str]:
        """Undo what the call planted; the lines to show the model (also logged)."""
        import logging
        import time

        t, log = time.perf_counter(), logging.getLogger(__name__)
        try:  # no limit after the call: a flood of files cannot outrun the check (at the command's cost)
            after = take(self.roots, self.before, skip=self.skip, limit=1 << 62)
            lines = revert(self.before, after, self.placeholders)
            _previous[self.key] = after if not lines else take(self.roots, after, skip=self.skip, limit=1 << 62)
        except Exception as exc:  # a bug here must not hide a planting: said loudly, never swallowed
            log.exception("sandbox: the check for planted configuration failed")
            _previous.pop(self.key, None)
            return [f"The sandbox could NOT check what this command changed ({exc!r}): look for new .git "
                    f"config or hooks, .claude/, .codeloop/ or .mcp.json in subfolders before running git there."]
        self.cost_ms += (time.perf_counter() - t) * 1000
        log.debug("planted-configuration scan: %.1f ms", self.cost_ms)
        for line in lines:
            log.warning("sandbox: %s", line)
        return [_NOTE + "\n".join(f"- {x}" for x in lines)] if lines else []
