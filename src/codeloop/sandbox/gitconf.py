"""git files the planted-configuration scan reads: config entries (which are safe) and index gitlinks.

Owns `safe_key` (an allow-list: what `git init`, `clone`, `worktree add` and `submodule` write,
and settings that only change how git reads or shows data), `config_entries` (a config file's
entries, read by git itself from the bytes, with includes off) and `render_config`. Anything
not on the list (core.fsmonitor, hooksPath, filters, diff drivers, pagers, aliases, includes,
remote helpers…) is treated as able to run a program: a list of the dangerous keys could never
be complete, this one only errs toward taking out a harmless setting. Also `index_gitlinks`: the
gitlink (submodule) entries of an index file, parsed directly (index-format.txt), never by git.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import tempfile

from codeloop.shellpath import program

_GITLINK = 0o160000
_SAFE_KEY = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|"
    r"autocrlf|eol|safecrlf|quotepath|checkstat|trustctime|sparsecheckout|sparsecheckoutcone|untrackedcache|"
    r"splitindex|compression|bigfilethreshold|abbrev|worktree|preloadindex)|"
    r"extensions\.(objectformat|worktreeconfig|refstorage|noop|preciousobjects)|"
    r"remote\..+\.(url|pushurl|fetch|push|tagopt|mirror|prune|prunetags|skipdefaultupdate|skipfetchall)|"
    r"branch\..+\.(remote|merge|rebase|pushremote|description)|"
    r"submodule\..+\.(url|active|branch|shallow|ignore)|submodule\.active|"
    r"user\.(name|email)|init\.defaultbranch|pull\.(rebase|ff)|push\.(default|autosetupremote)|"
    r"fetch\.(prune|prunetags)|gc\.auto|lfs\.repositoryformatversion|receive\.denycurrentbranch|"
    r"advice\.[a-z0-9]+|i18n\.(commitencoding|logoutputencoding)|status\.(showuntrackedfiles|short|branch)|"
    r"merge\.(ff|conflictstyle)|rerere\.enabled|index\.version|protocol\.version|"
    r"clone\.defaultremotename|checkout\.defaultremote|diff\.(renames|algorithm)")


def safe_key(key: str) -> bool:
    """Whether a config key (lower-case section and name) can be kept in a planted config."""
    return _SAFE_KEY.fullmatch(key.lower()) is not None


def config_entries(data: bytes) -> list[tuple[str, str]] | None:
    """(key, value) of every entry in config file bytes, as git reads them; None when git cannot
    read them (or is missing): the caller treats that as unsafe."""
    fd, tmp = tempfile.mkstemp(prefix="codeloop-gitconfig-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": os.devnull, "HOME": os.devnull}
        done = subprocess.run([program("git"), "config", "--file", tmp, "--list", "-z"], capture_output=True,
                              stdin=subprocess.DEVNULL, env=env, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        os.unlink(tmp)
    if done.returncode != 0:
        return None
    out = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if item:
            key, newline, value = item.partition("\n")
            out.append((key, value if newline else "true"))
    return out


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def render_config(entries: list[tuple[str, str]]) -> bytes:
    """A config file holding `entries` (keys as `config_entries` gives them)."""
    lines: list[str] = []
    section = None
    for key, value in entries:
        head, _, name = key.rpartition(".")
        sect, dot, sub = head.partition(".")
        quoted = sub.replace("\\", "\\\\").replace('"', '\\"')
        header = f'[{sect} "{quoted}"]' if dot else f"[{sect}]"
        if header != section:
            lines.append(header)
            section = header
        lines.append(f"\t{name} = {_quote(value)}")
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def index_gitlinks(data: bytes | None) -> frozenset[bytes]:
    """Paths of the gitlinks in index bytes; a sentinel path when they cannot be read (fail closed)."""
    if data is None:
        return frozenset({b"(unreadable index)"})
    if struct.pack(">I", _GITLINK) not in data:
        return frozenset()
    try:
        return frozenset(_index_gitlinks(data, 20))
    except (ValueError, struct.error, IndexError):
        try:
            return frozenset(_index_gitlinks(data, 32))
        except (ValueError, struct.error, IndexError):
            return frozenset({b"(unreadable index)"})


def _index_gitlinks(data: bytes, hash_size: int) -> list[bytes]:
    """Gitlink entries of a version 2, 3 or 4 index (the format in git's index-format.txt)."""
    if data[:4] != b"DIRC":
        raise ValueError("not an index")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version}")
    found, pos, last = [], 12, b""
    for _ in range(count):
        start = pos
        mode = struct.unpack_from(">I", data, pos + 24)[0]
        pos += 40 + hash_size
        flags = struct.unpack_from(">H", data, pos)[0]
        pos += 2 + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:
            c = data[pos]
            strip = c & 0x7F
            pos += 1
            while c & 0x80:
                c = data[pos]
                pos += 1
                strip = ((strip + 1) << 7) | (c & 0x7F)
            end = data.index(b"\0", pos)
            name = last[:len(last) - strip] + data[pos:end]
            pos = end + 1
        else:
            end = data.index(b"\0", pos)
            name = data[pos:end]
            pos = start + ((end - start) // 8 + 1) * 8
        if pos > len(data) or (mode & 0o170000) not in (0o100000, 0o120000, _GITLINK):
            raise ValueError("bad entry")
        if mode & 0o170000 == _GITLINK:
            found.append(name)
        last = name
    return found
