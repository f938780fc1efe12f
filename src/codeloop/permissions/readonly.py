"""The built-in read-only command set: Bash commands that never prompt.

Owns `is_read_only_command` / `is_read_only` and the per-command checks behind them (git,
sed, sort, find…). A command is read-only when it can neither write a file nor run other code.
`git` subcommands that run programs a repository's config names (`core.fsmonitor` on
`status`, `diff.external`/textconv on `diff`/`show`/`log -p`/`blame`) are not read-only unless
the caller says repository programs are contained (`repo_programs_ok`, when Bash is sandboxed).
Expansions that execute code hidden in a variable's value (`${x@P}`, `${!x}`, array subscripts
and substring offsets, which bash evaluates arithmetically) are never read-only.
"""

from __future__ import annotations

import re
from functools import lru_cache

from codeloop.permissions.shell_cmd import _FIND_ACTIONS, dangerous_env, git_config_reads, unwrap  # noqa: F401
from codeloop.permissions.shell_writes import writes_file
from codeloop.permissions.shell_scan import split_command
from codeloop.permissions.shell_words import SimpleCommand

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
_SED_SCRIPT = r"\s*((\d+|\$|/[^/\\]*/)(\s*,\s*(\d+|\$|/[^/\\]*/))?)?\s*[p=l]\s*"   # compiled on first use


def _clusters_contain(args: list[str], letters: str) -> bool:
    """Whether any short-option cluster (`-rno`) holds one of `letters`."""
    return any(a.startswith("-") and not a.startswith("--") and set(a[1:]) & set(letters)
               for a in args)


# Subcommands that may run a program named in repository config: `status`/`diff` refresh the
# index (core.fsmonitor), `diff`/`show`/`log -p`/`blame` run diff.external and textconv
# drivers, and `log`/`show` run gpg.program when log.showSignature is set. Read-only only when
# those programs are contained (Bash sandboxed).
_GIT_REPO_PROGRAMS = frozenset({"status", "diff", "log", "show", "ls-files", "blame"})


def _git_read_only(args: list[str], repo_programs_ok: bool) -> bool:
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
    if sub in _GIT_REPO_PROGRAMS:
        return repo_programs_ok
    if sub == "rev-parse":
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
        return git_config_reads(rest)
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
        all(re.fullmatch(_SED_SCRIPT, cmd) for cmd in s.split(";")) for s in scripts)


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
# `${a[i]}` and `${x:n}` evaluate `i`/`n` arithmetically, and arithmetic expands a variable
# whose value is `b[$(cmd)]` by running cmd; `$[…]` is old-style arithmetic.
# Every one starts with "$": a text without one is not searched (nor the pattern compiled).
_EXPANSION_TRICKS = (r"\$\{[^}]*@[A-Za-z]|\$\{!|\$\{#?[A-Za-z_][A-Za-z0-9_]*\[|"
                     r"\$\{#?[A-Za-z_][A-Za-z0-9_]*:[^-=?+]|\$\[")


def is_read_only_command(sc: SimpleCommand, *, repo_programs_ok: bool = False) -> bool:
    """Whether this one part only reads (never writes files, never runs other code)."""
    if any(writes_file(r) for r in sc.redirects) or dangerous_env(sc.env):
        return False
    if has_expansion_trick(sc.raw) or any("$(" in v or "`" in v for v in sc.env.values()):
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
        return not any(re.match(_FIND_ACTIONS, a) or a.startswith("-fprint") for a in args)
    if name == "git":
        return _git_read_only(args, repo_programs_ok)
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


def has_expansion_trick(command: str) -> bool:
    """Whether the line uses an expansion that can run code hidden in a variable (see above)."""
    return "$" in command and re.search(_EXPANSION_TRICKS, command) is not None


@lru_cache(maxsize=16)   # asked of each Bash call by its scheduling and its transcript record, in a row
# (few entries: a command line can be a long heredoc, and only the latest few are asked again)
def is_read_only(command: str, *, repo_programs_ok: bool = False) -> bool:
    """A whole command line is read-only iff it parses cleanly and every part is read-only
    (a function of the text alone)."""
    split = split_command(command)
    return split.clean and bool(split.parts) and all(
        is_read_only_command(p, repo_programs_ok=repo_programs_ok) for p in split.parts)
