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

This module reads files only; it never writes and never asks about trust (see `trust.py`); what a
file may hold (types, the untrusted allowlist) is settings_validate.py's.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from codeloop.config.settings_read import SettingsProblem, _parse_json, _read_file  # noqa: F401
from codeloop.config.settings_validate import (UNTRUSTED_HINT, DefaultMode, _hook_event_problem,  # noqa: F401
                                               untrusted_view, validate)
from codeloop.config.paths import config_dir
from codeloop.config.permission_behavior import PermissionBehavior

DEFAULT_MANAGED_SETTINGS = "/etc/codeloop/managed-settings.json"
MANAGED_SETTINGS_ENV = "CODELOOP_MANAGED_SETTINGS"
CLI_SETTINGS_LABEL = "--settings"
CLI_OVERRIDES_LABEL = "<command line flags>"


class SettingsScope(str, Enum):
    MANAGED = "managed"
    CLI = "cli"
    PROJECT_LOCAL = "projectLocal"
    PROJECT = "project"
    USER = "user"


PROJECT_SCOPES = frozenset({SettingsScope.PROJECT, SettingsScope.PROJECT_LOCAL})

@dataclass(frozen=True)
class SettingsSource:
    """One source that was read. `data` is what it contributes: validated and trust-filtered."""
    path: str
    scope: SettingsScope
    data: dict[str, Any]


@dataclass
class LoadedSettings:
    """The settings hierarchy merged, where each part came from, and what was refused or broken."""
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


def _real(path: Path) -> str | None:
    try:
        return os.path.realpath(path)
    except OSError:
        return None


# -- reading and validating -------------------------------------------------------------------------

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
    # each path resolved once (a resolution is a stat per folder on the way)
    user_real = [_real(u) for u in user_paths]
    for path, scope in project_settings_paths(cwd):
        # Started in ~: ~/.claude/settings.json is then the user's file, not an untrusted project's.
        if (real := _real(path)) is not None and real in user_real:
            continue
        raw.append((str(path), scope, read(path)))
    seen_user: list[str] = []
    for path, real in zip(user_paths, user_real):
        if real is not None and real in seen_user:
            continue
        if real is not None:
            seen_user.append(real)
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
