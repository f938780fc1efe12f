"""Writes hidden inside another program's language or options, for `shell_writes`.

Owns `hidden_targets`: the writes a command makes through something other than plain file
arguments — a script it runs (`… | bash`, `bash /dev/stdin`, `env -S`, `python -c`, `perl -e`,
awk programs, sed `w`/`e` commands and `s///w|e` flags, editors), a command it builds at run time
(`xargs rm`, `find -exec`), or a writing option (`find -fprint`, `git log --output=`,
`git format-patch -o`, `csplit`, `cp -l`, `link`). A write whose target cannot be known is
reported as None, so the permission layer asks (and bypass refuses unless sandboxed).
Pure functions: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Resolve = Callable[[str, int], list]          # (word, index in args) -> resolved paths (None: unknown)
Targets = list[tuple[str | None, str]]

_RUNNERS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh"})
_INTERPRETERS = frozenset({"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua",
                           "tclsh", "Rscript", "deno", "bun", "osascript", "pwsh"})
_INLINE_FLAGS = frozenset({"-c", "-e", "-E", "-r", "--eval", "-x"})
_EDITORS = frozenset({"ed", "red", "ex", "vi", "vim", "nvim", "view", "emacs", "nano", "csplit"})
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
# xargs and find -exec: a built command that is one of these may write what the input names
_READERS = frozenset({"cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ls", "stat", "du", "file",
                      "echo", "printf", "basename", "dirname", "readlink", "realpath", "test", "true", "md5sum",
                      "sha1sum", "sha256sum", "diff", "cmp"})
_STDIN_SCRIPTS = ("/dev/stdin", "-", "/proc/self/fd/0", "/dev/fd/0")
# (patterns, compiled by `re`'s cache when a sed script is first judged)
_SED_S = r"s(.)(?:\\.|(?!\1).)*?\1(?:\\.|(?!\1).)*?\1([A-Za-z0-9]*)"
_SED_CMD = r"(?:^|[;\n{}!]|[0-9$/,]\s*)\s*[wWe](?:\s|;|$)"


def _unknown(how: str) -> Targets:
    return [(None, how)]


def _sed_script_writes(script: str) -> bool:
    for m in re.finditer(_SED_S, script):
        if set(m.group(2)) & {"w", "e", "W"}:
            return True
    stripped = re.sub(_SED_S, ";", script)
    stripped = re.sub(r"y(.)(?:\\.|(?!\1).)*?\1(?:\\.|(?!\1).)*?\1", ";", stripped)
    return re.search(_SED_CMD, stripped) is not None


def _sed(args: list[str]) -> Targets:
    scripts, files_given, i = [], False, 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a in ("-f", "--file") or a.startswith("--file="):
            return _unknown("sed script file")
        elif not a.startswith("-") and not scripts and not files_given:
            scripts.append(a)
            files_given = True
        i += 1
    return _unknown("sed w/e command") if any(_sed_script_writes(s) for s in scripts) else []


def _awk(args: list[str]) -> Targets:
    for k, a in enumerate(args):
        if a in ("-i", "--include") and k + 1 < len(args) and "inplace" in args[k + 1]:
            return _unknown("awk -i inplace")
        if a in ("-f", "--file"):
            return _unknown("awk program file")
    prog = next((a for a in args if not a.startswith("-")), "")
    if re.search(r">|\|\s*\"|system\s*\(|\|&|getline", prog):
        return _unknown("awk program writing files or running commands")
    return []


def _built_command(name: str, words: list[str]) -> Targets:
    """`xargs CMD …` / `find -exec CMD …`: anything but a known reader may write what it is fed."""
    if not words:
        return [] if name == "xargs" else _unknown(name)
    cmd = words[0].rsplit("/", 1)[-1]
    return [] if cmd in _READERS else _unknown(f"{name} {cmd}")


def _xargs(args: list[str]) -> Targets:
    valued = {"-a", "-d", "-E", "-I", "-i", "-L", "-l", "-n", "-P", "-s", "--arg-file", "--delimiter",
              "--max-args", "--max-procs", "--max-chars", "--replace", "--max-lines", "--eof"}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        i += 2 if a in valued and a not in ("-i", "-l") else 1
    return _built_command("xargs", args[i:])


def _find(args: list[str], resolve: Resolve) -> Targets:
    out: Targets = []
    for k, a in enumerate(args):
        if a in ("-fprint", "-fprint0", "-fprintf", "-fls") and k + 1 < len(args):
            out += [(p, f"find {a}") for p in resolve(args[k + 1], k + 1)]
        elif a == "-delete":
            out += _unknown("find -delete")
        elif a in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(k + 1, len(args)) if args[j] in (";", "+")), len(args))
            out += _built_command("find -exec", args[k + 1:end])
    return out


def _git(args: list[str], resolve: Resolve) -> Targets:
    out: Targets = []
    sub = next((a for a in args if not a.startswith("-")), "")
    for k, a in enumerate(args):
        if a.startswith(("--output=", "--output-directory=")):
            out += [(p, f"git {a.split('=')[0]}") for p in resolve(a.split("=", 1)[1], k)]
        elif a in ("--output", "--output-directory") or (sub == "format-patch" and a == "-o"):
            if k + 1 < len(args):
                out += [(p, f"git {a}") for p in resolve(args[k + 1], k + 1)]
    if sub == "format-patch":
        out += _unknown("git format-patch files")
    return out


def hidden_targets(name: str, args: list[str], resolve: Resolve, stdin_script: bool) -> Targets:
    """Writes `name args` makes beyond its plain file arguments (see the module docstring).
    `stdin_script`: a shell here has a here-string/here-doc the caller analyses itself."""
    if name in _RUNNERS:
        if any(a.startswith("-") and not a.startswith("--") and "c" in a[1:] for a in args):
            return []                                   # `sh -c '…'`: analysed by the caller
        words = [a for a in args if not a.startswith("-") or a == "-"]
        if (not words and not stdin_script) or (words and (words[0] in _STDIN_SCRIPTS
                                                           or words[0].startswith(("/dev/fd/", "/proc/")))):
            return _unknown(f"{name} running a script from its input")
        return []
    if name == "env" and any(a.startswith(("-S", "--split-string")) for a in args):
        return _unknown("env -S running a split command string")
    if name in _INTERPRETERS:
        if any(a in _INLINE_FLAGS or (a.startswith("-") and not a.startswith("--") and a[-1] in "ceE")
               for a in args) or not args or "-" in args:
            return _unknown(f"{name} inline code")
        return []
    if name in _EDITORS:
        return _unknown(name)
    if name in _AWKS:
        return _awk(args)
    if name == "sed":
        return _sed(args)
    if name == "xargs":
        return _xargs(args)
    if name == "find":
        return _find(args, resolve)
    if name == "git":
        return _git(args, resolve)
    if name == "link":
        return [(p, "link") for k, a in enumerate(args) if not a.startswith("-") for p in resolve(a, k)]
    if name == "cp" and any(a in ("--link", "-l") or (a.startswith("-") and not a.startswith("--") and "l" in a)
                            for a in args):
        operands = [(k, a) for k, a in enumerate(args) if not a.startswith("-")]
        return [(p, "cp --link source") for k, a in operands[:-1] for p in resolve(a, k)]
    return []
