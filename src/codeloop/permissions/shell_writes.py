"""Every path a bash command line writes, as far as it can be known before it runs.

Owns `write_targets`: redirect targets of every writing form (`>`, `>>`, `>|`, `&>`, `&>>`,
`<>`, `{fd}>`, `N>`, `>&file`), and the destinations of the commands whose job is writing —
`tee`, `cp`/`mv`/`install`/`ln`, `sed -i`/`perl -i`, `touch`, `truncate`, `mkdir`, `rm`,
`chmod`, `dd of=`, `sort -o`, `git config`, archive tools… Relative targets are resolved
against every directory the command may be in by then: `cd x && echo > f` writes `x/f`, and
after a `cd` whose target is computed nothing relative is known. A target that is only known
at run time (`> $OUT`, `tee "$(mktemp)"`, globs) is reported as None: the permission layer asks.

Over-approximation is the design: a `cd` inside a subshell still counts, a `cp` destination is
reported both as itself and as `dest/basename(src)`. The only I/O: `paths.physical` resolves
a symlink before a `..` the way the kernel does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any

from codeloop.permissions.paths import physical
from codeloop.permissions.shell_words import Redirect, SimpleCommand, SplitResult

_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_UNKNOWN_CHARS = frozenset("$`*?[{")


@dataclass(frozen=True)
class WriteTarget:
    """A file a shell command writes, and how it writes it."""
    path: str | None      # absolute, normalised; None: known only when the command runs
    how: str              # "redirect", "tee", "cp destination", …
    part: str             # source text of the simple command
    index: int = -1       # the part of the line that makes it (a script's writes: the part running it)
    # a copy, move or link destination: what lands there (None: a source known only at run time)
    sources: tuple[str | None, ...] = ()


def writes_file(r: Redirect) -> bool:
    """Whether a redirect creates/truncates/appends a file (fd duplication does not)."""
    op = r.op.lstrip("0123456789")
    if op.startswith("{"):
        op = op.split("}", 1)[-1]
    if op in (">&", "<&"):
        return op == ">&" and not re.fullmatch(r"\d+-?|-", r.target)
    return op in _WRITE_OPS and r.target not in _HARMLESS_TARGETS


# Per command: options that take a value (the next word, or `--opt=value`).
_VALUED = {
    "cp": {"-S", "--suffix", "-t", "--target-directory"},
    "mv": {"-S", "--suffix", "-t", "--target-directory"},
    "ln": {"-S", "--suffix", "-t", "--target-directory"},
    "install": {"-S", "--suffix", "-t", "--target-directory", "-m", "--mode", "-o", "--owner",
                "-g", "--group", "--strip-program"},
    "touch": {"-d", "--date", "-t", "-r", "--reference"},
    "truncate": {"-s", "--size", "-r", "--reference"},
    "mkdir": {"-m", "--mode"}, "mkfifo": {"-m", "--mode"}, "shred": {"-n", "--iterations", "-s", "--size"},
    "sed": {"-e", "--expression", "-f", "--file", "-l", "--line-length"},
    "perl": {"-e", "-E", "-I", "-M", "-m"},
    "tee": set(), "rm": set(), "rmdir": set(), "unlink": set(),
    "chmod": {"--reference"}, "chown": {"--reference", "--from"}, "chgrp": {"--reference"},
    "sort": {"-o", "--output", "-k", "--key", "-t", "--field-separator", "-S", "--buffer-size",
             "-T", "--temporary-directory", "--compress-program", "--parallel", "--files0-from"},
    "gzip": {"-S", "--suffix"}, "gunzip": {"-S", "--suffix"}, "bzip2": set(), "bunzip2": set(),
    "xz": set(), "unxz": set(), "zstd": {"-o"}, "split": {"-l", "-b", "-n", "-a"},
}
_ALL_POSITIONALS = frozenset({"tee", "touch", "truncate", "mkdir", "rmdir", "rm", "unlink", "shred",
                              "mkfifo", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd"})
_COPIERS = frozenset({"cp", "mv", "install", "ln"})
_EXTRACTORS = frozenset({"unzip", "cpio", "7z", "patch"})   # write names only the input knows


def _parse(name: str, args: list[str]) -> tuple[dict[str, list[str]], list[tuple[int, str]]]:
    """(option → values, [(index in args, positional)]) with `--` ending options."""
    valued = _VALUED.get(name, set())
    opts: dict[str, list[str]] = {}
    pos: list[tuple[int, str]] = []
    i, ended = 0, False
    while i < len(args):
        a = args[i]
        if ended or not a.startswith("-") or a == "-":
            pos.append((i, a))
        elif a == "--":
            ended = True
        elif "=" in a and a.startswith("--"):
            k, _, v = a.partition("=")
            opts.setdefault(k, []).append(v)
        elif a in valued:
            opts.setdefault(a, []).append(args[i + 1] if i + 1 < len(args) else "")
            i += 1
        elif not a.startswith("--") and len(a) > 2 and a[:2] in valued:
            opts.setdefault(a[:2], []).append(a[2:])       # `-ofile`, `-t/dir`
        else:
            opts.setdefault(a, []).append("")
        i += 1
    return opts, pos


def _short_has(opts: dict[str, list[str]], letter: str) -> bool:
    return any(k.startswith("-") and not k.startswith("--") and letter in k[1:] for k in opts)


class Resolver:
    """Where relative words point, following `cd`s (every candidate directory is kept)."""

    def __init__(self, cwd: str, home: str):
        self.cwds: list[str] = [os.path.normpath(cwd)]
        self.unknown_cwd = False
        self.home = home
        # CDPATH (inherited, or set on the line) makes `cd name` search other folders first
        self.cdpath = bool(os.environ.get("CDPATH"))
        self.links: set[str] = set()                   # paths `ln` made earlier on the line

    def resolve(self, word: str, dynamic: bool, cwds: list[str] | None = None) -> list[str | None]:
        if dynamic or not _UNKNOWN_CHARS.isdisjoint(word) or not word:
            return [None]
        if word.startswith("~"):
            if not re.match(r"~(/|$)", word):
                return [None]                           # `~user/…`
            word = self.home + word[1:]
        if os.path.isabs(word):
            return physical(word)
        if self.unknown_cwd and cwds is None:
            return [None]
        return [p for c in (cwds or self.cwds) for p in physical(os.path.join(c, word))]

    def cd(self, target: str | None, dynamic: bool) -> None:
        if target is None:
            self.cwds.append(self.home)
            return
        if target == "-" or dynamic or (self.cdpath and not target.startswith(("/", "./", "../", "~"))):
            self.unknown_cwd = True
            return
        for p in self.resolve(target, False):
            if p is None:
                self.unknown_cwd = True
            elif p not in self.cwds:
                self.cwds.append(p)


def _git_targets(args: list[str], r: Resolver, dyn: set[int]) -> list[tuple[str | None, str]]:
    from codeloop.permissions.shell_cmd import git_config_reads

    cwds: list[str | None] | None = None
    i, git_dir = 0, None
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("-C", "--git-dir", "--work-tree", "-c", "--namespace", "--exec-path", "--config-env") \
                and i + 1 < len(args):
            if a == "-C":
                cwds = r.resolve(args[i + 1], i + 1 in dyn)
            elif a == "--git-dir":
                git_dir = r.resolve(args[i + 1], i + 1 in dyn)
            i += 2
            continue
        if a.startswith("--git-dir="):
            git_dir = r.resolve(a.split("=", 1)[1], i in dyn)
        i += 1
    if i >= len(args) or args[i] != "config" or git_config_reads(args[i + 1:]):
        return []
    rest = args[i + 1:]
    if "--global" in rest:
        return [(os.path.join(r.home, ".gitconfig"), "git config --global")]
    if "--system" in rest:
        return [("/etc/gitconfig", "git config --system")]
    for j, a in enumerate(rest):
        if a in ("-f", "--file") and j + 1 < len(rest):
            return [(p, "git config --file") for p in r.resolve(rest[j + 1], i + 2 + j in dyn)]
        if a.startswith("--file="):
            return [(p, "git config --file") for p in r.resolve(a.split("=", 1)[1], True)]
    if git_dir is not None:
        return [(None if g is None else os.path.join(g, "config"), "git config") for g in git_dir]
    if cwds is not None and None in cwds:
        return [(None, "git config")]
    bases = [c for c in (cwds or r.cwds) if c is not None]
    if r.unknown_cwd and cwds is None:
        return [(None, "git config")]
    return [(os.path.join(b, ".git", "config"), "git config") for b in bases]


def _command_targets(name: str, args: list[str], dyn: set[int], r: Resolver,
                     stdin_script: bool = False) -> list[tuple[str | None, str]]:
    from codeloop.permissions.shell_hidden import hidden_targets

    if name == "busybox" and args and args[0] not in _SHELLS:      # `busybox cp …`: the applet
        return _command_targets(args[0], args[1:], {k - 1 for k in dyn if k > 0}, r, stdin_script)
    out: list[tuple[str | None, str]] = hidden_targets(name, args, lambda w, k: r.resolve(w, k in dyn),
                                                       stdin_script)

    def add(word: str, idx: int, how: str) -> None:
        out.extend((p, how) for p in r.resolve(word, idx in dyn))

    if name == "git":
        return out + _git_targets(args, r, dyn)
    if name == "dd":
        for k, a in enumerate(args):
            if a.startswith("of="):
                add(a[3:], k, "dd of=")
        return out
    if name in _EXTRACTORS:
        return [(None, name)]
    if name in ("tar", "curl", "wget", "rsync", "scp"):
        from codeloop.permissions.shell_fetch import fetcher_targets

        return fetcher_targets(name, args, add, out)
    if name not in _VALUED:
        return out
    opts, pos = _parse(name, args)
    if name in _ALL_POSITIONALS:
        for k, a in pos:
            add(a, k, name)
        for suffixed in (k for k, _ in pos):
            if name in ("gzip", "bzip2", "xz", "zstd"):
                add(args[suffixed] + ".gz", suffixed, name)   # the compressed twin (suffix varies)
    elif name in ("chmod", "chown", "chgrp"):
        skip = 0 if "--reference" in opts else 1
        for k, a in pos[skip:]:
            add(a, k, name)
    elif name in ("sed", "perl"):
        if _short_has(opts, "i") or any(k.startswith("--in-place") for k in opts):
            script_given = any(o in opts for o in ("-e", "--expression", "-f", "--file", "-E"))
            for k, a in (pos if script_given else pos[1:]):
                add(a, k, f"{name} -i")
    elif name == "sort":
        for v in opts.get("-o", []) + opts.get("--output", []):
            out.extend((p, "sort -o") for p in r.resolve(v, False))
    elif name == "split":
        out.append((None, "split"))
    elif name in _COPIERS:
        targets = opts.get("-t", []) + opts.get("--target-directory", [])
        sources = [a for _, a in pos]
        if not targets:
            if len(pos) == 1 and name == "ln":      # `ln -s /x/y`: creates ./y
                add(os.path.basename(pos[0][1].rstrip("/")) or ".", pos[0][0], "ln destination")
                return out
            if len(pos) < 2:
                return out
            k, dest = pos[-1]
            add(dest, k, f"{name} destination")
            sources, targets = sources[:-1], [dest]
        for t in targets:
            add(t, -1, f"{name} destination")
            for s in sources:
                base = os.path.basename(s.rstrip("/"))
                if base:
                    add(os.path.join(t, base), -1, f"{name} destination entry")
        if name == "mv" or (name == "ln" and not (_short_has(opts, "s") or "--symbolic" in opts)):
            for k, a in pos[:len(sources)]:       # moved away, or hard-linked: later writes reach it
                add(a, k, f"{name} source")
    return out


def write_targets(split: SplitResult, cwd: str, home: str | None = None) -> list[WriteTarget]:
    """Every write the command line makes (see the module docstring)."""

    return _targets(split, Resolver(cwd, home or os.path.expanduser("~")), 0)


_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "busybox"})
_SENSITIVE_ENV = ("CDPATH", "HOME", "XDG_CONFIG_HOME", "GIT_")


def _targets(split: SplitResult, r: Resolver, depth: int) -> list[WriteTarget]:
    from codeloop.permissions.shell_cmd import command_name, unwrap

    out: list[WriteTarget] = []
    for index, part in enumerate(split.parts):
        start = len(out)
        for red in part.redirects:
            if writes_file(red):
                out += [WriteTarget(p, "redirect", part.raw) for p in r.resolve(red.target, False)]
        u = unwrap(part.argv) if part.argv else None
        env = {**part.env, **(u.env if u else {})}
        if any(k == "CDPATH" for k in env) or any(w.startswith("CDPATH=") for w in part.argv):
            r.cdpath = True                            # `export CDPATH=.git`, `CDPATH=x cd y`
        if not part.argv:
            _through_links(out, start, part, r)
            out[start:] = [replace(t, index=index) for t in out[start:]]
            continue
        name = command_name(u.argv[0]) if u and u.argv else ""
        if name == "git" and any(k.startswith(_SENSITIVE_ENV) for k in env):
            out.append(WriteTarget(None, "git with its config location overridden", part.raw, index))
            continue
        out += _part_targets(part, r, command_name, unwrap)
        out += _script_targets(part, name, u, r, depth)
        _through_links(out, start, part, r)
        r.links.update(t.path for t in out[start:] if t.path and t.how.startswith("ln destination"))
        out[start:] = [replace(t, index=index) for t in out[start:]]
    return out


def _through_links(out: list[WriteTarget], start: int, part: SimpleCommand, r: Resolver) -> None:
    """A symlink `ln` made earlier on the line can point anywhere: writing through it is unknown."""
    if any(t.path and any(t.path == ln or t.path.startswith(ln + "/") for ln in r.links) for t in out[start:]):
        out.append(WriteTarget(None, "write through a link made earlier in the command", part.raw))


def _script_targets(part: SimpleCommand, name: str, u, r: Resolver, depth: int) -> list[WriteTarget]:
    """Writes inside `sh -c '…'`, `eval '…'` and scripts fed to a shell on stdin; a script we
    cannot see (a computed `-c` string, `sh script.sh` is just a program) is not modelled."""
    from codeloop.permissions.shell_scan import split_command

    if not u or depth > 4:
        return []
    args = u.argv[1:]
    scripts: list[tuple[str, bool]] = []
    if name == "eval":
        scripts.append((" ".join(args), any(k >= u.offset + 1 for k in part.dynamic)))
    elif name in _SHELLS:
        for k, a in enumerate(args):
            if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and k + 1 < len(args):
                scripts.append((args[k + 1], u.offset + k + 2 in part.dynamic))
                break
        if not args or all(a.startswith("-") for a in args):      # the script comes on stdin
            scripts += [(red.target, False) for red in part.redirects if red.op.endswith("<<<")]
            scripts += [(body, False) for body in part.heredocs]
    out: list[WriteTarget] = []
    for script, dynamic in scripts:
        if dynamic:
            out.append(WriteTarget(None, f"{name} running a computed script", part.raw))
        else:
            out += _targets(split_command(script), r, depth + 1)
    return out


def track_cd(name: str, args: list[str], dyn: set[int], r: Resolver) -> bool:
    """Follow `cd`/`pushd`/`popd` (dyn: indexes into [name, *args]); True if it was one."""
    if name in ("cd", "pushd"):
        words = [(k, a) for k, a in enumerate(args) if not (a.startswith("-") and a != "-")]
        target = words[0] if words else None
        r.cd(None if target is None else target[1], target is not None and target[0] + 1 in dyn)
        return True
    if name == "popd":
        r.unknown_cwd = True
        return True
    return False


def _part_targets(part: SimpleCommand, r: Resolver, command_name: Any, unwrap: Any) -> list[WriteTarget]:
    u = unwrap(part.argv)
    if not u.argv:
        return []
    dyn = {k - u.offset for k in part.dynamic if k >= u.offset}
    if u.offset > 0 and any(w in ("-C", "--chdir") or w.startswith("--chdir=") for w in part.argv[:u.offset]):
        saved, r.unknown_cwd = r.unknown_cwd, True       # `env -C dir cmd`: somewhere we cannot see
    else:
        saved = None
    name, args = command_name(u.argv[0]), u.argv[1:]
    if track_cd(name, args, dyn, r):
        return []
    shifted = {k - 1 for k in dyn if k > 0}
    stdin = any(red.op.endswith(("<<<", "<")) for red in part.redirects) or bool(part.heredocs)
    found = [WriteTarget(p, how, part.raw) for p, how in _command_targets(name, args, shifted, r, stdin)]
    if name in _COPIERS or name in ("rsync", "scp"):
        sources = tuple(_copy_sources(name, args, shifted, r))
        found = [replace(t, sources=sources) if "destination" in t.how else t for t in found]
    if saved is not None:
        r.unknown_cwd = saved
    return found


def _copy_sources(name: str, args: list[str], dyn: set[int], r: Resolver) -> list[str | None]:
    """What `cp`/`mv`/`install`/`ln`/`rsync`/`scp` bring to their destination (a symbolic link's
    relative target counts from the current folder and from the link's folder)."""
    opts, pos = _parse(name, args)
    into = opts.get("-t", []) + opts.get("--target-directory", [])
    sources = pos if into or (name == "ln" and len(pos) == 1) else pos[:-1]
    found: list[str | None] = []
    for k, a in sources:
        if name in ("rsync", "scp") and ":" in a.split("/", 1)[0]:
            found.append(None)                         # `host:path`: another machine
            continue
        found += r.resolve(a, k in dyn)
        if name == "ln" and (_short_has(opts, "s") or "--symbolic" in opts) and not os.path.isabs(a):
            dest = into[0] if into else pos[-1][1] if len(pos) > 1 else "."
            for folder in {dest, os.path.dirname(dest) or "."}:     # into `dest`, or named `dest`
                found += r.resolve(os.path.join(folder, a), k in dyn)
    return found
