"""The settings hierarchy: which files are read, in what order, how they merge, and the trust gate.

Sources, highest precedence first (Claude Code's order, with `.codeloop/` files read just above
their `.claude/` twins so either layout works):

    managed   /etc/codeloop/managed-settings.json  (env CODELOOP_MANAGED_SETTINGS overrides)
    cli       flag-derived overrides, then `--settings FILE|JSON`
    local     <cwd>/.codeloop/settings.local.json, <cwd>/.claude/settings.local.json
    project   <cwd>/.codeloop/settings.json,       <cwd>/.claude/settings.json
    user      <config_dir>/settings.json,          ~/.claude/settings.json

`<project>` is the cwd, not the git root: it is what Claude Code uses and it means the files
that act are the ones next to where the user started codeloop.

Merging: scalars — the highest source wins; lists — concatenated over all sources (highest
first), deduplicated; dicts — merged key by key with the same rules (so `hooks.<Event>` lists
concatenate). Loading never raises: unreadable or malformed files and wrong-typed keys are
reported in `.errors` and skipped. A file that cannot be read or parsed, or whose `permissions`
have the wrong shape, is also recorded in `.broken` (file:line:col and what is wrong): dropping
it would silently drop the deny rules it holds, so the caller must stop (fail closed) unless the
user explicitly chose to go on without that file (`skip`).

This module reads files only; it never writes and never asks about trust (see `trust.py`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.config.settings_read import (SettingsProblem, _json_type, _locate, _parse_json,  # noqa: F401
                                           _read_file, _shape)
from codeloop.config.paths import config_dir
from codeloop.config.permission_behavior import PermissionBehavior

DEFAULT_MANAGED_SETTINGS = "/etc/codeloop/managed-settings.json"
MANAGED_SETTINGS_ENV = "CODELOOP_MANAGED_SETTINGS"
CLI_SETTINGS_LABEL = "--settings"
CLI_OVERRIDES_LABEL = "<command line flags>"
UNTRUSTED_HINT = ("this folder is not trusted (trust it in an interactive codeloop or Claude Code session, "
                  "pass --trust, or set CODELOOP_TRUST=1)")


class SettingsScope(str, Enum):
    MANAGED = "managed"
    CLI = "cli"
    PROJECT_LOCAL = "projectLocal"
    PROJECT = "project"
    USER = "user"


class DefaultMode(str, Enum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    DONT_ASK = "dontAsk"
    BYPASS = "bypassPermissions"
    AUTO = "auto"
    MANUAL = "manual"      # Claude Code's other name for default


PROJECT_SCOPES = frozenset({SettingsScope.PROJECT, SettingsScope.PROJECT_LOCAL})

# What an untrusted project file may still contribute. An allowlist, not a denylist: a key added
# later that runs commands (statusLine, credential helpers, …) is then blocked by default.
# Restrictions are always safe to apply, and the model name runs nothing; nor does the output
# style's name (a style is prompt text, which a project supplies untrusted anyway, like CLAUDE.md).
_UNTRUSTED_TOP_LEVEL = frozenset({"$schema", "model", "outputStyle"})
_UNTRUSTED_PERMISSIONS = frozenset({"deny", "ask", "disableBypassPermissionsMode"})


@dataclass(frozen=True)
class SettingsSource:
    """One source that was read. `data` is what it contributes: validated and trust-filtered."""
    path: str
    scope: SettingsScope
    data: dict[str, Any]


@dataclass
class LoadedSettings:
    merged: dict[str, Any] = field(default_factory=dict)
    sources: list[SettingsSource] = field(default_factory=list)   # highest precedence first
    errors: list[str] = field(default_factory=list)
    ignored_untrusted: list[str] = field(default_factory=list)
    broken: list[SettingsProblem] = field(default_factory=list)   # fail closed on these

    def permission_rules(self) -> list[tuple[PermissionBehavior, str, str]]:
        """(behavior, rule, origin path) for every rule, highest-precedence source first.

        Rules are never overridden, only added: the policy evaluates deny before ask before allow,
        which is what makes a managed deny final.
        """
        seen: set[tuple[str, str]] = set()
        out: list[tuple[PermissionBehavior, str, str]] = []
        for src in self.sources:
            perms = src.data.get("permissions") or {}
            for behavior in (PermissionBehavior.DENY, PermissionBehavior.ASK, PermissionBehavior.ALLOW):
                for rule in perms.get(behavior.value, []):
                    if (behavior.value, rule) not in seen:
                        seen.add((behavior.value, rule))
                        out.append((behavior, rule, src.path))
        return out

    def bypass_disabled(self) -> bool:
        """`disableBypassPermissionsMode: "disable"` in any applied source (managed in practice)."""
        return (self.merged.get("permissions") or {}).get("disableBypassPermissionsMode") == "disable"

    def default_mode(self) -> str | None:
        mode = (self.merged.get("permissions") or {}).get("defaultMode")
        if mode == DefaultMode.BYPASS.value and self.bypass_disabled():
            return None
        return mode

    def auto_mode(self) -> dict[str, list[Any]]:
        """`autoMode` (allow, soft_deny, hard_deny, environment), lists joined over the sources a
        repository cannot write: a project's own file could otherwise exempt itself from review."""
        out: dict[str, list[Any]] = {}
        for src in self.sources:
            block = src.data.get("autoMode")
            if src.scope in PROJECT_SCOPES or not isinstance(block, dict):
                continue
            for key, value in block.items():
                if isinstance(value, list):
                    out.setdefault(key, []).extend(value)
        return out

    def hooks(self) -> dict[str, Any]:
        return dict(self.merged.get("hooks") or {})

    def env(self) -> dict[str, str]:
        return dict(self.merged.get("env") or {})

    def feature_flags(self) -> dict[str, Any]:
        return dict(self.merged.get("featureFlags") or {})

    def mcp_servers(self) -> dict[str, Any]:
        return dict(self.merged.get("mcpServers") or {})

    def api_key_helper(self) -> str | None:
        return self.merged.get("apiKeyHelper")

    def model(self) -> str | None:
        return self.merged.get("model")

    def additional_directories(self) -> list[str]:
        return list((self.merged.get("permissions") or {}).get("additionalDirectories") or [])


# -- where the files are ----------------------------------------------------------------------------

def managed_settings_path() -> Path:
    return Path(os.environ.get(MANAGED_SETTINGS_ENV) or DEFAULT_MANAGED_SETTINGS)


def claude_user_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def project_settings_paths(cwd: Path | str) -> list[tuple[Path, SettingsScope]]:
    """The project files, highest precedence first (also used by `trust.needs_trust`)."""
    root = Path(os.path.abspath(cwd))
    return [(root / ".codeloop" / "settings.local.json", SettingsScope.PROJECT_LOCAL),
            (root / ".claude" / "settings.local.json", SettingsScope.PROJECT_LOCAL),
            (root / ".codeloop" / "settings.json", SettingsScope.PROJECT),
            (root / ".claude" / "settings.json", SettingsScope.PROJECT)]


def user_settings_paths() -> list[Path]:
    return [config_dir() / "settings.json", claude_user_dir() / "settings.json"]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:
        return False


# -- reading and validating -------------------------------------------------------------------------

def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_str_dict(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _hook_event_problem(groups: Any) -> str | None:
    if not isinstance(groups, list):
        return "must be a list of {matcher, hooks} objects"
    for g in groups:
        if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
            return "each entry must be an object with a 'hooks' list"
        if "matcher" in g and not isinstance(g["matcher"], str):
            return "'matcher' must be a string"
        for h in g["hooks"]:
            if (not isinstance(h, dict) or not isinstance(h.get("command"), str)
                    or h.get("type", "command") != "command"):
                return "each hook must be {\"type\": \"command\", \"command\": \"...\"}"
            t = h.get("timeout")
            if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0):
                return "'timeout' must be a positive number of seconds"
    return None


_TOP_LEVEL_CHECKS: dict[str, tuple[Any, str]] = {
    "env": (_is_str_dict, "an object of string values"),
    "model": (lambda v: isinstance(v, str), "a string"),
    "apiKeyHelper": (lambda v: isinstance(v, str), "a string"),
    "featureFlags": (lambda v: isinstance(v, dict), "an object"),
    "mcpServers": (lambda v: isinstance(v, dict), "an object"),
    "enableAllProjectMcpServers": (lambda v: isinstance(v, bool), "true or false"),
    "cleanupPeriodDays": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                          "a non-negative integer"),
    "hooks": (lambda v: isinstance(v, dict), "an object mapping event names to lists"),
    "permissions": (lambda v: isinstance(v, dict), "an object"),
}
_PERMISSION_CHECKS: dict[str, tuple[Any, str]] = {
    "allow": (_is_str_list, "a list of strings"),
    "ask": (_is_str_list, "a list of strings"),
    "deny": (_is_str_list, "a list of strings"),
    "additionalDirectories": (_is_str_list, "a list of strings"),
    "defaultMode": (lambda v: v in {m.value for m in DefaultMode},
                    "one of " + "|".join(m.value for m in DefaultMode)),
    "disableBypassPermissionsMode": (lambda v: v == "disable", '"disable"'),
}


def validate(data: dict[str, Any], label: str, errors: list[str],
             broken: list[SettingsProblem] | None = None, text: str | None = None) -> dict[str, Any]:
    """A copy of `data` without the known keys whose type is wrong (each reported). Unknown keys stay.

    Wrong-shaped `permissions` also go to `broken`: dropping them would drop deny rules."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        check = _TOP_LEVEL_CHECKS.get(key)
        if check and not check[0](value):
            errors.append(f"{label}: '{key}' must be {check[1]}; ignored")
            if key == "permissions" and broken is not None:
                broken.append(SettingsProblem(label, f"'permissions' must be {check[1]}, not a JSON "
                                                     f"{_json_type(value)}", *_locate(text, key)))
            continue
        out[key] = value
    if "permissions" in out:
        perms: dict[str, Any] = {}
        for key, value in out["permissions"].items():
            check = _PERMISSION_CHECKS.get(key)
            if check and not check[0](value):
                errors.append(f"{label}: 'permissions.{key}' must be {check[1]}; ignored")
                if broken is not None:
                    broken.append(SettingsProblem(label, f"'permissions.{key}' must be {check[1]}, got "
                                                         f"{_shape(value)}", *_locate(text, "permissions", key)))
                continue
            perms[key] = value
        out["permissions"] = perms
    if "hooks" in out:
        hooks: dict[str, Any] = {}
        for event, groups in out["hooks"].items():
            problem = _hook_event_problem(groups)
            if problem:
                errors.append(f"{label}: 'hooks.{event}' {problem}; ignored")
                continue
            hooks[event] = groups
        out["hooks"] = hooks
    return out


def untrusted_view(data: dict[str, Any], label: str, ignored: list[str]) -> dict[str, Any]:
    """What an untrusted project file may contribute; every dropped setting is named in `ignored`."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "permissions":
            kept = {k: v for k, v in value.items() if k in _UNTRUSTED_PERMISSIONS}
            for k in value:
                if k not in _UNTRUSTED_PERMISSIONS:
                    ignored.append(f"ignored permissions.{k} from {label}: {UNTRUSTED_HINT}")
            if kept:
                out["permissions"] = kept
        elif key in _UNTRUSTED_TOP_LEVEL:
            out[key] = value
        elif key == "sandbox" and isinstance(value, dict):
            kept = _untrusted_sandbox(value)
            ignored.extend(f"ignored sandbox.{k} from {label}: {UNTRUSTED_HINT}" for k in value if k not in kept)
            fs = value.get("filesystem")
            if "filesystem" in kept and isinstance(fs, dict):
                ignored.extend(f"ignored sandbox.filesystem.{k} from {label}: {UNTRUSTED_HINT}"
                               for k in fs if k not in kept["filesystem"])
            if kept:
                out["sandbox"] = kept
        else:
            ignored.append(f"ignored {key} from {label}: {UNTRUSTED_HINT}")
    return out


def _untrusted_sandbox(block: dict[str, Any]) -> dict[str, Any]:
    """The parts of a `sandbox` block that only tighten: switching it on, refusing to run without
    it, and extra read/write denials. Auto-allow, exclusions, network and write grants relax what
    Bash may do, so an untrusted folder cannot set them."""
    kept: dict[str, Any] = {k: True for k in ("enabled", "failIfUnavailable") if block.get(k) is True}
    fs = block.get("filesystem")
    if isinstance(fs, dict):
        denies = {k: v for k, v in fs.items() if k in ("denyRead", "denyWrite")}
        if denies:
            kept["filesystem"] = denies
    return kept


# -- merging ----------------------------------------------------------------------------------------

def _dedupe_key(v: Any) -> Any:
    try:
        hash(v)
        return (0, v)
    except TypeError:
        return (1, json.dumps(v, sort_keys=True, default=str))


def merge(higher: dict[str, Any], lower: dict[str, Any]) -> dict[str, Any]:
    out = dict(higher)
    for key, lv in lower.items():
        if key not in out:
            out[key] = lv
            continue
        hv = out[key]
        if isinstance(hv, dict) and isinstance(lv, dict):
            out[key] = merge(hv, lv)
        elif isinstance(hv, list) and isinstance(lv, list):
            seen: set[Any] = set()
            combined = []
            for item in [*hv, *lv]:
                k = _dedupe_key(item)
                if k not in seen:
                    seen.add(k)
                    combined.append(item)
            out[key] = combined
        # otherwise the higher source's scalar (or differently-typed value) stands
    return out


# -- loading ----------------------------------------------------------------------------------------

def _cli_settings(value: str, cwd: Path, errors: list[str], broken: list[SettingsProblem],
                  texts: dict[str, str]) -> tuple[str, dict[str, Any] | None]:
    """`--settings` is either a JSON object literal or a path (relative to the cwd)."""
    if value.lstrip().startswith(("{", "[")):
        texts[CLI_SETTINGS_LABEL] = value
        return CLI_SETTINGS_LABEL, _parse_json(value, CLI_SETTINGS_LABEL, errors, broken)
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = cwd / path
    if not path.exists():
        errors.append(f"{CLI_SETTINGS_LABEL}: settings file not found: {path}")
        broken.append(SettingsProblem(str(path), f"settings file not found (given with {CLI_SETTINGS_LABEL})"))
        return str(path), None
    return str(path), _read_file(path, errors, broken, texts)


SOURCE_SCOPES = {"user": SettingsScope.USER, "project": SettingsScope.PROJECT,
                 "local": SettingsScope.PROJECT_LOCAL}


def load_settings(cwd: Path | str, *, cli_settings: str | None = None,
                  cli_overrides: dict[str, Any] | None = None, trusted: bool,
                  sources: set[str] | None = None, skip: frozenset[str] | set[str] = frozenset()) -> LoadedSettings:
    """`sources` (`--setting-sources`: user, project, local) limits which files are read;
    managed settings and the command line always apply. `skip` names broken files the user chose
    to go on without (their labels, as in `.broken`): they are not read at all."""
    cwd = Path(os.path.abspath(cwd))
    allowed = None if sources is None else {SOURCE_SCOPES[x] for x in sources if x in SOURCE_SCOPES}
    result = LoadedSettings()
    raw: list[tuple[str, SettingsScope, dict[str, Any] | None]] = []
    texts: dict[str, str] = {}
    pending: list[SettingsProblem] = []   # problems of files that end up skipped are not reported

    def read(path: Path) -> dict[str, Any] | None:
        return None if str(path) in skip else _read_file(path, result.errors, pending, texts)

    managed = managed_settings_path()
    raw.append((str(managed), SettingsScope.MANAGED, read(managed)))
    if cli_overrides:
        raw.append((CLI_OVERRIDES_LABEL, SettingsScope.CLI, dict(cli_overrides)))
    if cli_settings is not None and cli_settings.strip() and CLI_SETTINGS_LABEL not in skip:
        label, data = _cli_settings(cli_settings, cwd, result.errors, pending, texts)
        raw.append((label, SettingsScope.CLI, data if label not in skip else None))
    user_paths = user_settings_paths()
    for path, scope in project_settings_paths(cwd):
        # Started in ~: ~/.claude/settings.json is then the user's file, not an untrusted project's.
        if any(_same_file(path, u) for u in user_paths):
            continue
        raw.append((str(path), scope, read(path)))
    seen_user: list[Path] = []
    for path in user_paths:
        if any(_same_file(path, s) for s in seen_user):
            continue
        seen_user.append(path)
        raw.append((str(path), SettingsScope.USER, read(path)))

    for label, scope, data in raw:
        excluded = allowed is not None and scope in SOURCE_SCOPES.values() and scope not in allowed
        if not excluded:
            result.broken += [p for p in pending if p.path == label]
        if data is None or excluded:
            continue
        data = validate(data, label, result.errors, result.broken, texts.get(label))
        if scope in PROJECT_SCOPES and not trusted:
            data = untrusted_view(data, label, result.ignored_untrusted)
        result.sources.append(SettingsSource(label, scope, data))
        result.merged = merge(result.merged, data)
    return result
