"""The data the shell scanner produces, and bash's `$'…'` decoding.

Owns: `Redirect`, `SimpleCommand`, `SplitResult` (what `split_command` returns) and
`decode_ansi_c`. Kept apart from `shell_scan.py` so the scanner module stays about parsing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
           "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


# A redirect: `op` is the operator with its fd prefix (">", ">>", "2>", "2>&", "&>", "<<<", "<<"),
# `target` the target word after quote removal (for `<<`/`<<-`: the delimiter). The functional
# form on purpose: a class-syntax NamedTuple under `from __future__ import annotations` has typing
# compile each field's annotation text, and a process's first `compile()` builds Python's ~120 AST
# node types (~9 M instructions), on the way of the first Bash call's permission check.
Redirect = NamedTuple("Redirect", [("op", str), ("target", str)])  # noqa: UP014 — see above


@dataclass
class SimpleCommand:
    """One simple command of a shell line: its words, assignments and redirects."""
    argv: list[str]                       # words after quote removal
    raw: str                              # source text of this part, trimmed
    env: dict[str, str] = field(default_factory=dict)   # leading VAR=value assignments
    redirects: list[Redirect] = field(default_factory=list)
    raw_words: list[str] = field(default_factory=list)  # source text of each argv word
    # Indexes of argv words whose runtime value is not what we see: parameter/command
    # expansion or unquoted glob/brace characters (`find *` may expand to `-delete`).
    dynamic: frozenset[int] = frozenset()
    heredocs: list[str] = field(default_factory=list)   # heredoc bodies, in order


@dataclass
class SplitResult:
    """A shell line split into simple commands, with flags for what could not be read."""
    parts: list[SimpleCommand] = field(default_factory=list)
    has_command_substitution: bool = False   # $( ), backticks, <( ), >( ), also $(( ))
    has_heredoc: bool = False
    unbalanced: bool = False
    has_subshell: bool = False                # ( … ) or { …; }
    parse_error: str | None = None

    @property
    def clean(self) -> bool:
        """Parsed fully, with nothing that runs code we cannot see statically."""
        return not (self.has_command_substitution or self.has_heredoc or self.unbalanced
                    or self.parse_error)


def decode_ansi_c(body: str) -> str:
    """Decode the inside of `$'…'` the way bash does (so `$'\\x72m'` is seen as `rm`)."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _ANSI_C:
            out.append(_ANSI_C[e])
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            m = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", body[i:])
            if m:
                out.append(chr(min(int(m.group(), 16), 0x10FFFF)))
                i += m.end()
            else:
                out.append("\\" + e)
        elif e in "01234567":
            m = re.match(r"[0-7]{0,2}", body[i:])
            assert m is not None  # {0,2} matches the empty string too
            out.append(chr(int(e + m.group(), 8) & 0xFF))
            i += m.end()
        elif e == "c" and i < n:
            out.append(chr(ord(body[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)
    return "".join(out)
