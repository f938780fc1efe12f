"""The `sandbox` block of the merged settings: what the Bash sandbox should do.

Owns `SandboxSettings` (Claude Code's keys) and `sandbox_settings(merged)`, which reads them
from the merged settings dict. Keys, all optional:

    enabled                    false  run Bash commands inside bubblewrap (`--sandbox` flag too;
                                      the interactive session defaults to true where bwrap
                                      works, and an explicit false turns that off)
    autoAllowBashIfSandboxed   true   sandboxed commands run without a prompt (deny rules hold)
    excludedCommands           []     Bash patterns (`docker *`) that run outside the sandbox,
                                      under the ordinary permission flow
    allowUnsandboxedCommands   true   a Bash call with `dangerouslyDisableSandbox` may run outside
                                      the sandbox (it asks unless an allow rule names it);
                                      false refuses such calls
    failIfUnavailable          true   enabled but bwrap missing or broken: Bash refuses. Only an
                                      explicit `false` lets commands fall back to running
                                      unsandboxed (then with ordinary prompts). Claude Code's
                                      default is false; codeloop fails closed.
    network.allowedDomains     []     hosts reachable through the sandbox's filtering proxy
                                      (`*.example.com` covers subdomains); empty: no network
    network.allowAllUnixSockets false  true: commands may create Unix sockets and so connect to
                                      any socket file they can see (the seccomp filter is off)
    network.allowUnixSockets   []     socket paths to allow: read, but on Linux seccomp cannot
                                      filter by path, so (as in Claude Code) they stay blocked
                                      unless allowAllUnixSockets is true; a warning says so
    filesystem.allowWrite      []     more writable paths (beside the working directories)
    filesystem.denyWrite       []     paths kept read-only inside writable roots
    filesystem.denyRead        []     paths masked (beside Read deny rules)

A key with the wrong type is reported and replaced by its *safer* value (fail closed), never
by the permissive default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SANDBOX_KEY = "sandbox"


@dataclass(frozen=True)
class SandboxSettings:
    """The sandbox section of the settings: on/off, exclusions, domains and write paths."""
    enabled: bool = False
    auto_allow: bool = True
    excluded_commands: tuple[str, ...] = ()
    allow_unsandboxed: bool = True
    fail_if_unavailable: bool = True
    allowed_domains: tuple[str, ...] = ()
    allow_unix_sockets: tuple[str, ...] = ()   # macOS-only in Claude Code: reported, not applied
    allow_all_unix_sockets: bool = False
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()       # credential locations the user lets sandboxed commands read
    errors: tuple[str, ...] = field(default=(), compare=False)


# key → (field name, the safer value used when the type is wrong)
_BOOLS = {"enabled": ("enabled", True), "autoAllowBashIfSandboxed": ("auto_allow", False),
          "allowUnsandboxedCommands": ("allow_unsandboxed", False),
          "failIfUnavailable": ("fail_if_unavailable", True)}
# A malformed list is ignored (reported): for the widening keys that is the safe side; Read deny
# rules still mask what `filesystem.denyRead` would have.
_LISTS = {"excludedCommands": "excluded_commands"}
_NETWORK_LISTS = {"allowedDomains": "allowed_domains", "allowUnixSockets": "allow_unix_sockets"}
_NETWORK_BOOLS = {"allowAllUnixSockets": ("allow_all_unix_sockets", False)}
_FS_LISTS = {"allowWrite": "allow_write", "denyWrite": "deny_write", "denyRead": "deny_read",
             "allowRead": "allow_read"}


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) and x.strip() for x in value)


def sandbox_settings(merged: dict[str, Any], *, force_enable: bool = False) -> SandboxSettings:
    """The sandbox settings of a merged settings dict; `force_enable` is the `--sandbox` flag."""
    block = merged.get(SANDBOX_KEY)
    errors: list[str] = []
    values: dict[str, Any] = {}
    if block is not None and not isinstance(block, dict):
        errors.append(f"'{SANDBOX_KEY}' must be an object; the sandbox is enabled with its safest settings")
        block = {"enabled": True, "autoAllowBashIfSandboxed": False}
    block = block or {}
    for key, (name, safe) in _BOOLS.items():
        if key in block:
            if isinstance(block[key], bool):
                values[name] = block[key]
            else:
                errors.append(f"'{SANDBOX_KEY}.{key}' must be true or false; using {str(safe).lower()}")
                values[name] = safe
    for key, name in _LISTS.items():
        if key in block:
            if _str_list(block[key]):
                values[name] = tuple(block[key])
            else:
                errors.append(f"'{SANDBOX_KEY}.{key}' must be a list of strings; ignored")
    for sub, keys in (("network", _NETWORK_LISTS), ("filesystem", _FS_LISTS)):
        part = block.get(sub)
        if part is None:
            continue
        if not isinstance(part, dict):
            errors.append(f"'{SANDBOX_KEY}.{sub}' must be an object; ignored")
            if sub == "filesystem":
                values["enabled"] = True   # a deny list we cannot read: do not run without a sandbox
            continue
        for key, name in keys.items():
            if key not in part:
                continue
            if _str_list(part[key]):
                values[name] = tuple(x.strip() for x in part[key])
            else:
                errors.append(f"'{SANDBOX_KEY}.{sub}.{key}' must be a list of strings; ignored")
        for key, (name, safe) in (_NETWORK_BOOLS if sub == "network" else {}).items():
            if key in part:
                if isinstance(part[key], bool):
                    values[name] = part[key]
                else:
                    errors.append(f"'{SANDBOX_KEY}.{sub}.{key}' must be true or false; using {str(safe).lower()}")
                    values[name] = safe
    if values.get("allow_unix_sockets") and not values.get("allow_all_unix_sockets"):
        errors.append(f"'{SANDBOX_KEY}.network.allowUnixSockets' is not applied on Linux (seccomp cannot "
                      f"filter a socket by path): those sockets stay blocked; set allowAllUnixSockets to "
                      f"true to allow every Unix socket")
    if force_enable:
        values["enabled"] = True
    return SandboxSettings(**values, errors=tuple(errors))
