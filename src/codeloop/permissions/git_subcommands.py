"""Per-subcommand judgement for `git_reads.py`: can this git call print a denied file's contents?

Owns `judge_subcommand(call, dp)`. Content-free subcommands run (a word naming a denied path asks,
as any read of it would; interactive patch flags ask); log-like ones are content-free until a patch,
`-L` or pickaxe option appears; `diff`, `show`, `grep`, `cat-file` and `stash show` are read option by
option. With content, the call runs only when its pathspecs keep it off every denied path
(`git_paths.restricts`); a pathspec naming a denied path is refused. Everything else asks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeloop.permissions.git_paths import DeniedPaths


class GitReadLevel(Enum):
    """What a git read concern asks of the decision."""
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True)
class GitRead:
    """A concern about a git call: deny it, or ask, and why (one line for the model)."""
    level: GitReadLevel
    why: str

    @property
    def denies(self) -> bool:
        return self.level is GitReadLevel.DENY


@dataclass
class GitCall:
    """One git invocation: where it runs, its subcommand and the words after it."""
    sub: str
    args: list[str]
    dyn: set[int]                      # indexes into args known only at run time
    bases: list[str]                   # the folders it runs in (after `cd`, `-C`)
    trusted: bool                      # False: found inside a launcher that may add words
    literal: bool = False
    notes: list[str] = field(default_factory=list)


def ask_read(why: str) -> GitRead:
    """An ASK whose reason says which rule makes it one (unless the reason already names it)."""
    return GitRead(GitReadLevel.ASK, why if "Read deny rule" in why else why + ", and a Read deny rule is in force")


# Subcommands that print no file contents and put none under another name: they run, unless a
# word names a denied path (then they ask, like any other read of it) or an interactive patch
# flag shows hunks (`add -p`).
CONTENT_FREE = frozenset({
    "status", "ls-files", "ls-tree", "ls-remote", "rev-parse", "rev-list", "branch", "tag", "remote",
    "config", "describe", "name-rev", "merge-base", "for-each-ref", "show-ref", "symbolic-ref",
    "count-objects", "shortlog", "check-ignore", "check-attr", "check-ref-format", "var", "version",
    "help", "init", "add", "commit", "rm", "mv", "clean", "reset", "restore", "checkout", "switch", "merge",
    "rebase", "cherry-pick", "revert", "pull", "fetch", "push", "gc", "prune", "show-branch", "cherry",
    "verify-commit", "verify-tag", "blame", "annotate", "worktree", "stash"})
_LOG_LIKE = frozenset({"log", "whatchanged", "reflog", "diff-tree", "diff-index", "diff-files"})
_INTERACTIVE = frozenset({"-p", "--patch", "-i", "--interactive", "-e", "--edit", "-v", "--verbose", "-vv"})
_PATCH_LONG = ("--patch", "--unified", "--word-diff", "--color-words", "--cc", "--remerge-diff", "--binary",
               "--function-context", "--check", "--diff-merges", "--dd", "--full-diff", "--ext-diff", "--textconv",
               "--pickaxe", "--patch-with")
_SUMMARY = frozenset({"--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--raw",
                      "--summary", "--dirstat", "--compact-summary", "-s", "--no-patch", "--quiet",
                      "--exit-code"})
_COMMIT_ONLY = r"(HEAD|@)([~^]\d*)*"   # compiled by `re`'s cache when revisions are first judged
_GREP_VALUED = frozenset({"-e", "-f", "-A", "-B", "-C", "-m", "--max-depth", "--threads", "--max-count",
                          "--context", "--after-context", "--before-context"})



_EXPORTERS = frozenset({"archive", "format-patch", "bundle", "fast-export", "checkout-index", "read-tree",
                        "update-index", "unpack-file", "pack-objects", "clone", "apply", "am", "notes", "replace",
                        "hash-object", "mktree", "commit-tree", "filter-branch", "difftool", "range-diff",
                        "request-pull", "send-email", "submodule", "subtree", "show-index", "verify-pack"})
# short options that show hunks (interactive patch modes, verbose diffs), per subcommand; and the
# short options whose value follows, which end a cluster (`-am` vs `-mfix`)
_HUNK_LETTERS = {"add": "pie", "checkout": "p", "reset": "p", "restore": "p", "stash": "p", "commit": "pv",
                 "status": "v"}
_HUNK_LONG = ("--patch", "--interactive", "--edit", "--verbose")
_VALUED_LETTERS = "mFcCtSuUOo"
_PATCH_SHORT = "puWcm"                  # log/diff: `-p`, `-u`, `-W`, `-c`/`-m` (merges as diffs)
_PATCH_VALUED = "ULSGO"                 # `-U3`, `-L1,5:f`, `-Sstr`, `-Gre`, `-Oorderfile`
KNOWN_SUBCOMMANDS = CONTENT_FREE | _LOG_LIKE | _EXPORTERS | {"diff", "show", "grep", "cat-file"}
_RUNS = ("--exec", "--upload-pack", "--receive-pack", "--to-cmd", "--cc-cmd")   # run a command git is handed
_MESSAGES = ("commit", "tag", "merge", "stash", "revert", "cherry-pick")


def _split(args: list[str]) -> tuple[list[str], list[str]]:
    if "--" in args:
        k = args.index("--")
        return args[:k], args[k + 1:]
    return args, []


def _positionals(words: list[str]) -> list[str]:
    return [w for w in words if not w.startswith("-") or w == "-"]


def _patch_option(word: str) -> bool:
    if word.startswith("--"):
        return word.split("=", 1)[0].startswith(_PATCH_LONG)
    if not word.startswith("-") or len(word) < 2 or word[1].isdigit():
        return False
    return word[1] in _PATCH_VALUED or any(c in _PATCH_SHORT for c in word[1:] if c.isalpha())


def _exists(word: str, bases: list[str]) -> bool:
    return any(os.path.lexists(os.path.join(b, word)) for b in bases)


def _revs_and_specs(call: GitCall) -> tuple[list[str], list[str]]:
    """Revisions and pathspecs: after `--` pathspecs; before it, what exists in the work tree is a
    pathspec (git refuses a word that is both) and anything else a revision."""
    before, after = _split(call.args)
    revs: list[str] = []
    specs = list(after)
    for w in _positionals(before):
        (specs if ".." not in w and _exists(w, call.bases) else revs).append(w)
    return revs, specs


def _named(words: list[str], call: GitCall, dp: DeniedPaths) -> str | None:
    """A denied path named by a word or an option's value (`--file=x`, `-F x`)."""
    from codeloop.permissions.git_paths import pathspec_denied

    for w in words:
        value = w.split("=", 1)[1] if w.startswith("--") and "=" in w else w
        if value and (hit := pathspec_denied(value, call.bases, dp)):
            return hit
    return None


def _deny(call: GitCall, hit: str) -> GitRead:
    return GitRead(GitReadLevel.DENY, f"git {call.sub} would read {hit} from git's objects, which a Read deny rule "
                                      f"covers")


def _content_unless_restricted(call: GitCall, dp: DeniedPaths, specs: list[str], what: str) -> GitRead | None:
    from codeloop.permissions.git_paths import restricts

    if hit := _named(specs, call, dp):
        return _deny(call, hit)
    # `--full-diff`/`--pickaxe-all` show whole commits past the pathspec, `--follow` older names, and
    # a pathspec under a `REV:folder` tree is relative to that folder, not to where it was checked
    widened = {"--follow", "--full-diff", "--pickaxe-all"} & set(call.args) or any(
        ":" in w for w in _positionals(_split(call.args)[0]))
    if call.trusted and not widened and restricts(specs, call.bases, dp, literal=call.literal):
        return None
    return ask_read(f"git {call.sub} {what} without a pathspec that keeps it off the denied files")


def judge_subcommand(call: GitCall, dp: DeniedPaths) -> GitRead | None:
    sub, args = call.sub, call.args
    unknown = [k for k in call.dyn if not (sub in _MESSAGES and (
        (k > 0 and args[k - 1] in ("-m", "--message")) or args[k].startswith(("--message=", "-m"))))]
    if unknown:
        return ask_read(f"git {sub} has the word {args[unknown[0]]!r}, known only when it runs")
    if sub in CONTENT_FREE:
        return _content_free(call, dp)
    if sub in _LOG_LIKE:
        if sub == "reflog" and args[:1] and args[0] in ("expire", "delete", "exists"):
            return None
        return _log_like(call, dp)
    if sub == "diff":
        return _diff(call, dp)
    if sub == "show":
        return _show(call, dp)
    if sub == "grep":
        return _grep(call, dp)
    if sub == "cat-file":
        return _cat_file(args)
    if sub in _EXPORTERS:
        return ask_read(f"git {sub} can print or copy files out of git's objects")
    return ask_read(f"git {sub} is not known to keep away from denied files (an alias, or a command that can print "
                f"or copy them)")


def _cat_file(args: list[str]) -> GitRead | None:
    """Metadata only (`-t`, `-s`, `-e`, `--batch-check`) runs; so does printing `REV:path` objects,
    whose paths were checked; an object id asks."""
    flags = [a for a in args if a.startswith("-")]
    objects = [a for a in args if not a.startswith("-") and a not in ("blob", "tree", "commit", "tag")]
    if flags and all(f in ("-t", "-s", "-e", "--batch-check", "--batch-all-objects", "--unordered", "--buffer",
                           "-Z") for f in flags):
        return None
    if objects and all(f in ("-p", "--textconv", "--filters") for f in flags) and all(
            ":" in o and not o.startswith(":/") for o in objects):
        return None
    return ask_read("git cat-file prints objects by id, which cannot be matched to a path")


def _content_free(call: GitCall, dp: DeniedPaths) -> GitRead | None:
    sub, args = call.sub, call.args
    if sub == "stash" and args[:1] == ["show"]:
        if any(_patch_option(a) for a in args[1:]) or not any(a.split("=", 1)[0] in _SUMMARY for a in args[1:]):
            return ask_read("git stash show can print the stashed changes (stash.showPatch)")
        return None
    if sub == "stash" and args[:1] == ["list"]:
        return _log_like(call, dp)
    letters = _HUNK_LETTERS.get(sub, "")
    before, _ = _split(args)
    for w in before:
        if letters and w.startswith(_HUNK_LONG) and not (sub == "commit" and w.startswith("--edit")):
            return ask_read(f"git {sub} {w} shows changes hunk by hunk")
        if letters and w.startswith("-") and not w.startswith("--"):
            for c in w[1:]:
                if c in letters:
                    return ask_read(f"git {sub} {w} shows changes hunk by hunk")
                if c in _VALUED_LETTERS:
                    break
    if ran := next((w for w in before if w.startswith(_RUNS) or (sub == "rebase" and w.startswith("-x"))), None):
        return ask_read(f"git {sub} {ran.split('=', 1)[0]} runs a command, which could print a denied file")
    if raw := next((w for w in args if "%(raw" in w or "%(contents" in w), None):
        return ask_read(f"git {sub} {raw[:40]} can print the object a ref points at (a blob too)")
    if sub == "worktree" and _positionals(args)[:1] == ["add"]:
        return ask_read("git worktree add checks every committed file out somewhere else")
    if sub in ("blame", "annotate"):
        hit = _named(args, call, dp)
        return _deny(call, hit) if hit else None
    words = [w for k, w in enumerate(args) if not (k and args[k - 1] in ("-m", "--message"))]
    if hit := _named(words, call, dp):
        return ask_read(f"git {sub} names {hit}, which a Read deny rule covers")
    return None


def _log_like(call: GitCall, dp: DeniedPaths) -> GitRead | None:
    before, _ = _split(call.args)
    _, specs = _revs_and_specs(call)
    if hit := _named(specs, call, dp):
        return _deny(call, hit)              # even `--stat` / `--numstat` tell about its contents
    if not any(_patch_option(w) for w in before):
        return None
    return _content_unless_restricted(call, dp, specs, "with patches, -L or a pickaxe prints file contents")


def _diff(call: GitCall, dp: DeniedPaths) -> GitRead | None:
    from codeloop.permissions.git_paths import tracked_denied

    before, _ = _split(call.args)
    if "--no-index" in before:
        hit = _named(_positionals(call.args), call, dp)
        return _deny(call, hit) if hit else None
    revs, specs = _revs_and_specs(call)
    if hit := _named(specs, call, dp):
        return _deny(call, hit)
    if any(w.split("=", 1)[0] in _SUMMARY for w in before) and not any(_patch_option(w) for w in before):
        return None
    cached = any(w in ("--cached", "--staged") or w.startswith("--merge-base") for w in before)
    if revs or specs or not call.trusted:
        return _content_unless_restricted(call, dp, specs, "against a revision prints committed contents"
                                          if revs else "prints tracked files' contents")
    for base in call.bases:
        if why := tracked_denied(base, dp, head=cached):
            return ask_read(f"git diff{' --cached' if cached else ''} would show it: {why}")
    return None


def _show(call: GitCall, dp: DeniedPaths) -> GitRead | None:
    before, after = _split(call.args)
    if hit := _named(after, call, dp):
        return _deny(call, hit)
    revs = _positionals(before)
    commits_only = all(re.fullmatch(_COMMIT_ONLY, r) for r in revs)
    if commits_only and any(w.split("=", 1)[0] in _SUMMARY for w in before) and \
            not any(_patch_option(w) for w in before):
        return None
    if commits_only and after:
        return _content_unless_restricted(call, dp, after, "prints the commit's changes")
    return ask_read("git show can print any file in git's history (a commit's changes, a tree, a blob)")


def _grep(call: GitCall, dp: DeniedPaths) -> GitRead | None:
    before, after = _split(call.args)
    words, pattern_given, k = [], False, 0
    while k < len(before):
        w = before[k]
        if w in ("-O", "--open-files-in-pager") or w.startswith(("-O", "--open-files-in-pager=")):
            return ask_read("git grep -O opens the files in a program")
        if w in _GREP_VALUED:
            pattern_given |= w in ("-e", "-f")
            if w == "-f" and k + 1 < len(before) and (hit := _named([before[k + 1]], call, dp)):
                return _deny(call, hit)
            k += 2
            continue
        pattern_given |= w.startswith(("-e", "--regexp", "-f", "--file"))
        if not w.startswith("-"):
            words.append(w)
        k += 1
    if hit := _named([w for w in before if w.startswith(("-f", "--file="))], call, dp):
        return _deny(call, hit)
    positional = words if pattern_given else words[1:]
    revs = [w for w in positional if ".." in w or not _exists(w, call.bases)]
    specs = [w for w in positional if w not in revs] + after
    if "--no-index" in before or not (revs or "--cached" in before):
        hit = _named(specs, call, dp)
        return _deny(call, hit) if hit else None
    return _content_unless_restricted(call, dp, specs, "in a revision or the index searches committed contents")
