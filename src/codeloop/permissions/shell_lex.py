"""The lexical layer of the shell scanner: one word at a time, with its quotes and expansions.

Owns `WordReader`, the base of `shell_scan._Scanner`: `read_word` (quote removal, and whether
the word's runtime value is unknown: parameter/command expansion, unquoted glob or brace
characters), `"…"`, `$'…'`, `$…`/`${…}` and backticks. Command substitutions recurse into the
scanner's grammar (`parse_list`, `sub_scan`), which the subclass provides.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from codeloop.permissions.shell_words import decode_ansi_c

if TYPE_CHECKING:
    from codeloop.permissions.shell_words import SplitResult

# Characters that end an unquoted word (bash metacharacters).
META = frozenset(" \t\n;&|()<>")
_META = META


class WordReader:
    s: str
    n: int
    i: int
    result: SplitResult

    def error(self, msg: str, *, unbalanced: bool = False) -> None:  # pragma: no cover - subclass
        raise NotImplementedError

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < self.n else ""

    def parse_list(self, close: str | None) -> None:  # pragma: no cover - subclass
        raise NotImplementedError

    def sub_scan(self, text: str) -> None:  # pragma: no cover - subclass
        raise NotImplementedError

    def read_word(self) -> tuple[str, bool]:
        val: list[str] = []
        dynamic = False
        s = self.s
        while self.i < self.n:
            c = s[self.i]
            if c in _META:
                break
            if c == "\\":
                if self.i + 1 >= self.n:
                    self.i += 1
                elif s[self.i + 1] == "\n":
                    self.i += 2
                else:
                    val.append(s[self.i + 1])
                    self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    self.error("unterminated single quote", unbalanced=True)
                    val.append(s[self.i + 1:])
                    self.i = self.n
                else:
                    val.append(s[self.i + 1:end])
                    self.i = end + 1
            elif c == '"':
                dynamic |= self.read_dq(val)
            elif c == "$":
                dynamic |= self.read_dollar(val, in_dq=False)
            elif c == "`":
                self.read_backtick(val)
                dynamic = True
            else:
                # glob / brace expansion: the real words are unknown (`[` only with a `]`)
                if c in "*?{" or (c == "[" and "]" in re.split(r"[\s;&|()<>]", s[self.i:], maxsplit=1)[0]):
                    dynamic = True
                val.append(c)
                self.i += 1
        return "".join(val), dynamic

    def read_dq(self, val: list[str]) -> bool:
        """Read `"…"` starting at the opening quote; returns whether it holds expansions."""
        s = self.s
        self.i += 1
        dynamic = False
        while self.i < self.n:
            c = s[self.i]
            if c == '"':
                self.i += 1
                return dynamic
            if c == "\\" and self.i + 1 < self.n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    val.append(s[self.i + 1])
                self.i += 2
            elif c == "$":
                dynamic |= self.read_dollar(val, in_dq=True)
            elif c == "`":
                self.read_backtick(val)
                dynamic = True
            else:
                val.append(c)
                self.i += 1
        self.error("unterminated double quote", unbalanced=True)
        return dynamic

    def read_dollar(self, val: list[str], *, in_dq: bool) -> bool:
        """Read a `$…` form at self.i; returns whether its value is only known at run time."""
        s, start = self.s, self.i
        nxt = self.peek(1)
        if nxt == "'" and not in_dq:
            end = self.i + 2
            while end < self.n and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            if end >= self.n:
                self.error("unterminated $'…' quote", unbalanced=True)
                val.append(decode_ansi_c(s[self.i + 2:]))
                self.i = self.n
            else:
                val.append(decode_ansi_c(s[self.i + 2:end]))
                self.i = end + 1
            return False
        if nxt == '"' and not in_dq:
            self.i += 1
            return self.read_dq(val)
        if nxt == "(":
            # `$(( ))` arithmetic is parsed like a substitution holding a subshell: it can
            # itself contain `$( )`, and over-flagging only ever makes us ask.
            self.result.has_command_substitution = True
            self.i += 2
            self.parse_list(")")
        elif nxt == "{":
            self.i += 2
            self.read_braced_param()
        elif nxt and (nxt.isalnum() or nxt in "_@*#?$!-"):
            self.i += 1
            if nxt.isalpha() or nxt == "_":
                while self.i < self.n and (s[self.i].isalnum() or s[self.i] == "_"):
                    self.i += 1
            else:
                self.i += 1
        else:
            val.append("$")
            self.i += 1
            return False
        val.append(s[start:self.i])
        return True

    def read_braced_param(self) -> None:
        junk: list[str] = []
        while self.i < self.n:
            c = self.s[self.i]
            if c == "}":
                self.i += 1
                return
            if c == "\\":
                self.i += 2
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                self.i = self.n if end < 0 else end + 1
            elif c == '"':
                self.read_dq(junk)
            elif c == "$":
                self.read_dollar(junk, in_dq=True)
            elif c == "`":
                self.read_backtick(junk)
            else:
                self.i += 1
        self.error("unterminated ${…}", unbalanced=True)

    def read_backtick(self, val: list[str]) -> None:
        s, start = self.s, self.i
        self.i += 1
        inner: list[str] = []
        self.result.has_command_substitution = True
        while self.i < self.n:
            c = s[self.i]
            if c == "`":
                self.i += 1
                val.append(s[start:self.i])
                self.sub_scan("".join(inner))
                return
            if c == "\\" and self.i + 1 < self.n and s[self.i + 1] in "`\\$":
                inner.append(s[self.i + 1])
                self.i += 2
            else:
                inner.append(c)
                self.i += 1
        self.error("unterminated backtick", unbalanced=True)
        val.append(s[start:])
        self.sub_scan("".join(inner))
