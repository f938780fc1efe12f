"""Help for mistyped command lines: "did you mean" for flags, tool names and model names.

Owns the checks main runs after parsing (unknown tool names in --allowedTools/--disallowedTools/
--tools, unknown model names) and the closest-flag hint for argparse's "unrecognized arguments".
Each problem is one line; nothing here imports the tools or providers at module import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A tool rule as Claude Code writes it: `Read`, `Bash(git:*)`, `mcp__server__tool`, `WebFetch(domain:x)`.
_RULE = r"^([A-Za-z_][A-Za-z0-9_-]*)(\(.*\))?$"   # compiled on first use (re.S)
EXTRA_TOOL_NAMES = ("Task", "Agent", "BashOutput", "KillShell", "KillBash", "LS", "MultiEdit", "NotebookRead",
                    "SlashCommand", "ListMcpResources", "ReadMcpResource")


def closest(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    if word.lower() in lowered:
        return lowered[word.lower()]
    import difflib   # only once a word is unknown

    found = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[found[0]] if found else None


def unknown_flag_hint(message: str, option_strings: Iterable[str]) -> str:
    """argparse's `unrecognized arguments: --verbos x` → the same plus `(did you mean --verbose?)`."""
    m = re.match(r"unrecognized arguments: (.*)", message)
    if not m:
        return message
    flags = [a for a in m.group(1).split() if a.startswith("--")]
    opts = [o for o in option_strings if o.startswith("--")]
    for flag in flags:
        best = closest(flag.split("=", 1)[0], opts)
        if best:
            return f"unknown option '{flag}' (did you mean {best}?)"
    if flags:
        return f"unknown option '{flags[0]}'"
    return f"unexpected argument(s): {m.group(1)} (quote a prompt that has spaces; one prompt at most)"


def known_tool_names() -> list[str]:
    from codeloop.tools.registry import BUILTINS

    return [n for n, _, _ in BUILTINS] + list(EXTRA_TOOL_NAMES)


def looks_like_rule(value: str) -> bool:
    return bool(re.match(_RULE, value.strip(), re.S))


def tool_warnings(flag: str, rules: list[str]) -> list[str]:
    """One warning line per rule naming a tool codeloop does not have (MCP tools are not checked)."""
    names = known_tool_names()
    out = []
    for rule in rules:
        m = re.match(_RULE, rule.strip(), re.S)
        if not m:
            out.append(f"{flag}: {rule!r} is not a tool rule (expected Name or Name(pattern))")
            continue
        name = m.group(1)
        if name.startswith("mcp__") or name in names:
            continue
        best = closest(name, names)
        hint = f" (did you mean {best}?)" if best else f" (known: {', '.join(names[:8])}, …)"
        out.append(f"{flag}: unknown tool {name!r}{hint}")
    return out
