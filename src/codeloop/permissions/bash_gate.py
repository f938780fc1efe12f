"""The permission decision for one Bash call: rules, sandbox, writes and reads combined.

Owns `decide_bash` (called by `PermissionPolicy.decide`) and the two analyses behind it:

* every write is an Edit — each path the command writes (`shell_writes.py`: redirects after
  `cd`, `tee`, `cp` destinations, `sed -i`, `git config`…) gets the decision an Edit of it
  would get: deny (Edit deny rules, protected paths — in every mode), ask, or allow (allow
  rule, or acceptEdits inside the working directories). A target known only at run time asks;
  in bypassPermissions, where nothing asks, it is refused unless the sandbox contains it.
  Except where the user consented: a Bash allow rule covers the files the commands it matched
  name inside the working folders (`consent.py`; never protected, ask or Read-denied paths,
  configuration folders, and never a redirect or another command on the line).
* git's read-only subcommands (`git status`, `log`, `diff`…) are read-only where no
  configuration names a program for them to run (`git_programs.py`), or under the sandbox.
* Read deny rules hold for Bash too (`read_concern`): argument words (globs and braces
  expanded against the filesystem), input redirects (`< secret.txt`), `git show HEAD:path`, and
  directories searched recursively that hold a denied path. Words known only at run time ask.
  They hold for git's objects too, sandbox or not (`git_reads.py`: `git show HEAD:secret.txt`).

With the sandbox on for a command (`Sandbox.use_for`) and `autoAllowBashIfSandboxed`, the
command runs without a prompt once deny and ask rules have had their say; the sandbox makes
reads and writes safe. When the sandbox is enabled but cannot start, Bash is refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.tools.base import PermissionBehavior, PermissionDecision

if TYPE_CHECKING:
    from codeloop.permissions.shell_words import SplitResult

# Commands that look at names, never at contents: their arguments may name denied files.
_NAME_ONLY = frozenset({"echo", "printf", "ls", "stat", "du", "df", "basename", "dirname", "realpath",
                        "readlink", "pwd", "which", "test", "[", "true", "false", "mkdir", "touch", "rm",
                        "rmdir", "find", "tree", "type", "command"})
_RECURSIVE_ALWAYS = frozenset({"rg", "ag", "ack", "tar", "zip", "rsync", "scp", "git", "du", "find",
                               "tree", "mv"})     # `mv keys k2` moves a denied file out of its rule
_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})   # first positional: the pattern
_COPIERS = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_WALK_BUDGET = 20_000
_GLOB_CHARS = frozenset("*?[{")   # a word holding one may expand to many paths


def _brace_expand(word: str, depth: int = 0) -> list[str]:
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    seq = re.search(r"\{(-?\w+)\.\.(-?\w+)(?:\.\.-?\d+)?\}", word)
    if seq and (not m or seq.start() < m.start()) and depth <= 8:      # `{r..t}`, `{1..3}`
        a, b = seq.group(1), seq.group(2)
        if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
            lo, hi = sorted((int(a), int(b)))
            alts = [str(i) for i in range(lo, min(hi, lo + 255) + 1)]
        elif len(a) == 1 and len(b) == 1:
            lo, hi = sorted((ord(a), ord(b)))
            alts = [chr(i) for i in range(lo, hi + 1)]
        else:
            alts = [seq.group(0)]
        return [w for alt in alts for w in _brace_expand(word[:seq.start()] + alt + word[seq.end():], depth + 1)][:256]
    if not m or depth > 8:
        return [word]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out += _brace_expand(word[:m.start()] + alt + word[m.end():], depth + 1)
    return out[:256]


def _expand(word: str, base: str) -> list[str]:
    """Absolute paths a literal or globbed word can name (the word itself when nothing matches)."""
    import glob as globmod   # (here: most commands name no path to expand)

    from codeloop.permissions.paths import physical

    paths: list[str] = []
    if re.match(r"~\+(/|$)", word):
        word = base + word[2:]                          # `~+` is $PWD
    for w in _brace_expand(os.path.expanduser(word) if word.startswith("~") else word):
        absw = w if os.path.isabs(w) else os.path.join(base, w)
        hits = globmod.glob(absw, include_hidden=True) if not _GLOB_CHARS.isdisjoint(w) else []
        paths += hits or [absw]
    return [q for p in paths for q in physical(p) if q]


def _holds_denied(folder: str, denied: Callable[[Path], bool]) -> bool:
    """Whether a folder searched recursively contains a denied path (bounded walk: too big asks)."""
    budget, stack = _WALK_BUDGET, [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            budget -= 1
            if budget < 0 or denied(Path(e.path)):
                return True
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
    return False


def _recursive(name: str, args: list[str]) -> bool:
    if name in _RECURSIVE_ALWAYS:
        return True
    short = [a for a in args if a.startswith("-") and not a.startswith("--")]
    if name in ("grep", "egrep", "fgrep", "cp", "chmod", "chown", "zip", "ls"):
        return any(set(a[1:]) & {"r", "R", "a"} for a in short) or any(
            a in ("--recursive", "--dereference-recursive", "--archive") or a.startswith("--directories=rec")
            for a in args) or any(a in ("-d", "--directories") and b.startswith("rec") for a, b in zip(args, args[1:]))
    return False


def _denied_link(policy: Any, path: str, inodes: list) -> bool:
    """A hard link to a denied file (another name, same inode), like the file tools check."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not os.path.isfile(path) or st.st_nlink < 2:
        return False
    if not inodes:
        inodes.append(policy.denied_inodes("Read"))
    return inodes[0] is None or (st.st_dev, st.st_ino) in inodes[0]


def read_concern(policy: Any, split: SplitResult, denied: Callable[[Path], bool]) -> str | None:
    """Why this command may read a path a Read deny rule covers (None: it cannot)."""
    from codeloop.permissions.bash import command_name, unwrap
    from codeloop.permissions.shell_writes import Resolver, track_cd

    r = Resolver(str(policy.cwd), os.path.expanduser("~"))
    inodes: list = []                                   # the denied inodes, looked up once if needed
    for part in split.parts:
        words: list[tuple[str, bool]] = [(red.target, False) for red in part.redirects
                                         if red.op.lstrip("0123456789").startswith("<")
                                         and red.op.lstrip("0123456789") not in ("<<", "<<-", "<<<")]
        u = unwrap(part.argv) if part.argv else None
        name = command_name(u.argv[0]) if u and u.argv else ""
        args = u.argv[1:] if u and u.argv else []
        if name and track_cd(name, args, {k - u.offset for k in part.dynamic if u and k >= u.offset}, r):
            continue
        if name == "xargs":
            return "xargs runs a command on names from its input, and a Read deny rule is in force"
        if name == "find" and _EXEC & set(args):      # `find … -exec cat {} +`: reads what it finds
            starts = list(args[:next((k for k, a in enumerate(args) if a[:1] in "-(!"), len(args))])
            words += [(a, False) for a in starts or ["."]]
        if name == "git" and "grep" in args:
            words.append((".", False))                  # `git grep KEY`: the worktree
        if name and name not in _NAME_ONLY:
            positional = [k for k, a in enumerate(args) if not a.startswith("-")]
            dest = positional[-1] if name in _COPIERS and len(positional) > 1 and not any(
                a.startswith(("-t", "--target-directory")) for a in args) else -1
            for k, a in enumerate(args):
                if k == dest:
                    continue                             # `cp -r sub .`: the destination is written, not read
                if name == "dd" and a.startswith("if="):
                    a = a[3:]
                elif a.startswith("-") and "=" in a:
                    a = a.split("=", 1)[1]          # `--file=secret.txt`
                elif a.startswith("-"):
                    continue
                words.append((a, False))
                if name == "git" and ":" in a:
                    words.append((a.split(":", 1)[1], False))    # `git show HEAD:secret.txt`
            positionals = [a for a in args if not a.startswith("-")]
            if _recursive(name, args) and len(positionals) <= (1 if name in _SEARCHERS else 0):
                words.append((".", False))                       # `grep -r KEY`, `rg KEY`: the cwd
        for word, _ in words:
            # glob words are expanded below; a parameter or command expansion cannot be
            if "$" in word or "`" in word or re.match(r"~-(/|$)", word):
                return f"the command reads {word}, a path known only when it runs, and a Read deny rule is in force"
            for base in (r.cwds if not r.unknown_cwd else []):
                for path in _expand(word, base):
                    if denied(Path(path)) or _denied_link(policy, path, inodes):
                        return f"the command reads {path}, which a Read deny rule covers"
                    if _recursive(name, args) and os.path.isdir(path) and _holds_denied(path, denied):
                        return f"the command searches {path}, which holds a path a Read deny rule covers"
            if r.unknown_cwd and not os.path.isabs(word):
                return f"the command reads {word} after a `cd` whose target is known only when it runs"
    return None


def outside_concern(policy: Any, split: SplitResult) -> str | None:
    """For commands allowed only as built-in read-only ones: a path argument outside the
    working directories, or one that cannot be known before it runs (`cat $HOME/.ssh/id_rsa`)."""
    from codeloop.permissions.bash import command_name, unwrap
    from codeloop.permissions.modes import FILE_READERS

    for part in split.parts:
        argv = unwrap(part.argv).argv if part.argv else []
        if not argv:
            continue
        name, words = command_name(argv[0]), argv[1:]
        if name == "git":
            words = [w for prev, w in zip(words, words[1:]) if prev == "-C"]
        elif name not in FILE_READERS:
            continue
        for word in words:
            if word.startswith("-") or not word.strip():
                continue
            if "$" in word or "`" in word or re.match(r"~-(/|$)", word):
                return f"the command reads {word}, a path known only when it runs"
            path = Path(os.path.expanduser(word))
            path = path if path.is_absolute() else policy.cwd / path
            if not policy.inside_workdirs(str(path)):
                return f"the command reads {word}, outside the working directories"
    return None


def _beyond_consent(policy: Any, w: Any) -> str | None:
    """Why an allow rule's consent does not reach this write of a command it matched (None: it
    does): outside the working folders, a protected, ask or Read-denied path, a configuration
    folder, or a copy that would bring one in (see `consent.py`)."""
    from codeloop.permissions.consent import config_component, consented_unknown, holds_config, in_roots
    from codeloop.permissions.rules import DecisionBehavior, path_decision

    if w.path is None:
        return None if consented_unknown(w, {w.index}) else "somewhere known only when it runs"
    roots = [str(policy.cwd), *policy.additional_directories]
    if not in_roots(w.path, roots):
        return "outside the working directories"
    d = path_decision("Edit", w.path, policy.rules, cwd=str(policy.cwd))
    if d.behavior in (DecisionBehavior.DENY, DecisionBehavior.ASK):
        return f"which matches the {d.behavior.value} rule {d.matched_rule}"
    if hit := config_component(w.path, roots):
        return f"inside {hit}, configuration that can start programs"
    denied = policy.read_filter()
    if denied is not None and denied(Path(w.path)):
        return "which a Read deny rule covers"
    if "destination" in w.how:
        for source in w.sources or (None,):
            if source is None:
                return "copying from somewhere known only when it runs"
            if why := holds_config(source):
                return why
    return None


def _write_concern(policy: Any, writes: list[Any], consented: frozenset[int] = frozenset()) -> str | None:
    """Why a write needs a question. A write of a part an allow rule matched (not a redirect) is
    consented within the limits of `_beyond_consent`; any other gets the decision an Edit of its
    target would get."""
    from codeloop.permissions.guarded import guarded_write
    from codeloop.permissions.modes import EDITS_ALLOWED_MODES
    from codeloop.permissions.rules import DecisionBehavior, path_decision

    for w in writes:
        limit = _beyond_consent(policy, w) if w.index in consented and w.how != "redirect" else "not consented"
        if limit is None:
            continue
        if w.path is None:
            return f"{w.how} in {w.part!r} writes somewhere known only when it runs"
        d = path_decision("Edit", w.path, policy.rules, cwd=str(policy.cwd))
        if d.behavior is DecisionBehavior.ALLOW:
            continue
        if d.behavior is DecisionBehavior.PASSTHROUGH and policy.mode in EDITS_ALLOWED_MODES \
                and policy.inside_workdirs(w.path) and not guarded_write([w], str(policy.cwd), bypass=False):
            continue
        if limit != "not consented":
            return f"{w.how} writes {w.path} ({limit}), which needs the permission an Edit of it would"
        return f"{w.how} writes {w.path}, which needs the permission an Edit of it would"
    return None


_CONTAINER_OK = ("mkdir", "touch")   # creating or touching a folder writes nothing inside it


def protected_write(policy: Any, writes: list[Any]) -> str | None:
    """A write that reaches a protected path without naming it: a folder holding one that is
    removed, moved or replaced (`rm -rf .git`, `cp -r x/.codeloop .`), or a hard link to one."""
    from codeloop.permissions.modes import protected_paths

    if not (writes := [w for w in writes if w.path is not None and w.how not in _CONTAINER_OK]):
        return None   # most commands write nothing: no protected path to list and stat
    concrete = [p for p in protected_paths(policy.cwd) if "*" not in p]
    inodes: dict[tuple[int, int], str] = {}
    for p in concrete:
        try:
            st = os.stat(p)
        except OSError:
            continue
        inodes[(st.st_dev, st.st_ino)] = p
    for w in writes:
        if w.how.endswith(" destination") and os.path.isdir(w.path):
            continue                        # written into: its `dest/name` entry is checked
        for form in {w.path, os.path.realpath(w.path)}:
            prefix = form.rstrip("/") + "/"
            hit = next((p for p in concrete if p.startswith(prefix) or os.path.realpath(p).startswith(prefix)), None)
            if hit:
                return f"{w.how} writes {form}, which holds {hit}"
        try:
            st = os.stat(w.path)
        except OSError:
            continue
        if st.st_nlink > 1 and (st.st_dev, st.st_ino) in inodes:
            return f"{w.how} writes {w.path}, a hard link to {inodes[(st.st_dev, st.st_ino)]}"
    return None


# interpreter code (`python3 -c`) is left to the sandbox: asking for every one-liner would make
# auto-allow useless (test_auto_allow_still_runs_ordinary_commands)
_HIDDEN_RUNS = ("running a script", "running a computed script", "env -S")


def _hidden_program(policy: Any, split: Any, writes: list) -> str | None:
    """With a Bash deny rule in force, a program named only at run time (`$x`, `$(…)`, a script
    piped into a shell) could be the denied one: it asks instead of auto-allowing."""
    from codeloop.permissions.shell_cmd import unwrap

    if not any(r.tool == "Bash" for r in policy.rules.deny):
        return None
    for part in split.parts:
        if part.argv and unwrap(part.argv).offset in part.dynamic:
            return f"the program {part.raw!r} runs is known only when it runs, and a Bash deny rule is in force"
    for w in writes:
        if w.path is None and any(h in w.how for h in _HIDDEN_RUNS):
            return f"{w.how} in {w.part!r} may run a program a Bash deny rule forbids"
    return None


def decide_bash(policy: Any, tool: Any, inp: Any, opinion: PermissionDecision,
                raw: dict[str, Any]) -> PermissionDecision:
    from codeloop.permissions.bash import split_command
    from codeloop.permissions.git_programs import git_concern
    from codeloop.permissions.guarded import wants_outside
    from codeloop.permissions.modes import PermissionMode
    from codeloop.permissions.readonly import is_read_only
    from codeloop.permissions.rules import DecisionBehavior, evaluate
    from codeloop.permissions.shell_writes import write_targets

    command = str(raw.get("command", ""))
    use, why, sandboxed = policy.sandbox_use(command, disable=wants_outside(inp, raw))
    split = split_command(command)
    # git's read-only subcommands run programs only a configuration names: contained by the
    # sandbox, or read-only when no configuration names one
    git_why = None if sandboxed else git_concern(str(policy.cwd), split)
    verdict = evaluate("Bash", raw, policy.rules, cwd=str(policy.cwd), repo_programs_ok=git_why is None,
                       roots=[str(policy.cwd), *policy.additional_directories])
    if verdict.behavior is DecisionBehavior.DENY:
        return policy.rule_denial("Bash", verdict)
    if opinion.behavior is PermissionBehavior.DENY:
        return opinion
    writes = write_targets(split, str(policy.cwd))
    if why_protected := protected_write(policy, writes):
        return PermissionDecision(PermissionBehavior.DENY, (
            f"Permission to use Bash has been denied: {why_protected}; codeloop's settings, session records "
            f"and repository hooks/config may never be written by a tool."))
    if use == "refused":
        return PermissionDecision(PermissionBehavior.DENY, why)
    if verdict.behavior is DecisionBehavior.ASK and policy.mode is not PermissionMode.BYPASS:
        return PermissionDecision(PermissionBehavior.ASK, f"Bash matches the ask rule {verdict.matched_rule}.",
                                  human=True)
    denied = None if sandboxed else policy.read_filter()
    reads = read_concern(policy, split, denied) if denied is not None else None
    # git prints committed and staged files from its objects, out of the sandbox's sight
    if (git_reads := policy.git_reads(split)) and (git_reads.denies or policy.mode is PermissionMode.BYPASS):
        return PermissionDecision(PermissionBehavior.DENY, f"Permission to use Bash has been denied: {git_reads.why}.")
    if policy.mode is PermissionMode.BYPASS:
        if reads:
            return PermissionDecision(PermissionBehavior.DENY, f"Permission to use Bash has been denied: {reads}.")
        unknown = next((w for w in writes if w.path is None), None)
        if unknown is not None and not sandboxed:
            return PermissionDecision(PermissionBehavior.DENY, (
                f"Permission to use Bash has been denied: {unknown.how} in {unknown.part!r} writes somewhere known "
                f"only when it runs, so it cannot be checked against protected paths; write the path literally "
                f"or enable the sandbox."))
        from codeloop.permissions.guarded import guarded_write
        if guarded := guarded_write(writes, str(policy.cwd), bypass=True):
            return policy.ask_or_deny("Bash", guarded + ".")
        return PermissionDecision(PermissionBehavior.ALLOW)
    if policy.mode is PermissionMode.PLAN and not is_read_only(command, repo_programs_ok=git_why is None):
        return PermissionDecision(PermissionBehavior.DENY,
                                  "Bash is not available in plan mode: only read-only tools may run.")
    if git_reads:
        return policy.ask_or_deny("Bash", git_reads.why + ".")
    if sandboxed and policy.sandbox.settings.auto_allow:
        if hidden := _hidden_program(policy, split, writes):
            return policy.ask_or_deny("Bash", hidden + ".")
        return PermissionDecision(PermissionBehavior.ALLOW)
    if reads:
        return policy.ask_or_deny("Bash", reads + ".")
    if verdict.behavior is DecisionBehavior.ALLOW or opinion.behavior is PermissionBehavior.ALLOW:
        # A bare `Bash` allow rule consents to every command, whatever it writes (deny rules and
        # protected paths were enforced above); a narrower rule (`Bash(echo *)`) does not.
        every = verdict.matched_rule is not None and verdict.matched_rule.specifier is None
        concern = None if every else _write_concern(policy, writes, verdict.consented)
        if concern is None and verdict.matched_rule is None:
            concern = outside_concern(policy, split)
        if concern:
            return policy.ask_or_deny("Bash", concern + ".")
        return PermissionDecision(PermissionBehavior.ALLOW)
    reason = git_why or (verdict.reason if verdict.behavior is DecisionBehavior.PASSTHROUGH else "")
    return policy.ask_or_deny("Bash", f"Bash requires permission: {reason}." if reason else "Bash requires permission.")
