"""Command words of a shell command line: which program a part runs, and what wraps or launches it.

Owns: wrapper stripping (`timeout 5 rm x` runs `rm x`), the launchers (commands that run *other*
commands: `xargs`, `sh -c`, `sudo`, `find -exec`…), the commands a launcher may run (for deny
checks), environment assignments that change what runs (`LD_PRELOAD=`, `PATH=`…), and whether a
`git config` call only reads. The base the write analysis (`shell_writes`), the read-only set
(`readonly`) and the public API (`bash`) share, so none of them imports another in a circle.
Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codeloop.permissions.shell_scan import split_command
from codeloop.permissions.shell_words import SimpleCommand

# Commands whose job is to run another command (or code); an allow rule matches them only when
# it names them explicitly, because `xargs rm` is not `xargs`-shaped from the rule's view.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
LAUNCHERS = SHELLS | frozenset({"xargs", "eval", "source", ".", "sudo", "su", "doas", "pkexec",
                                "runuser", "chroot", "watch", "parallel", "nsenter", "script"})
_FIND_ACTIONS = r"-(exec|execdir|ok|okdir|delete|fprint0?|fprintf|fls)$"   # compiled when a `find` is judged

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
    """A wrapper command's options: plain flags and those that take a value."""
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
    """The command that really runs once wrappers like env or timeout are read through."""
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
    if name == "find" and any(re.match(_FIND_ACTIONS, a) for a in u.argv[1:]):
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


def git_config_reads(rest: list[str]) -> bool:
    """Whether `git config <rest>` only reads."""
    if rest[:1] in (["get"], ["list"]):
        return all(not a.startswith("-") or a in ("--show-origin", "--all", "--global",
                                                 "--local", "--system") for a in rest[1:])
    reading = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"}
    allowed = reading | {"--show-origin", "--show-scope", "--global", "--local", "--system",
                         "--null", "-z", "--name-only", "--includes", "--no-includes"}
    flags = [a for a in rest if a.startswith("-")]
    return bool(reading & set(flags)) and all(f in allowed for f in flags)
