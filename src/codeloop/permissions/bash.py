"""What a bash command line will run, for the permission layer.

Owns: the public scanner API (`split_command`, `SplitResult`, `SimpleCommand`, `Redirect`,
implemented in `shell_scan.py`), wrapper stripping (`timeout 5 rm x` runs `rm x`), the list of
dangerous launchers (commands that run *other* commands: `xargs`, `sh -c`, `sudo`, `find
-exec`…), environment assignments that change what runs (`LD_PRELOAD=`, `PATH=`…), file-writing
redirects, and the built-in read-only command set that never prompts. Pure functions, no I/O
except `os.path` arithmetic on redirect targets.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from codeloop.permissions.shell_scan import split_command
from codeloop.permissions.shell_words import (Redirect, SimpleCommand, SplitResult,
                                              decode_ansi_c)

__all__ = ["Redirect", "SimpleCommand", "SplitResult", "split_command", "decode_ansi_c",
           "Unwrapped", "unwrap", "strip_wrappers", "command_name", "launcher_name",
           "inner_commands", "dangerous_env", "writes_file", "write_targets",
           "is_read_only_command", "is_read_only", "LAUNCHERS"]

# Commands whose job is to run another command (or code); an allow rule matches them only when
# it names them explicitly, because `xargs rm` is not `xargs`-shaped from the rule's view.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
LAUNCHERS = SHELLS | frozenset({"xargs", "eval", "source", ".", "sudo", "su", "doas", "pkexec",
                                "runuser", "chroot", "watch", "parallel", "nsenter", "script"})
_FIND_ACTIONS = re.compile(r"-(exec|execdir|ok|okdir|delete|fprint0?|fprintf|fls)$")

# Assignments that change which program runs or what it loads: never auto-allowed.
_DANGEROUS_ENV = frozenset({
    "PATH", "HOME", "BASH_ENV", "ENV", "IFS", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PS4",
    "CDPATH", "GLOBIGNORE", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE",
    "XDG_CONFIG_HOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "NODE_OPTIONS", "NODE_PATH",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "SSH_ASKPASS", "SUDO_ASKPASS", "TAR_OPTIONS", "GREP_OPTIONS", "RIPGREP_CONFIG_PATH"})
_DANGEROUS_ENV_PREFIXES = ("LD_", "DYLD_", "GIT_", "BASH_FUNC_", "NPM_CONFIG_")


# -- wrappers ----------------------------------------------------------------------------------
@dataclass
class _Opts:
    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()      # options that take the next word (or `=value`)


# Wrapper name → its options. They run their argument as a command with the same meaning.
_WRAPPERS: dict[str, _Opts] = {
    "timeout": _Opts(frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
                     frozenset({"-s", "-k", "--signal", "--kill-after"})),
    "nice": _Opts(valued=frozenset({"-n", "--adjustment"})),
    "nohup": _Opts(),
    "setsid": _Opts(frozenset({"-f", "-w", "-c", "--fork", "--wait", "--ctty"})),
    "stdbuf": _Opts(valued=frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "time": _Opts(frozenset({"-p"})),
    "command": _Opts(frozenset({"-p"})),
    "builtin": _Opts(),
    "exec": _Opts(frozenset({"-c", "-l", "-cl", "-lc"}), frozenset({"-a"})),
    "env": _Opts(frozenset({"-i", "-0", "-", "--ignore-environment", "--null"}),
                 frozenset({"-u", "--unset", "-C", "--chdir"})),
}


@dataclass
class Unwrapped:
    argv: list[str]                                     # the command that really runs
    env: dict[str, str] = field(default_factory=dict)   # assignments made via `env VAR=…`
    offset: int = 0            # index in the original argv where `argv` starts
    opaque: str | None = None  # wrapper we could not read through (unknown option, `env -S`)


def command_name(word: str) -> str:
    """`/bin/rm`, `./rm`, `\\rm` → `rm` (the scanner already removed the backslash)."""
    return word.lstrip("\\").rsplit("/", 1)[-1]


def _skip_options(argv: list[str], i: int, opts: _Opts) -> int | None:
    """Index of the first non-option word, or None on an option we do not know."""
    while i < len(argv):
        word = argv[i]
        if word == "-" and "-" in opts.flags:      # `env -` is `env -i`
            i += 1
            continue
        if not word.startswith("-") or word == "-":
            break
        if word == "--":
            return i + 1
        if word in opts.flags or re.fullmatch(r"-\d+", word):   # `nice -10`
            i += 1
        elif word in opts.valued:
            i += 2
        elif any(word.startswith(v + "=") for v in opts.valued if v.startswith("--")) or \
                any(word.startswith(v) and len(word) > 2 for v in opts.valued if len(v) == 2):
            i += 1                                               # `--signal=KILL`, `-oL`
        else:
            return None
    return i


def unwrap(argv: list[str]) -> Unwrapped:
    """Strip `timeout`/`nice`/`nohup`/`stdbuf`/`env`/`time`/`command`/`builtin`/`exec`."""
    out = Unwrapped(list(argv))
    i = 0
    while i < len(argv):
        name = command_name(argv[i])
        opts = _WRAPPERS.get(name)
        if opts is None:
            break
        if name == "command" and any(a in ("-v", "-V") for a in argv[i + 1:i + 3]):
            break   # `command -v rm` only looks rm up
        if name == "env" and any(a.startswith(("-S", "--split-string")) for a in argv[i + 1:]):
            out.opaque = name   # `env -S 'rm x'` re-splits a string: a launcher
            break
        j = _skip_options(argv, i + 1, opts)
        if j is None:
            out.opaque = name
            break
        if name == "timeout":
            j += 1          # the DURATION
        if name == "env":
            assigned: dict[str, str] = {}
            while j < len(argv) and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", argv[j]):
                key, _, val = argv[j].partition("=")
                assigned[key] = val
                j += 1
            if j >= len(argv):
                break       # plain `env` (prints the environment)
            out.env.update(assigned)
        if j >= len(argv):
            break           # `nohup` alone: nothing is wrapped
        i = j
    out.argv, out.offset = list(argv[i:]), i
    return out


def strip_wrappers(argv: list[str]) -> list[str]:
    return unwrap(argv).argv


def launcher_name(argv: list[str]) -> str | None:
    """Name of the dangerous launcher this (unwrapped) argv is, if any."""
    u = unwrap(argv)
    if u.opaque:
        return u.opaque
    if not u.argv:
        return None
    name = command_name(u.argv[0])
    if name in LAUNCHERS:
        return name
    if name == "find" and any(_FIND_ACTIONS.match(a) for a in u.argv[1:]):
        return "find"
    return None


def inner_commands(sc: SimpleCommand, depth: int = 0) -> list[list[str]]:
    """Commands a launcher part may run, for *deny* checks only (over-approximate on purpose).

    Every suffix of a launcher's argv is a candidate (`sudo -u x rm y` → `rm y`), and any word
    that looks like shell code (`sh -c 'rm x'`, `eval "rm x"`, a here-string or heredoc fed to
    a shell) is split and checked recursively.
    """
    if depth > 4 or launcher_name(sc.argv) is None:
        return []
    u = unwrap(sc.argv)
    found = [u.argv[k:] for k in range(1, len(u.argv))]
    scripts = [w for w in u.argv[1:] if re.search(r"[\s;&|`$()<>]", w)]
    if command_name(u.argv[0]) in SHELLS if u.argv else False:
        scripts += [r.target for r in sc.redirects if r.op.endswith("<<<")] + sc.heredocs
    for script in scripts:
        for part in split_command(script).parts:
            found.append(strip_wrappers(part.argv))
            found.extend(inner_commands(part, depth + 1))
    return [f for f in found if f]


# -- environment and redirects -----------------------------------------------------------------
def dangerous_env(env: dict[str, str]) -> list[str]:
    return [k for k in env if k in _DANGEROUS_ENV or k.upper().startswith(_DANGEROUS_ENV_PREFIXES)]


_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def writes_file(r: Redirect) -> bool:
    """Whether a redirect creates/truncates/appends a file (fd duplication does not)."""
    op = r.op.lstrip("0123456789").lstrip("{").split("}")[-1]
    if op in (">&", "<&"):
        return not re.fullmatch(r"\d+-?|-", r.target) and op == ">&"
    if op not in (">", ">>", ">|", "&>", "&>>", "<>"):
        return False
    return r.target not in _HARMLESS_TARGETS


def write_targets(sc: SimpleCommand, cwd: str) -> list[str | None]:
    """Absolute, normalised paths a part writes through redirects (None: not knowable)."""
    out: list[str | None] = []
    for r in sc.redirects:
        if not writes_file(r):
            continue
        t = r.target
        if re.search(r"[$`*?\[{]", t) or (t.startswith("~") and not re.match(r"~(/|$)", t)):
            out.append(None)
            continue
        t = os.path.expanduser(t) if t.startswith("~") else t
        out.append(os.path.normpath(os.path.join(cwd, t)))
    return out


# -- the read-only set -------------------------------------------------------------------------
# Commands with no option that writes or executes: fine even with glob/expanded arguments.
_PLAIN_READ_ONLY = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "which",
    "whoami", "stat", "du", "df", "diff", "cmp", "basename", "dirname", "realpath", "readlink",
    "true", "false", "test", "["})
_GIT_SAFE_GLOBALS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
                               "--no-replace-objects", "--glob-pathspecs", "--noglob-pathspecs"})
_GIT_BRANCH_FLAGS = frozenset({"-a", "-r", "--all", "--remotes", "--list", "-l", "-v", "-vv",
                               "--verbose", "--show-current", "--no-color", "--color",
                               "--column", "--no-column", "-i", "--ignore-case", "--merged",
                               "--no-merged", "-q", "--quiet"})
_GIT_BRANCH_VALUED = ("--sort=", "--format=", "--contains=", "--no-contains=", "--merged=",
                      "--no-merged=", "--points-at=", "--color=", "--column=")
_SED_SCRIPT = re.compile(r"\s*((\d+|\$|/[^/\\]*/)(\s*,\s*(\d+|\$|/[^/\\]*/))?)?\s*[p=l]\s*")


def _clusters_contain(args: list[str], letters: str) -> bool:
    """Whether any short-option cluster (`-rno`) holds one of `letters`."""
    return any(a.startswith("-") and not a.startswith("--") and set(a[1:]) & set(letters)
               for a in args)


def _git_read_only(args: list[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            i += 2
        elif args[i] in _GIT_SAFE_GLOBALS:
            i += 1
        else:
            return False   # -c key=val, --exec-path, --git-dir, --work-tree, --config-env …
    if i >= len(args):
        return False
    sub, rest = args[i], args[i + 1:]
    if any(a.startswith("--output") or a in ("--ext-diff", "--textconv") for a in rest):
        return False
    if sub in ("status", "diff", "log", "show", "rev-parse", "ls-files", "blame"):
        return True
    if sub == "branch":
        flags = [a for a in rest if a.startswith("-")]
        if not all(f in _GIT_BRANCH_FLAGS or f.startswith(_GIT_BRANCH_VALUED) for f in flags):
            return False
        positional = [a for a in rest if not a.startswith("-")]
        return not positional or bool({"--list", "-l"} & set(flags))
    if sub == "remote":
        return all(a in ("-v", "--verbose") for a in rest)
    if sub == "config":
        if rest[:1] in (["get"], ["list"]):
            return all(not a.startswith("-") or a in ("--show-origin", "--all", "--global",
                                                     "--local", "--system") for a in rest[1:])
        reading = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"}
        allowed = reading | {"--show-origin", "--show-scope", "--global", "--local", "--system",
                             "--null", "-z", "--name-only", "--includes", "--no-includes"}
        flags = [a for a in rest if a.startswith("-")]
        return bool(reading & set(flags)) and all(f in allowed for f in flags)
    return False


def _sed_read_only(args: list[str]) -> bool:
    scripts: list[str] = []
    quiet = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-n", "--quiet", "--silent"):
            quiet = True
        elif a in ("-E", "-r", "--regexp-extended", "-s", "--separate", "-u", "-z"):
            pass
        elif a in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 1
        elif a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif re.fullmatch(r"-[nErsuz]+", a):
            quiet |= "n" in a
        elif a.startswith("-"):
            return False           # -i, -f, --in-place, unknown: not provably read-only
        elif not scripts:
            scripts.append(a)
        i += 1
    return quiet and bool(scripts) and all(
        all(_SED_SCRIPT.fullmatch(cmd) for cmd in s.split(";")) for s in scripts)


def _uniq_read_only(args: list[str]) -> bool:
    positional, i = 0, 0
    while i < len(args):
        a = args[i]
        if a in ("-f", "-s", "-w"):
            i += 1
        elif not a.startswith("-") or a == "-":
            positional += 1
        i += 1
    return positional <= 1


# `${x@P}` expands a prompt string (which runs `$( )` inside it) and `${!x}` is indirection: both can
# execute code hidden in a variable's value, so a part using them is never "read-only".
_EXPANSION_TRICKS = re.compile(r"\$\{[^}]*@[A-Za-z]|\$\{!")


def is_read_only_command(sc: SimpleCommand) -> bool:
    """Whether this one part only reads (never writes files, never runs other code)."""
    if any(writes_file(r) for r in sc.redirects) or dangerous_env(sc.env):
        return False
    if _EXPANSION_TRICKS.search(sc.raw) or any("$(" in v or "`" in v for v in sc.env.values()):
        return False
    if not sc.argv:
        return True                     # a bare `X=1` (dangerous names refused above)
    u = unwrap(sc.argv)
    if u.opaque or dangerous_env(u.env) or not u.argv:
        return False
    dynamic = any(k >= u.offset for k in sc.dynamic)
    if u.offset in sc.dynamic or "/" in u.argv[0]:
        return False                    # `$CMD`, `./ls`: not the command we know
    name, args = u.argv[0], u.argv[1:]
    if name in ("test", "[") and any(a in ("-v", "-R") for a in args):
        return False                    # `-v 'a[$(cmd)]'` evaluates an array subscript: runs code
    if name in _PLAIN_READ_ONLY:
        return True
    if dynamic:
        return False   # an expanded word could become `-delete`, `-o file`, `--pre=sh` …
    if name == "find":
        return not any(_FIND_ACTIONS.match(a) or a.startswith("-fprint") for a in args)
    if name == "git":
        return _git_read_only(args)
    if name == "sed":
        return _sed_read_only(args)
    if name == "sort":
        return not (_clusters_contain(args, "o") or any(
            a.startswith(("--output", "--compress-program")) for a in args))
    if name == "uniq":
        return _uniq_read_only(args)
    if name == "tree":
        return not (_clusters_contain(args, "oR") or any(a.startswith("--fromfile") for a in args))
    if name == "rg":
        return not any(a.startswith("--pre") for a in args)
    if name == "printf":
        return "-v" not in args
    if name == "date":
        return not (_clusters_contain(args, "s") or any(a.startswith("--set") for a in args))
    if name == "file":
        return not (_clusters_contain(args, "C") or "--compile" in args)
    if name == "env":   # unwrap left it in place: no command follows
        return True
    return False


def is_read_only(command: str) -> bool:
    """A whole command line is read-only iff it parses cleanly and every part is read-only."""
    split = split_command(command)
    return split.clean and bool(split.parts) and all(is_read_only_command(p) for p in split.parts)
