"""Permission rules in Claude Code's `settings.json` syntax: parsing and matching.

Owns: `parse_rule` (`Tool`, `Tool(spec)`, `mcp__server__tool`, `mcp__server__*`), the
`RuleSet` a settings hierarchy produces, and the pure decision for one tool call —
`evaluate` → deny, then ask, then allow, else passthrough (the permission mode decides).
Bash specifiers are matched per simple command of the split command line (`bash.py`);
Read/Edit specifiers are gitignore-style paths (`paths.py`); WebFetch takes `domain:host`.

Security stance: deny rules are matched generously (every form of every part, wrappers and
launchers looked through); allow rules are matched strictly, and a Bash command that does not
parse cleanly is never auto-allowed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from codeloop.permissions import bash as sh
from codeloop.permissions.modes import EDIT_TOOLS, READ_TOOLS
from codeloop.permissions.paths import path_forms, path_matches


class RuleError(ValueError):
    """A rule string that cannot be parsed; the caller reports it and ignores the rule."""


class RuleBehavior(str, Enum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class DecisionBehavior(str, Enum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"
    PASSTHROUGH = "passthrough"   # no rule decided: the permission mode / tool opinion does


_PATH_KEYS = ("file_path", "notebook_path", "path")
# (patterns, compiled by `re`'s cache when a rule is first parsed)
_TOOL_NAME = r"[A-Za-z_][A-Za-z0-9_\-]*"
_MCP_SERVER_WILDCARD = r"(mcp__[A-Za-z0-9_\-]+?)__\*"


@dataclass(frozen=True)
class Rule:
    """A permission rule: a tool name, an optional specifier and its origin."""
    tool: str
    specifier: str | None = None
    origin: str = "cli"   # settings file path the rule came from, or "cli"

    def __str__(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"


@dataclass(frozen=True)
class Decision:
    """The result of matching rules: the behavior, why, and the rule that matched."""
    behavior: DecisionBehavior
    reason: str = ""
    matched_rule: Rule | None = None
    consented: frozenset[int] = frozenset()   # Bash: the parts an allow rule matched (`consent.py`)


def parse_rule(text: str, origin: str = "cli") -> Rule:
    s = text.strip()
    if not s:
        raise RuleError("empty permission rule")
    spec: str | None = None
    if "(" in s or ")" in s:
        head, paren, rest = s.partition("(")
        if not paren or not rest.endswith(")"):
            raise RuleError(f"unbalanced parentheses in permission rule {text!r}")
        spec = rest[:-1].strip()
        s = head.strip()
        if not spec:
            raise RuleError(f"empty specifier in {text!r}: write {s!r} to mean every use")
    m = re.fullmatch(_MCP_SERVER_WILDCARD, s) if s.endswith("__*") else None   # (it can match no other)
    if m:
        s = m.group(1)            # `mcp__server__*` is the whole server, like `mcp__server`
    if not s or not re.fullmatch(_TOOL_NAME, s):
        raise RuleError(f"invalid tool name in permission rule {text!r}")
    from codeloop.tools.registry import canonical_name

    return Rule(canonical_name(s), spec, origin)  # `Task(...)` is a rule about Agent


@dataclass
class RuleSet:
    """The allow, ask and deny rules."""
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)

    def of(self, behavior: RuleBehavior) -> list[Rule]:
        return {RuleBehavior.ALLOW: self.allow, RuleBehavior.ASK: self.ask,
                RuleBehavior.DENY: self.deny}[behavior]

    def add(self, behavior: RuleBehavior, text: str, origin: str = "cli") -> Rule:
        rule = parse_rule(text, origin)
        self.of(behavior).append(rule)
        return rule

    @classmethod
    def from_strings(cls, *, allow: Iterable[str] = (), ask: Iterable[str] = (),
                     deny: Iterable[str] = (), origin: str = "cli") -> tuple[RuleSet, list[RuleError]]:
        """Parse a settings `permissions` block; bad rules are skipped and returned."""
        rs, errors = cls(), []
        for behavior, texts in ((RuleBehavior.ALLOW, allow), (RuleBehavior.ASK, ask),
                                (RuleBehavior.DENY, deny)):
            for t in texts:
                try:
                    rs.add(behavior, t, origin)
                except RuleError as e:
                    errors.append(e)
        return rs, errors

    def extend(self, other: RuleSet) -> RuleSet:
        return RuleSet(self.allow + other.allow, self.ask + other.ask, self.deny + other.deny)


# -- Bash -------------------------------------------------------------------------------------
def _squash(text: str) -> str:
    return " ".join(text.split())


def bash_pattern_matches(spec: str, command: str) -> bool:
    """Claude Code Bash specifier semantics against one (space-normalised) command text.

    `cmd:*` — legacy prefix, on a word boundary; `*` — wildcard anywhere, where ` *` also
    matches nothing (`ls *` matches `ls` but not `lsof`); otherwise exact.
    """
    spec, command = _squash(spec), _squash(command)
    if spec.endswith(":*") and "*" not in spec[:-2]:
        prefix = spec[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" not in spec:
        return command == spec
    out, i = [], 0
    while i < len(spec):
        if spec.startswith("\\*", i):
            out.append(re.escape("*"))
            i += 2
        elif spec.startswith(" *", i):
            out.append("(?: .*)?")
            i += 2
        elif spec[i] == "*":
            out.append(".*")
            i += 1
        else:
            out.append(re.escape(spec[i]))
            i += 1
    return re.fullmatch("".join(out), command, re.DOTALL) is not None


def _named(argv: list[str]) -> list[str]:
    """The forms of one argv: as written and with its program reduced to a basename."""
    if not argv:
        return []
    forms = [" ".join(argv), " ".join([sh.command_name(argv[0])] + argv[1:])]
    if sh.command_name(argv[0]) == "git":        # `git -C x push` is still `git push`
        rest, i = argv[1:], 0
        while i < len(rest) and rest[i].startswith("-"):
            i += 2 if rest[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
        forms.append(" ".join(["git"] + rest[i:]))
    return forms


def _deny_forms(part: sh.SimpleCommand) -> list[str]:
    u = sh.unwrap(part.argv)
    forms = [part.raw, *_named(part.argv), *_named(u.argv),
             " ".join(part.raw_words[u.offset:])]
    for inner in sh.inner_commands(part):
        forms += _named(inner) + _named(sh.strip_wrappers(inner))
    return [f for f in forms if f]


# An allow rule for `rm` also covers `/bin/rm`, but never `./rm` or `/tmp/rm`: a program the
# model could have written itself is not the program the user allowed.
_SYSTEM_BIN_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/",
                    "/opt/homebrew/bin/")


def _allow_forms(part: sh.SimpleCommand) -> list[str]:
    u = sh.unwrap(part.argv)
    forms = [" ".join(u.argv), " ".join(part.raw_words[u.offset:])]
    prog = u.argv[0] if u.argv else ""
    if os.path.dirname(prog) + "/" in _SYSTEM_BIN_DIRS:
        forms.append(" ".join([sh.command_name(prog)] + u.argv[1:]))
    return forms


def _first_bash_match(rules: list[Rule], forms: list[str]) -> Rule | None:
    for rule in rules:
        if rule.tool != "Bash":
            continue
        if rule.specifier is None or any(bash_pattern_matches(rule.specifier, f) for f in forms):
            return rule
    return None


def _names_launcher(rule: Rule, launcher: str) -> bool:
    words = (rule.specifier or "").split()
    return bool(words) and words[0].removesuffix(":*") == launcher


# Programs that run another program named in their arguments (beyond the wrappers bash.py strips),
# or run code from a string or stdin.
_HIDING = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "eval", "exec", "source", ".",
                     "alias", "xargs", "parallel", "ionice", "taskset", "flock", "strace", "ltrace", "chrt",
                     "numactl", "unbuffer", "script", "busybox", "sudo", "su", "doas", "setsid", "runuser",
                     "chroot", "unshare", "nsenter", "watch", "expect", "env", "command", "builtin"})


def _could_hide(split: sh.SplitResult) -> str | None:
    if not split.clean:
        return "an unparsable command"
    for part in split.parts:
        if not part.argv:
            continue
        u = sh.unwrap(part.argv)
        if u.opaque or not u.argv:
            return f"the wrapper in {part.raw!r}"
        if u.offset in part.dynamic or any(c in u.argv[0] for c in "*?[]{}$`"):
            return f"the computed command word in {part.raw!r}"
        if sh.command_name(u.argv[0]) in _HIDING or sh.launcher_name(part.argv):
            return f"{sh.command_name(u.argv[0])!r}"
    return None


def bash_decision(command: str, rules: RuleSet, *, cwd: str | os.PathLike[str], repo_programs_ok: bool = False,
                  roots: Iterable[str] = (), rules_only: bool = False) -> Decision:
    """`repo_programs_ok`: git subcommands that run repository-configured programs count as
    read-only (the sandbox contains them, or no configuration names one: `git_programs.py`).
    `roots`: the working folders (default: cwd) an allowed command may write in."""
    from codeloop.permissions.consent import rules_concern
    from codeloop.permissions.readonly import has_expansion_trick
    from codeloop.permissions.shell_writes import write_targets

    cwd = os.fspath(cwd)
    split = sh.split_command(command)
    deny_forms = [command.strip()] + [f for p in split.parts for f in _deny_forms(p)]
    if rule := _first_bash_match(rules.deny, deny_forms):
        return Decision(DecisionBehavior.DENY, f"Bash command matches deny rule {rule}", rule)
    writes = write_targets(split, cwd)
    for w in writes:       # every write is an Edit: Edit deny rules and protected paths cover it
        if w.path and (d := path_decision("Edit", w.path, rules, cwd=cwd)).behavior is DecisionBehavior.DENY:
            return Decision(DecisionBehavior.DENY, f"{w.how} writes {w.path}: {d.reason}", d.matched_rule)
    if rule := _first_bash_match(rules.ask, deny_forms):
        return Decision(DecisionBehavior.ASK, f"Bash command matches ask rule {rule}", rule)
    bare = next((r for r in rules.allow if r.tool == "Bash" and r.specifier is None), None)
    if bare:
        # With deny rules in force, "allow every command" must not become a way around them: a
        # command that could hide what it runs (dynamic or globbed command words, shells,
        # wrappers the matcher does not see through) is asked about instead.
        if any(r.tool == "Bash" and r.specifier for r in rules.deny) and (why := _could_hide(split)):
            return Decision(DecisionBehavior.ASK, f"Bash is allowed, but {why} could hide a denied command")
        return Decision(DecisionBehavior.ALLOW, "Bash is allowed for every command", bare)
    if not split.clean or not split.parts:
        why = split.parse_error or ("command substitution" if split.has_command_substitution
                                    else "heredoc" if split.has_heredoc else "empty command")
        return Decision(DecisionBehavior.PASSTHROUGH, f"not auto-allowed: {why}")
    if has_expansion_trick(command):
        return Decision(DecisionBehavior.PASSTHROUGH,
                        "not auto-allowed: an expansion (${x@P}, ${!x}, ${a[i]}, ${x:n}) "
                        "can run code hidden in a variable")
    matched: Rule | None = None
    consented: set[int] = set()
    for index, part in enumerate(split.parts):
        if bad := sh.dangerous_env(part.env) + sh.dangerous_env(sh.unwrap(part.argv).env):
            return Decision(DecisionBehavior.PASSTHROUGH, f"sets {', '.join(bad)}")
        if not part.argv:
            continue
        launcher = sh.launcher_name(part.argv)
        candidates = rules.allow
        if launcher:
            candidates = [r for r in rules.allow if _names_launcher(r, launcher)]
        elif not rules_only and sh.is_read_only_command(part, repo_programs_ok=repo_programs_ok):
            continue   # (`rules_only`: a rule must name every part, read-only ones too)
        rule = _first_bash_match(candidates, _allow_forms(part))
        if rule is None:
            why = f"runs other commands via {launcher}" if launcher else "no allow rule matches"
            return Decision(DecisionBehavior.PASSTHROUGH, f"{why}: {part.raw}")
        matched = matched or rule
        consented.add(index)
    if why := rules_concern(writes, consented, roots or [cwd]):
        return Decision(DecisionBehavior.PASSTHROUGH, why)
    return Decision(DecisionBehavior.ALLOW, "every part is allowed or read-only", matched, frozenset(consented))


# -- paths ------------------------------------------------------------------------------------
def _path_rule_applies(rule: Rule, tool_name: str, behavior: RuleBehavior) -> bool:
    if rule.tool == tool_name:
        return True
    if tool_name in EDIT_TOOLS:
        return rule.tool == "Edit"
    if tool_name in READ_TOOLS:
        # Edit permission implies read permission, never the other way round
        return rule.tool == "Read" or (behavior is RuleBehavior.ALLOW and rule.tool == "Edit")
    return False


def path_decision(tool_name: str, path: str, rules: RuleSet, *, cwd: str | os.PathLike[str]) -> Decision:
    cwd = os.fspath(cwd)
    try:
        lexical, real = path_forms(path, cwd)
    except ValueError as e:
        return Decision(DecisionBehavior.DENY, f"invalid path: {e}")
    for behavior, verdict in ((RuleBehavior.DENY, DecisionBehavior.DENY),
                              (RuleBehavior.ASK, DecisionBehavior.ASK)):
        for rule in rules.of(behavior):
            if not _path_rule_applies(rule, tool_name, behavior):
                continue
            if rule.specifier is None or any(
                    path_matches(rule.specifier, p, origin=rule.origin, cwd=cwd, restrictive=True)
                    for p in (lexical, real)):
                return Decision(verdict, f"{tool_name} on {path} matches {behavior.value} rule {rule}", rule)
    for rule in rules.allow:
        if _path_rule_applies(rule, tool_name, RuleBehavior.ALLOW) and (
                rule.specifier is None or
                path_matches(rule.specifier, real, origin=rule.origin, cwd=cwd, restrictive=False)):
            return Decision(DecisionBehavior.ALLOW, f"{tool_name} on {path} allowed by {rule}", rule)
    return Decision(DecisionBehavior.PASSTHROUGH)


# -- WebFetch, MCP, everything else -----------------------------------------------------------
def url_host(url: str) -> str | None:
    """The canonical host of an http(s) URL (`hosts.canonical_host`: `2130706433`, `0x7f.1` and
    `[::ffff:127.0.0.1]` are all 127.0.0.1), or None when WebFetch would refuse the URL anyway."""
    from codeloop.permissions.hosts import parse_web_url

    try:
        return parse_web_url(url).host
    except ValueError:
        return None


def webfetch_matches(spec: str, url: str) -> bool:
    """`domain:example.com` covers the host and its subdomains; an address (however the rule or the
    URL spells it) covers only itself."""
    from codeloop.permissions.hosts import canonical_host, is_ip

    if not spec.startswith("domain:"):
        return False
    domain = canonical_host(spec[len("domain:"):].strip().lower().removeprefix("*."))
    host = url_host(url)
    if not domain or host is None:
        return False
    return host == domain or (not is_ip(domain) and host.endswith("." + domain))


def mcp_matches(rule: Rule, tool_name: str) -> bool:
    if not rule.tool.startswith("mcp__") or rule.specifier is not None:
        return False
    if rule.tool == tool_name:
        return True
    return rule.tool.count("__") == 1 and tool_name.startswith(rule.tool + "__")


def _simple_match(rule: Rule, tool_name: str, tool_input: dict[str, Any]) -> bool:
    if tool_name.startswith("mcp__"):
        return mcp_matches(rule, tool_name)
    if rule.tool != tool_name:
        return False
    if rule.specifier is None:
        return True
    if tool_name == "WebFetch":
        return webfetch_matches(rule.specifier, str(tool_input.get("url", "")))
    if tool_name == "Skill":  # `Skill(name)`: that one skill (the SDK's `skills` option writes these)
        return rule.specifier == str(tool_input.get("skill", "")).strip().lstrip("/")
    return False   # specifiers of other tools are not understood: they never match


def evaluate(tool_name: str, tool_input: dict[str, Any], rules: RuleSet, *, cwd: str | os.PathLike[str],
             repo_programs_ok: bool = False, roots: Iterable[str] = (), rules_only: bool = False) -> Decision:
    """Rule decision for one tool call: deny beats ask beats allow; else passthrough."""
    if tool_name == "Bash":
        return bash_decision(str(tool_input.get("command", "")), rules, cwd=cwd, repo_programs_ok=repo_programs_ok,
                             roots=roots, rules_only=rules_only)
    if tool_name in EDIT_TOOLS or tool_name in READ_TOOLS:
        path = next((tool_input[k] for k in _PATH_KEYS if tool_input.get(k)), None)
        return path_decision(tool_name, str(path or "."), rules, cwd=cwd)
    for behavior, verdict in ((RuleBehavior.DENY, DecisionBehavior.DENY),
                              (RuleBehavior.ASK, DecisionBehavior.ASK),
                              (RuleBehavior.ALLOW, DecisionBehavior.ALLOW)):
        for rule in rules.of(behavior):
            if _simple_match(rule, tool_name, tool_input):
                return Decision(verdict, f"{tool_name} matches {behavior.value} rule {rule}", rule)
    return Decision(DecisionBehavior.PASSTHROUGH)
