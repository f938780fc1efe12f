"""Which denied paths a git command could reach through git's objects, for `git_reads.py`.

Owns the path side of the git read check: `DeniedPaths` (the Read deny rules of a session as fast
matchers), whether a `REV:path` / `:N:path` word names a denied path (the path part is relative to
the repository's top, which is not known without asking git, so every folder from git's working
folder up to `/` is tried), whether a list of pathspecs keeps a command away from every denied path
(`restricts`), and whether the index or `HEAD` holds a denied path (`tracked_denied`, the only part
that runs git: `git diff` of the work tree prints what the index holds).

Pathspecs are honoured only when plain: a literal path, not denied, that is a regular file in the
work tree or a folder no deny rule could match inside. Globs, `:(magic)` and `:/` are not read —
the caller asks. Exclusions (`:!x`, `:(exclude)x`) are ignored: they only narrow.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from codeloop.shellpath import program

_GLOB_CHARS = re.compile(r"[*?\[]")
_INDEX_BUDGET = 50_000          # more tracked files than this: not checked, the caller asks


@dataclass
class DeniedPaths:
    """The Read deny rules as `path → denied?`, plus the (base, glob, anchored) of each rule for
    the question "could a denied path lie inside this folder?"."""
    denied: Callable[[str], bool]
    anchors: list[tuple[str, str, bool]]
    # The session's folder: paths git is given are also read as relative to it, because a copy of
    # the repository elsewhere (`cp -r . /tmp/c; git -C /tmp/c show HEAD:secret.txt`) holds the
    # same history under paths no rule names.
    project: str = "/"

    def with_project(self, bases: list[str]) -> list[str]:
        return list(dict.fromkeys([*bases, self.project]))

    @classmethod
    def of(cls, specs: Iterable[tuple[str, str]], cwd: str) -> DeniedPaths:
        from codeloop.permissions.paths import anchor_spec, deny_matcher

        specs = list(specs)
        matchers = [deny_matcher(s, o, cwd) for s, o in specs]

        def denied(path: str) -> bool:
            forms = {os.path.normpath(path), os.path.realpath(path)}
            return any(m(f) for m in matchers for f in forms)
        return cls(denied, [anchor_spec(s, o, cwd) for s, o in specs], os.path.normpath(cwd))

    def may_hold(self, folder: str) -> bool:
        """Whether some path at or below `folder` (in any revision) could match a deny rule."""
        forms = {os.path.normpath(folder), os.path.realpath(folder)}
        return any(_could_match_below(f, base, glob, anchored)
                   for f in forms for base, glob, anchored in self.anchors)


def _could_match_below(folder: str, base: str, glob: str, anchored: bool) -> bool:
    from codeloop.permissions.paths import _glob_to_regex

    if not anchored:
        return True                                   # `.env`, `*.pem`: at any depth
    glob = glob.strip("/")
    while glob.endswith("/**"):
        glob = glob[:-3]
    for b in {os.path.normpath(base), os.path.realpath(base)}:
        if b == folder or b.startswith(folder.rstrip("/") + "/"):
            return True                               # the rule's folder is inside this one
        if not folder.startswith(b.rstrip("/") + "/"):
            continue
        segments = [s for s in os.path.relpath(folder, b).split("/") if s]
        wanted = [s for s in glob.split("/") if s]
        for i, seg in enumerate(segments):
            if i >= len(wanted) or "**" in wanted[i]:
                return True                           # the rule names a parent, or any depth
            if not re.fullmatch(_glob_to_regex(wanted[i]), seg):
                break
        else:
            return True
    return False


def _above(folder: str) -> list[str]:
    out = [os.path.normpath(folder)]
    while out[-1] != "/":
        out.append(os.path.dirname(out[-1]))
    return out


def _places(path: str, bases: list[str], dp: DeniedPaths) -> list[str]:
    """Where a relative path git is given may point: from each base and the session's folder; one
    climbing out (`../x`) also as its tail from the session's folder and every folder above it,
    since the Bash tool's folder (kept between calls) can lie below the one decisions start from."""
    places = [os.path.normpath(os.path.join(b, path)) for b in dp.with_project(bases)]
    parts = os.path.normpath(path).split("/")
    if parts[0] == "..":
        tail = "/".join(p for p in parts if p != "..")
        places += [os.path.normpath(os.path.join(top, tail)) for top in _above(dp.project)] if tail else []
    return places


def rev_path_denied(word: str, bases: list[str], dp: DeniedPaths) -> str | None:
    """The denied path a `REV:path`-shaped word names (every text after a colon is tried, so
    `HEAD@{1 12:00}:x`, `:0:x` and `-L1,5:x` are seen), or None."""
    for k, ch in enumerate(word):
        if ch != ":":
            continue
        path = word[k + 1:]
        if not path or path.startswith(("(", "!", "^")):
            continue                                  # pathspec magic, judged as a pathspec
        relative = path.startswith(("./", "../")) or path in (".", "..")
        tops = bases if relative else [t for b in dp.with_project(bases) for t in _above(b)]
        for full in _places(path if relative else path.lstrip("/"), tops, dp):
            if dp.denied(full):
                return full
    return None


def pathspec_denied(spec: str, bases: list[str], dp: DeniedPaths) -> str | None:
    """The denied path a plain pathspec names (None for magic, globs and allowed paths)."""
    if spec.startswith(":") or _GLOB_CHARS.search(spec):
        return None
    return next((full for full in _places(spec, bases, dp) if dp.denied(full)), None)


def restricts(specs: list[str], bases: list[str], dp: DeniedPaths, *, literal: bool = False) -> bool:
    """Whether these pathspecs keep the command away from every path a deny rule could match.
    `literal`: `--literal-pathspecs` is on, so no word is magic or a glob."""
    positive = 0
    for spec in specs:
        if not literal and spec.startswith(":"):
            magic = spec[2:spec.find(")")] if spec.startswith(":(") and ")" in spec else spec[1:2]
            if magic in ("!", "^") or "exclude" in magic.split(","):
                continue                              # an exclusion can only narrow what is shown
            return False
        if not literal and _GLOB_CHARS.search(spec):
            return False
        positive += 1
        for full in _places(spec, bases, dp):
            if dp.denied(full):
                return False
            if not (os.path.isfile(full) and not os.path.islink(full)) and dp.may_hold(full):
                return False
    return positive > 0


def _git(folder: str, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1"}
    try:
        return subprocess.run([program("git"), "--no-pager", "-C", folder, *args], stdin=subprocess.DEVNULL,
                              capture_output=True, env=env, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def tracked_denied(folder: str, dp: DeniedPaths, *, head: bool) -> str | None:
    """A denied path the index (and, with `head`, the `HEAD` commit) of the repository at
    `folder` holds: what `git diff` / `git diff --cached` would print. A reason string when
    it cannot be known (the caller asks), None when none is held."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top is not None and top.returncode != 0 and b"not a git repository" in top.stderr.lower():
        return None                                   # `git diff` outside a repository prints no objects
    if top is None or top.returncode != 0 or not top.stdout.strip():
        return f"git could not say which repository {folder} is in"
    root = top.stdout.decode("utf-8", "surrogateescape").strip()
    lists = [_git(root, "ls-files", "-z", "--cached")]
    if head and (has_head := _git(root, "rev-parse", "-q", "--verify", "HEAD")) and has_head.returncode == 0:
        lists.append(_git(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD"))
    names: set[str] = set()
    for listed in lists:
        if listed is None or listed.returncode != 0:
            return "git could not list the files the repository tracks"
        names.update(listed.stdout.decode("utf-8", "surrogateescape").split("\0"))
    if len(names) > _INDEX_BUDGET:
        return "the repository tracks too many files to check against the Read deny rules"
    hit = next((os.path.join(r, n) for n in sorted(names) for r in (root, dp.project)
                if n and dp.denied(os.path.join(r, n))), None)
    return f"git tracks {hit}, which a Read deny rule covers" if hit else None
