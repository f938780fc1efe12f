"""Tool lists as Claude Code's flags take them (`--allowedTools "Read,Edit" Bash`).

Shared by the main command line and `codeloop batch` (its task lines and defaults), so neither
imports the other.
"""

from __future__ import annotations


def tool_list(values: list[str] | None) -> list[str] | None:
    """`--allowedTools "Read,Edit" Bash` → ["Read", "Edit", "Bash"]; commas inside (…) are kept."""
    if values is None:
        return None
    out: list[str] = []
    for value in values:
        depth, cur = 0, ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (ch == "," or ch.isspace()):
                if cur.strip():
                    out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        if cur.strip():
            out.append(cur.strip())
    return out
