"""What a settings file may hold: the type checks of the known keys, and what an untrusted one keeps.

`validate` drops (and reports) known keys of the wrong type, keeping unknown keys; wrong-shaped
`permissions` are also recorded as broken, because dropping them would silently drop deny rules.
`untrusted_view` is the part of an untrusted project's file that may still act: an allowlist of
harmless keys and restrictions. settings.py reads the files and merges them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from codeloop.config.settings_read import SettingsProblem, _json_type, _locate, _shape

UNTRUSTED_HINT = ("this folder is not trusted (trust it in an interactive codeloop or Claude Code session, "
                  "pass --trust, or set CODELOOP_TRUST=1)")


class DefaultMode(str, Enum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    DONT_ASK = "dontAsk"
    BYPASS = "bypassPermissions"
    AUTO = "auto"
    MANUAL = "manual"      # Claude Code's other name for default


# What an untrusted project file may still contribute. An allowlist, not a denylist: a key added
# later that runs commands (statusLine, credential helpers, …) is then blocked by default.
# Restrictions are always safe to apply, and the model name runs nothing; nor does the output
# style's name (a style is prompt text, which a project supplies untrusted anyway, like CLAUDE.md).
_UNTRUSTED_TOP_LEVEL = frozenset({"$schema", "model", "outputStyle"})
_UNTRUSTED_PERMISSIONS = frozenset({"deny", "ask", "disableBypassPermissionsMode"})


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
