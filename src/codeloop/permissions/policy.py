"""The permission decision for one tool call: rules, mode and the tool's own opinion combined.

Order (deny anywhere beats allow anywhere): protected paths and deny rules → tools whose prompt
is the feature (AskUserQuestion, ExitPlanMode: `requires_user_interaction`) ask in every mode → ask rules →
writes into guarded folders (`.git`, `.claude`, `.vscode`, `.idea`, `.husky`: `guarded.py`) ask in every mode → the
mode (bypass allows, plan refuses writes) → allow rules and the built-in read-only set → the
tool's opinion → acceptEdits for edits inside the working directories → dontAsk denies →
otherwise ask. Protected paths (settings files, the transcript directory, `.git/config` and
hooks) are deny rules no mode can lift, bypassPermissions included. Bash has its own gate
(`bash_gate.py`: the sandbox, every write as an Edit, Read deny for shell reads); a Bash call
with `dangerouslyDisableSandbox` runs without the user only under an allow rule naming it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.permissions.modes import (EDIT_TOOLS, EDITS_ALLOWED_MODES, FILE_READERS, READ_TOOLS,  # noqa: F401
                                        SESSION_TOOLS,
                                        SHELL_RC_FILES, _PATH_KEYS, PermissionMode, ask_paths, edit_spec_for,
                                        protected_paths)
from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool

if TYPE_CHECKING:
    from codeloop.permissions.rules import RuleSet


@dataclass
class PermissionPolicy:
    """The permission mode and rules that decide whether a tool call may run."""
    mode: PermissionMode = PermissionMode.DEFAULT
    allow: list[str] = field(default_factory=list)     # CLI --allowedTools
    deny: list[str] = field(default_factory=list)      # CLI --disallowedTools
    ask: list[str] = field(default_factory=list)
    cwd: Path = field(default_factory=Path.cwd)
    # (behavior, rule, origin) from settings files; origins resolve `/x` patterns
    settings_rules: list[tuple[str, str, str]] = field(default_factory=list)
    additional_directories: list[str] = field(default_factory=list)
    bypass_disabled: bool = False
    rule_errors: list[str] = field(default_factory=list)
    # The session's Bash sandbox (codeloop.sandbox.runtime.Sandbox) or None: passed down by the
    # front end, so the decision and the Bash tool consult the same object.
    sandbox: Any = None
    # Auto mode's extra rules (permissions.auto_mode.AutoRules; None: the built-in ones only).
    auto_rules: Any = None
    _rules: RuleSet | None = None

    @property
    def rules(self) -> RuleSet:
        if self._rules is None:
            self._rules = self._build_rules()
        return self._rules

    def _build_rules(self) -> RuleSet:
        from codeloop.permissions.rules import Rule, RuleBehavior, RuleError, RuleSet

        # The built-in protections are made as the rules they are, not written out and parsed back
        # (some 50 parses at the first tool call and again at every rule change).
        rs = RuleSet(deny=[Rule("Edit", edit_spec_for(p), "protected") for p in protected_paths(self.cwd)],
                     ask=[Rule("Edit", edit_spec_for(p), "protected") for p in ask_paths(self.cwd)])
        entries = [(RuleBehavior(str(b.value if hasattr(b, "value") else b)), r, o) for b, r, o in self.settings_rules]
        entries += [(RuleBehavior.ALLOW, r, "cli") for r in self.allow]
        entries += [(RuleBehavior.DENY, r, "cli") for r in self.deny]
        entries += [(RuleBehavior.ASK, r, "cli") for r in self.ask]
        for behavior, text, origin in entries:
            try:
                rs.add(behavior, text, origin=origin)
            except RuleError as exc:
                self.rule_errors.append(f"ignored permission rule {text!r} from {origin}: {exc}")
        return rs

    def set_mode(self, mode: PermissionMode) -> None:
        if mode is PermissionMode.BYPASS and self.bypass_disabled:
            raise ValueError("bypassPermissions mode is disabled by managed settings")
        self.mode = mode

    def allow_rules(self, rules: list[str]) -> list[str]:
        """Add allow rules for the rest of the session (or until withdrawn); the ones that were new."""
        new = [r for r in dict.fromkeys(rules) if r not in self.allow]
        if new:
            self.allow.extend(new)
            self._rules = None  # rebuilt from the lists on next use
        return new

    def withdraw_rules(self, rules: list[str]) -> None:
        """Take back allow rules added with `allow_rules` (a custom command's, after its query)."""
        for r in rules:
            if r in self.allow:
                self.allow.remove(r)
        self._rules = None

    def _inside_workdirs(self, raw: dict[str, Any]) -> bool:
        path = next((raw[k] for k in _PATH_KEYS if raw.get(k)), None)
        return True if path is None else self.inside_workdirs(str(path))

    def _outside_sandbox(self, raw: dict[str, Any], decision: PermissionDecision) -> PermissionDecision:
        """A Bash call that asked to leave the sandbox: only an allow rule covering the command (or
        bypass mode) runs it without the user — not the read-only set, not acceptEdits — and the
        question (or print mode's refusal) says that it runs outside the sandbox."""
        from codeloop.permissions.guarded import OUTSIDE_SANDBOX
        from codeloop.permissions.rules import DecisionBehavior, evaluate

        if decision.behavior is PermissionBehavior.DENY or self.mode is PermissionMode.BYPASS:
            return decision
        verdict = evaluate("Bash", raw, self.rules, cwd=str(self.cwd), rules_only=True,   # not the read-only set
                           roots=[str(self.cwd), *self.additional_directories])
        if decision.behavior is PermissionBehavior.ALLOW and verdict.behavior is DecisionBehavior.ALLOW:
            return decision
        detail = decision.message if decision.behavior is PermissionBehavior.ASK else ""
        outside = self.ask_or_deny("Bash", f"{OUTSIDE_SANDBOX}. {detail or ''}".strip())
        outside.human = True    # a person decides to leave the sandbox, never auto mode's classifier
        return outside

    def _guarded(self, name: str, raw: dict[str, Any]) -> str | None:
        from codeloop.permissions.guarded import guarded_folder, guarded_reason

        path = next((raw[k] for k in _PATH_KEYS if raw.get(k)), None)
        folder = guarded_folder(str(path), str(self.cwd), bypass=self.mode is PermissionMode.BYPASS) if path else None
        return guarded_reason(name, str(path), folder) if folder else None

    def inside_workdirs(self, path: str) -> bool:
        target = os.path.realpath(os.path.join(str(self.cwd), os.path.expanduser(str(path))))
        roots = [os.path.realpath(str(self.cwd))] + [os.path.realpath(d) for d in self.additional_directories]
        return any(target == r or target.startswith(r.rstrip(os.sep) + os.sep) for r in roots)

    def sandbox_use(self, command: str, *, disable: bool = False) -> tuple[str, str, bool]:
        """(use, reason, sandboxed?) for a Bash command: see `Sandbox.use_for`."""
        if self.sandbox is None or not self.sandbox.enabled:
            return "unsandboxed", "", False
        use, why = self.sandbox.use_for(command, disable=disable)
        return use.value, why, use.value == "sandboxed"

    def rule_denial(self, name: str, verdict: Any) -> PermissionDecision:
        protected = verdict.matched_rule is not None and verdict.matched_rule.origin == "protected"
        why = ("it would modify codeloop's own settings or session records, which tools may never write"
               if protected else f"it matches the deny rule {verdict.matched_rule}")
        return PermissionDecision(PermissionBehavior.DENY, f"Permission to use {name} has been denied: {why}.")

    def decide(self, tool: Tool, inp: Any, tool_opinion: PermissionDecision,
               raw_input: dict[str, Any] | None = None) -> PermissionDecision:
        from codeloop.permissions.rules import DecisionBehavior, evaluate

        name, raw = tool.name, dict(raw_input or {})
        if name == "Bash":
            from codeloop.permissions.bash_gate import decide_bash
            decision = decide_bash(self, tool, inp, tool_opinion, raw)
            from codeloop.permissions.guarded import wants_outside
            if wants_outside(inp, raw) and self.sandbox is not None and self.sandbox.enabled:
                return self._outside_sandbox(raw, decision)
            return decision
        verdict = evaluate(name, raw, self.rules, cwd=str(self.cwd))
        if verdict.behavior is DecisionBehavior.DENY:
            return self.rule_denial(name, verdict)
        if tool_opinion.behavior is PermissionBehavior.DENY:
            return tool_opinion
        if getattr(tool, "requires_user_interaction", False):  # AskUserQuestion, ExitPlanMode: the prompt is the point
            decision = self.ask_or_deny(name, tool_opinion.message or f"{name} needs the user.")
            decision.human = True
            return decision
        if verdict.behavior is DecisionBehavior.ASK and self.mode is not PermissionMode.BYPASS:
            return PermissionDecision(PermissionBehavior.ASK, f"{name} matches the ask rule {verdict.matched_rule}.",
                                      human=True)
        if name in EDIT_TOOLS and self.mode is not PermissionMode.PLAN and (guarded := self._guarded(name, raw)):
            decision = self.ask_or_deny(name, guarded + ".")   # no allow rule nor mode approves it (Claude Code's rule)
            decision.human = True     # nor auto mode's classifier
            return decision
        session_only = name in SESSION_TOOLS and tool_opinion.behavior is PermissionBehavior.ALLOW
        if self.mode is PermissionMode.BYPASS or session_only:
            return PermissionDecision(PermissionBehavior.ALLOW)
        read_only = tool.is_read_only(inp)
        if self.mode is PermissionMode.PLAN and not read_only:
            return PermissionDecision(PermissionBehavior.DENY,
                                      f"{name} is not available in plan mode: only read-only tools may run.")
        if verdict.behavior is DecisionBehavior.ALLOW:
            return PermissionDecision(PermissionBehavior.ALLOW)
        if name in READ_TOOLS and not self._inside_workdirs(raw):
            return self.ask_or_deny(name, f"{name} of a path outside the working directories needs permission.")
        if tool_opinion.behavior is PermissionBehavior.ALLOW:
            return tool_opinion
        if self.mode in EDITS_ALLOWED_MODES and name in EDIT_TOOLS and self._inside_workdirs(raw):
            return PermissionDecision(PermissionBehavior.ALLOW)
        return self.ask_or_deny(name, f"{name} requires permission.")

    def guard_path(self, tool_name: str, path: Path) -> None:
        """Deny rules once more, at the moment of I/O: closes the window in which a path that
        passed the permission check is swapped for a symlink into a denied place."""
        from codeloop.permissions.rules import DecisionBehavior, evaluate
        from codeloop.tools.base import ToolError

        verdict = evaluate(tool_name, {"file_path": str(path)}, self.rules, cwd=str(self.cwd))
        if verdict.behavior is DecisionBehavior.DENY:
            raise ToolError(f"Permission to use {tool_name} on {path} has been denied: it now resolves to a "
                            f"place matching the deny rule {verdict.matched_rule}.")

    def denied_inodes(self, tool_name: str) -> frozenset[tuple[int, int]] | None:
        """(st_dev, st_ino) of the files a deny rule for `tool_name` names: a hard link to one of
        them is refused at I/O time. None when there are too many to list (fail closed)."""
        from codeloop.permissions.paths import inodes_named
        family = "Edit" if tool_name in EDIT_TOOLS else "Read" if tool_name in READ_TOOLS else tool_name
        specs = [(r.specifier, r.origin) for r in self.rules.deny if r.specifier and r.tool in (tool_name, family)]
        if not specs:
            return frozenset()
        return inodes_named(specs, str(self.cwd), [str(self.cwd), *self.additional_directories])

    def read_deny_specs(self) -> list[tuple[str, str]]:
        """(specifier, origin) of every Read deny rule: what the sandbox masks."""
        return [(r.specifier, r.origin) for r in self.rules.deny if r.tool == "Read" and r.specifier]

    def hidden_specs(self) -> list[tuple[str, str]]:
        """(specifier, origin) of every path reads must not reach: Read deny rules and, when the
        sandbox is on, its `filesystem.denyRead`."""
        specs = self.read_deny_specs()
        if self.sandbox is not None and self.sandbox.enabled:
            specs += [(s, "cli") for s in self.sandbox.settings.deny_read]
        return specs

    def git_reads(self, split: Any) -> Any:
        """Why this command line may print a hidden file from git's objects (`git_reads.GitRead`),
        or None; that module is imported only when some path is hidden (most sessions hide none)."""
        if not self.hidden_specs():
            return None
        from codeloop.permissions.git_reads import git_read_concern

        return git_read_concern(self, split)

    def read_filter(self) -> Callable[[Path], bool] | None:
        """A `path → denied?` check for search tools, or None when no deny rule targets reads."""
        if not any(r.tool == "Read" and r.specifier for r in self.rules.deny):
            return None
        from codeloop.permissions.rules import DecisionBehavior, evaluate

        def denied(path: Path) -> bool:
            verdict = evaluate("Read", {"file_path": str(path)}, self.rules, cwd=str(self.cwd))
            return verdict.behavior is DecisionBehavior.DENY
        return denied

    def ask_or_deny(self, name: str, why: str) -> PermissionDecision:
        if self.mode is PermissionMode.DONT_ASK:
            return PermissionDecision(PermissionBehavior.DENY,
                                      f"Permission to use {name} was not granted (dontAsk mode).")
        return PermissionDecision(PermissionBehavior.ASK, why)


def denial_message(tool_name: str, decision: PermissionDecision, *, interactive: bool) -> str:
    if decision.message and decision.behavior is PermissionBehavior.DENY:
        return decision.message
    if interactive:
        return f"The user doesn't want to proceed with this tool use. The {tool_name} tool use was rejected."
    why = f" ({decision.message})" if decision.message else ""
    return (f"Claude requested permissions to use {tool_name}, but you haven't granted it yet{why}. "
            f"codeloop runs non-interactively: allow it with --allowedTools {tool_name} "
            f"or choose a --permission-mode.")


def denial_record(tool_name: str, tool_use_id: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"tool_name": tool_name, "tool_use_id": tool_use_id, "tool_input": tool_input}
