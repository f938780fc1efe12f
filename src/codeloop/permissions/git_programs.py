"""Whether git's read-only subcommands would start a program that configuration names.

`git status|diff|log|show|blame|ls-files` only read, unless a configuration file names a program
for them to run: `core.fsmonitor` (status and diff refresh the index), a pager, an external diff or
textconv driver, a clean/smudge filter (status compares work-tree files through it), signature
programs (`log --show-signature`), `core.hooksPath` or the `post-index-change` hook (status may
write the index), `core.sshCommand` and a partial clone's promisor remote (a lazy fetch of a
missing object). Submodules bring configuration of their own (status runs inside them), so a
repository with one is treated as naming a program.

Owns `git_concern(cwd, split)`: for every such git call on a command line, the folder it runs
in (after `cd` and `-C`), and the first program that folder's configuration names — read with
`git config --list --show-origin`, which sees what the real call will see: system, user
(`~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`), repository and worktree files, their includes
and the `GIT_CONFIG_*` environment. When something cannot be known (git missing, a folder
computed at run time, an unreadable index) it is reported too: in doubt, the caller asks.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
from functools import lru_cache
from typing import TYPE_CHECKING

from codeloop.shellpath import program

if TYPE_CHECKING:
    from codeloop.permissions.shell_words import SplitResult

# The subcommands `readonly.py` treats as read-only only when repository programs are contained.
REPO_PROGRAM_SUBCOMMANDS = frozenset({"status", "diff", "log", "show", "ls-files", "blame"})
# (patterns, compiled by `re`'s cache when a `-c` setting is first judged)
_NAMES_PROGRAM = (
    r"core\.(pager|hookspath|sshcommand|gitproxy|askpass|alternaterefscommand)|diff\.external|"
    r"diff\..+\.(textconv|command)|filter\..+|gpg\.program|gpg\..+\.program|gpg\.ssh\.defaultkeycommand|"
    r"trailer\..+\.(command|cmd)|extensions\.partialclone|remote\..+\.partialclonefilter")
_MAYBE_BOOLEAN = r"core\.fsmonitor|core\.usebuiltinfsmonitor|pager\..+|remote\..+\.promisor"
_FALSE = frozenset({"false", "no", "off", "0", ""})
_BOOLEAN = _FALSE | {"true", "yes", "on", "1"}
_ENV_PROGRAMS = ("GIT_EXTERNAL_DIFF", "GIT_PAGER")
_GLOBALS_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                                 "--exec-path", "--super-prefix"})
_GITLINK = 0o160000


def git_concern(cwd: str, split: SplitResult) -> str | None:
    """Why a git call on this line could run a program configuration names (None: it cannot,
    or the line has no such call)."""
    from codeloop.permissions.shell_cmd import command_name, unwrap
    from codeloop.permissions.shell_writes import Resolver, track_cd

    r = Resolver(cwd, os.path.expanduser("~"))
    folders: list[str] = []
    for part in split.parts:
        u = unwrap(part.argv) if part.argv else None
        if not u or not u.argv:
            continue
        name, args = command_name(u.argv[0]), u.argv[1:]
        dyn = {k - u.offset for k in part.dynamic if k >= u.offset}
        if track_cd(name, args, dyn, r) or name != "git":
            continue
        i, bases = 0, list(r.cwds)
        while i < len(args) and args[i].startswith("-"):
            if args[i] == "-C" and i + 1 < len(args):
                found = r.resolve(args[i + 1], i + 2 in dyn, cwds=bases) if args[i + 1] else bases
                if None in found or r.unknown_cwd:
                    return "git runs in a folder known only when it runs"
                bases = [f for f in found if f]
            i += 2 if args[i] in _GLOBALS_WITH_VALUE else 1
        if i < len(args) and args[i] in REPO_PROGRAM_SUBCOMMANDS:
            if r.unknown_cwd:
                return "git runs in a folder known only when it runs"
            folders += bases
    for folder in dict.fromkeys(folders):
        if why := folder_concern(folder):
            return why
    return None


def _git(folder: str, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run([program("git"), "--no-pager", "-C", folder, *args], stdin=subprocess.DEVNULL,
                              capture_output=True, env=env, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def folder_concern(folder: str) -> str | None:
    """Why git run in `folder` could start a program its configuration names (None: none)."""
    if env := next((k for k in _ENV_PROGRAMS if os.environ.get(k)), None):
        return f"git would run the program ${env} names"
    if not os.path.isdir(folder):
        return f"git would run in {folder}, which does not exist yet"
    listed = _git(folder, "config", "--list", "--show-origin", "-z")
    if listed is None or listed.returncode != 0:
        return f"git's configuration in {folder} could not be read"
    object_format = "sha1"
    for origin, key, value in _entries(listed.stdout):
        if key == "extensions.objectformat":
            object_format = value.lower()
        if re.fullmatch(_NAMES_PROGRAM, key) or (re.fullmatch(_MAYBE_BOOLEAN, key) and (
                value.lower() not in (_FALSE if key.startswith(("core.", "remote.")) else _BOOLEAN))):
            return f"git's configuration names a program ({key}={value!r} in {origin})"
    where = _git(folder, "rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
                 "--show-toplevel")
    if where is None:
        return "git could not be asked where the repository is"
    lines = where.stdout.decode("utf-8", "surrogateescape").splitlines()
    if not lines:
        return None if b"not a git repository" in where.stderr else "git could not say where the repository is"
    if len(lines) < 2:
        return "git could not say where the repository is"
    return _repository_concern(lines[0], lines[1], lines[2] if len(lines) > 2 else None, object_format)


def _entries(out: bytes) -> list[tuple[str, str, str]]:
    """(origin, key, value) from `git config --list --show-origin -z` (a key alone is `true`)."""
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    found = []
    for origin, item in zip(fields[0::2], fields[1::2]):
        key, newline, value = item.partition("\n")
        found.append((origin, key.lower(), value if newline else "true"))
    return found


def _repository_concern(git_dir: str, common_dir: str, top: str | None, object_format: str) -> str | None:
    hook = os.path.join(common_dir, "hooks", "post-index-change")
    if os.path.exists(hook):
        return f"the repository has a hook git status may run ({hook})"
    if os.path.isdir(os.path.join(common_dir, "modules")):
        return "the repository has submodules, and git reads their configuration too"
    if top is None:
        return None                                  # a bare repository: no work tree, no index
    if os.path.lexists(os.path.join(top, ".gitmodules")):
        return "the repository has submodules (.gitmodules), and git reads their configuration too"
    index = os.path.join(git_dir, "index")
    try:
        st = os.stat(index)
    except FileNotFoundError:
        return None
    except OSError:
        return f"git's index {index} could not be read"
    return _index_concern(index, st.st_mtime_ns, st.st_size, st.st_ino, object_format)


@lru_cache(maxsize=32)
def _index_concern(index: str, mtime_ns: int, size: int, ino: int, object_format: str) -> str | None:
    """A gitlink (a submodule whose folder git status looks into) in the index, read directly;
    keyed by the file's identity so an unchanged index is read once."""
    try:
        with open(index, "rb") as fh:
            data = fh.read()
    except OSError:
        return f"git's index {index} could not be read"
    shared = [os.path.join(os.path.dirname(index), n) for n in os.listdir(os.path.dirname(index))
              if n.startswith("sharedindex.")]
    mode = struct.pack(">I", _GITLINK)
    if mode not in data and not any(_file_holds(s, mode) for s in shared):
        return None                                  # no entry can have a gitlink's mode
    if shared:
        return "the repository uses a split index, which was not read"
    try:
        return "the repository has a submodule, and git reads its configuration too" if any(
            m == _GITLINK for m in _index_modes(data, 32 if object_format == "sha256" else 20)) else None
    except (ValueError, struct.error, IndexError):
        return f"git's index {index} could not be read"


def _file_holds(path: str, needle: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return needle in fh.read()
    except OSError:
        return True


def _index_modes(data: bytes, hash_size: int) -> list[int]:
    """The mode of every entry of a version 2, 3 or 4 index file."""
    if data[:4] != b"DIRC":
        raise ValueError("not an index file")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version}")
    modes, pos = [], 12
    for _ in range(count):
        start = pos
        modes.append(struct.unpack_from(">I", data, pos + 24)[0] & 0o177777)
        pos += 40 + hash_size
        flags = struct.unpack_from(">H", data, pos)[0]
        pos += 2 + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:
            while data[pos] & 0x80:                  # the varint of how much of the last name to drop
                pos += 1
            pos += 1
        end = data.index(b"\0", pos)
        pos = end + 1 if version == 4 else start + ((end - start) // 8 + 1) * 8
    return modes
