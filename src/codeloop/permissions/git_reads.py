"""Read deny rules hold for git's objects: `git show HEAD:secret.txt` is a read of secret.txt.

A file a Read deny rule covers may be committed or staged, and then git prints it from its object
store — which neither the Bash read check (it looks at paths on disk) nor the sandbox (it masks
paths on disk) sees. Owns `git_read_concern(policy, split)`, asked for every Bash call while a Read
deny rule is in force (with none, it returns at once and nothing changes):

* DENY — a git call names a denied path: `REV:path`, `:path`, `:N:path` (`show`, `cat-file -p`,
  `-L…:path`), or a pathspec of a command that prints contents (`git log -p -- secret.txt`).
* ASK (in bypassPermissions, a denial; never auto-allowed, sandbox or not) — a call that can print
  contents without a pathspec keeping it off every denied path: `show`, `log -p`/`-L`/`-S`/`-G`,
  `diff` against revisions or `--cached` (and the work-tree `diff` when the index tracks a denied
  path), `grep` in revisions or the index, `cat-file` (an object id cannot be mapped to a path),
  `stash show -p`, `add -p`… Also every subcommand not known to be content-free (`archive`,
  `format-patch`, `bundle`, `fast-export`, `checkout-index`, `worktree add`, `apply --cached`,
  aliases…), a `-c` setting or `GIT_*`/pager variable that could start a program, and any word
  known only at run time. Launchers (`xargs`, `sh -c`, `find -exec`, heredocs) and shell scripts a
  call runs (`sh s.sh`, `./s.sh`, read from disk) are read through; a git call found inside one is
  not trusted to keep its pathspecs (xargs appends more). A word reaching into `.git/objects` asks;
  a denied `REV:path` anywhere on a line that mentions git (a script being written, inline Python)
  is refused. Paths are also read as relative to the session's folder: a copy of the repository
  (`cp -r . /tmp/c`) holds the same history under paths no rule names.

Status, log without patches, branch, rev-parse, ls-files, commit, checkout… keep running. This is
a parse of the command line: a program that builds its command at run time, or inflates git's
objects itself (Python's zlib on a pack), is beyond it.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from codeloop.permissions.git_subcommands import (CONTENT_FREE, KNOWN_SUBCOMMANDS, GitCall, GitRead, GitReadLevel,
                                                  ask_read)

if TYPE_CHECKING:
    from codeloop.permissions.git_paths import DeniedPaths
    from codeloop.permissions.shell_words import SimpleCommand, SplitResult


_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "-p", "--paginate", "--no-replace-objects", "--bare",
                           "--no-optional-locks", "--no-lazy-fetch", "--no-advice", "--glob-pathspecs",
                           "--noglob-pathspecs", "--literal-pathspecs", "--icase-pathspecs"})
_GLOBAL_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                            "--super-prefix", "--attr-source"})
_GLOBAL_PRINTS = frozenset({"--version", "--help", "-h", "--exec-path", "--html-path", "--man-path",
                            "--info-path", "--list-cmds"})
# `-c key=value` that cannot start a program or read a file into something git prints
# (patterns, compiled by `re`'s cache when first used: most commands never reach them)
_SAFE_SETTING = (
    r"(color|advice|i18n|column|user|author|committer)\..*|core\.(quotepath|abbrev|autocrlf|safecrlf|filemode|"
    r"ignorecase|precomposeunicode|eol)|init\.defaultbranch|safe\.directory|log\.(date|decorate|abbrevcommit)|"
    r"pull\.(rebase|ff)|merge\.ff|rebase\.autostash|fetch\.prune|push\.(default|autosetupremote)|"
    r"diff\.(noprefix|renames|mnemonicprefix|algorithm)|status\.(short|branch)|gc\.auto|protocol\.version|"
    r"(commit|tag)\.gpgsign")
_SAFE_ENV = frozenset({"GIT_OPTIONAL_LOCKS", "GIT_TERMINAL_PROMPT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                       "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
                       "GIT_NO_LAZY_FETCH", "GIT_CONFIG_NOSYSTEM"})
_PAGER_ENV = frozenset({"PAGER", "LESSOPEN", "LESSCLOSE", "MANPAGER", "LESS"})
_SCRIPT_LIMIT = 256 * 1024
_OBJECT_STORE = r"\.git/(objects|modules|worktrees)\b|\bobjects/(pack|info|[0-9a-f]{2})\b"
_TOKENS = r"[\s'\"\[\](),;=`]+"

def git_read_concern(policy: Any, split: SplitResult) -> GitRead | None:
    """Why this command line may print a file a Read deny rule covers from git's objects."""
    specs = policy.hidden_specs()   # the sandbox's denyRead too: masked on disk, not in git's objects
    if not specs or not _may_run_git(split):
        return None
    from codeloop.permissions.git_paths import DeniedPaths
    from codeloop.permissions.shell_cmd import command_name, unwrap
    from codeloop.permissions.shell_writes import Resolver, track_cd

    dp = DeniedPaths.of(specs, str(policy.cwd))
    r = Resolver(str(policy.cwd), os.path.expanduser("~"))
    exported = False
    worst: GitRead | None = None
    for part in split.parts:
        u = unwrap(part.argv) if part.argv else None
        if not u or not u.argv:
            continue
        dyn = {k - u.offset for k in part.dynamic if k >= u.offset}
        name, args = command_name(u.argv[0]), u.argv[1:]
        if name in ("export", "declare", "typeset", "local", "readonly", "set") and any(
                _env_concern({a.split("=", 1)[0]: ""}) for a in args if "=" in a):
            exported = True
        if track_cd(name, args, dyn, r):
            continue
        hidden_cwd = u.offset > 0 and any(w in ("-C", "--chdir") or w.startswith("--chdir=")
                                          for w in part.argv[:u.offset])     # `env -C dir git …`
        candidates: list[tuple[list[str], set[int], dict[str, str], bool]] = [
            (u.argv, dyn, {**part.env, **u.env}, True)]
        candidates += _launched(part, list(r.cwds))
        for argv, cdyn, env, trusted in candidates:
            cwds = None if r.unknown_cwd or hidden_cwd else list(r.cwds)
            found = _judge(argv, cdyn, env, trusted, exported, cwds, dp)
            if found and found.level is GitReadLevel.DENY:
                return found
            worst = worst or found
    if raw := _object_store(split):
        return ask_read(f"{raw[:60]!r} reads git's object store directly")
    if hit := _named_in_text(split, dp, [str(policy.cwd)]):
        return GitRead(GitReadLevel.DENY, f"the command names {hit} in git's REV:path form, which a Read deny "
                                          f"rule covers")
    return worst


def _may_run_git(split: SplitResult) -> bool:
    """A cheap first look: a word mentioning git, a program named at run time or by path (a script),
    or a launcher (whose script `inner_commands` decodes, which a quick look would not)."""
    from codeloop.permissions.shell_cmd import launcher_name

    # (a word without "git" reaches the object store only through "objects/")
    words = (w for p in split.parts for w in [*p.argv, *p.heredocs])
    return any("git" in w or ("objects/" in w and re.search(_OBJECT_STORE, w)) for w in words) or any(
        p.argv and (0 in p.dynamic or "/" in p.argv[0] or launcher_name(p.argv)) for p in split.parts)


def _launched(part: SimpleCommand, cwds: list[str]) -> list[tuple[list[str], set[int], dict[str, str], bool]]:
    """The git calls a launcher part may run (`xargs git show`, `sh -c 'git …'`), and those of a
    shell script it runs (`sh s.sh`, `. s.sh`, `./s.sh`: written by an earlier call, read here)."""
    from codeloop.permissions.shell_cmd import inner_commands, launcher_name

    found = [*inner_commands(part)] if launcher_name(part.argv) else []
    found += _script_commands(part, cwds)
    env = {"GIT_": "?"} if "GIT_" in part.raw or any(k in part.raw for k in _PAGER_ENV) else {}
    return [(argv, {k for k, w in enumerate(argv) if "$" in w or "`" in w}, env, False) for argv in found]


def _script_commands(part: SimpleCommand, cwds: list[str]) -> list[list[str]]:
    from codeloop.permissions.shell_cmd import SHELLS, command_name, inner_commands, strip_wrappers, unwrap
    from codeloop.permissions.shell_scan import split_command

    argv = unwrap(part.argv).argv
    if not argv:
        return []
    name = command_name(argv[0])
    if name in SHELLS or name in (".", "source"):
        options = [a for a in argv[1:] if a.startswith("-")]
        files = [] if any("c" in o for o in options if not o.startswith("--")) else [
            a for a in argv[1:] if not a.startswith("-")][:1]
    else:
        files = [argv[0]] if "/" in argv[0] else []
    commands: list[list[str]] = []
    for path in (os.path.join(base, os.path.expanduser(f)) for f in files for base in cwds):
        try:
            if not os.path.isfile(path) or os.path.getsize(path) > _SCRIPT_LIMIT:
                continue
            with open(path, "rb") as fh:
                script = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        for p in split_command(script).parts:
            commands += [strip_wrappers(p.argv), *inner_commands(p)]
    return [c for c in commands if c]


def _object_store(split: SplitResult) -> str | None:
    """A word reaching into git's object store (`.git/objects/…`, its packs), read without git."""
    return next((w for p in split.parts for w in [*p.argv, *p.heredocs]
                 if re.search(_OBJECT_STORE, w)), None)


def _named_in_text(split: SplitResult, dp: DeniedPaths, cwds: list[str]) -> str | None:
    """A `REV:denied-path` in any word or heredoc of a line that mentions git (a script being
    written, `python3 -c "…['git','show','HEAD:secret.txt']…"`): the denied path, or None."""
    from codeloop.permissions.git_paths import rev_path_denied

    texts = [w for p in split.parts for w in [*p.argv, *p.heredocs]]
    if not any("git" in t for t in texts):
        return None
    for t in texts:
        for token in re.split(_TOKENS, t):
            rev = token.split(":", 1)[0]
            if ":" in token and not token.split(":", 1)[1].startswith("//") and "/" not in rev and \
                    (hit := rev_path_denied(token, cwds, dp)):
                return hit
    return None


def _env_concern(env: dict[str, str]) -> str | None:
    bad = next((k for k in env if (k.upper().startswith("GIT_") and k not in _SAFE_ENV) or k in _PAGER_ENV), None)
    return f"the variable {bad} changes what git reads or runs" if bad else None


def _judge(argv: list[str], dyn: set[int], env: dict[str, str], trusted: bool, exported: bool,
           cwds: list[str] | None, dp: DeniedPaths) -> GitRead | None:
    """The concern about one command that may be a git call (None: not git, or harmless)."""
    from codeloop.permissions.shell_cmd import command_name

    name, shift = command_name(argv[0]), 1
    if 0 in dyn:                                      # `$x show HEAD:…`: the program could be git
        if not argv[1:] or not (argv[1] in KNOWN_SUBCOMMANDS or argv[1] in _GLOBAL_FLAGS | _GLOBAL_VALUED):
            return None
        call_args = argv[1:]
    elif name == "git":
        call_args = argv[1:]
    elif name.startswith("git-") and len(name) > 4:
        call_args, shift = [name[4:], *argv[1:]], 0   # /usr/lib/git-core/git-show
    else:
        return None
    shown = " ".join(argv[:3])
    if why := _env_concern(env) or ("a GIT_* or pager variable exported on this line changes what git runs"
                                    if exported else None):
        return ask_read(f"{shown}: {why}")
    if cwds is None:
        return ask_read(f"{shown} runs in a folder known only when it runs")
    call = _parse_globals(call_args, {k - shift for k in dyn if k > 0}, cwds, trusted)
    if isinstance(call, GitRead):
        return call
    if call is None:
        return None                                   # `git --version`, `git` alone
    from codeloop.permissions.git_paths import rev_path_denied

    for k, word in enumerate(call.args):
        if k not in call.dyn and (hit := rev_path_denied(word, call.bases, dp)):
            return GitRead(GitReadLevel.DENY, f"git {call.sub} would print {hit} from git's objects, "
                                              f"which a Read deny rule covers")
    if 0 in dyn:
        if call.sub not in CONTENT_FREE or call.dyn:
            return ask_read(f"{argv[0]} {call.sub} runs a program known only when it runs, which could be git")
    from codeloop.permissions.git_subcommands import judge_subcommand
    return judge_subcommand(call, dp)


def _parse_globals(args: list[str], dyn: set[int], bases: list[str], trusted: bool) -> GitCall | GitRead | None:
    i, literal = 0, False
    while i < len(args) and args[i].startswith("-"):
        word, value = args[i], args[i + 1] if i + 1 < len(args) else ""
        key, has_eq = word.split("=", 1)[0], "=" in word and word.startswith("--")
        takes_next = key in _GLOBAL_VALUED and not has_eq
        if i in dyn or (takes_next and i + 1 in dyn):
            return ask_read(f"git {word} is known only when it runs")
        if key in ("-c", "--config-env"):
            setting = (word.split("=", 1)[1] if has_eq else value).split("=", 1)[0]
            if not re.fullmatch(_SAFE_SETTING, setting, re.IGNORECASE):
                return ask_read(f"git -c {setting} can change what git runs or prints")
        elif key == "-C":
            bases = [os.path.normpath(os.path.join(b, os.path.expanduser(value))) for b in bases]
        elif key in ("--git-dir", "--work-tree", "--super-prefix", "--namespace") or (key == "--exec-path" and has_eq):
            return ask_read(f"git {key} points git at other files than the ones checked")
        elif key == "--icase-pathspecs":
            return ask_read("git --icase-pathspecs lets a pathspec match a denied path in another case")
        elif key == "--literal-pathspecs":
            literal = True
        elif key not in _GLOBAL_FLAGS and key not in _GLOBAL_VALUED and key not in _GLOBAL_PRINTS:
            return ask_read(f"git's option {word} is not known to be harmless")
        i += 2 if takes_next else 1
    if i >= len(args):
        return None
    if i in dyn:
        return ask_read("the git subcommand is known only when it runs")
    return GitCall(args[i], args[i + 1:], {k - i - 1 for k in dyn if k > i}, bases, trusted, literal)
