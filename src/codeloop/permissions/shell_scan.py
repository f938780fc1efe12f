"""The shell scanner: split a bash command line into the simple commands it would run.

Owns the tokenizer/parser behind `split_command`. It understands quoting (`'…'`, `"…"`,
`$'…'`, backslashes), comments, line continuations, the list/pipeline operators, subshells and
`{ …; }` groups, command and process substitution (recursing into them so inner commands are
reported as parts too), redirections and heredocs. Words themselves (quotes, `$…` forms,
backticks) are read by `shell_lex.WordReader`, which this scanner extends. It is not a full bash parser: whatever it
does not understand sets `parse_error` (or `unbalanced`), and the permission layer never
auto-allows such a command. Public names are re-exported by `permissions.bash`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from codeloop.permissions.shell_lex import META as _META
from codeloop.permissions.shell_lex import WordReader
from codeloop.permissions.shell_words import (Redirect, SimpleCommand, SplitResult,
                                              decode_ansi_c)

# Longest first, so `>>` wins over `>` and `<<<` over `<<`.
_REDIRECT_OPS = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "<", ">")
# Reserved words that may prefix a command; skipping them keeps `then rm x` checkable as `rm x`.
_PREFIX_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!"})
_ASSIGNMENT = r"[A-Za-z_][A-Za-z0-9_]*\+?="   # (compiled when a word with "=" first starts a command)
_MAX_DEPTH = 40  # nesting beyond this is refused rather than risk a recursion blow-up

__all__ = ["split_command", "Redirect", "SimpleCommand", "SplitResult", "decode_ansi_c"]


def split_command(cmd: str) -> SplitResult:
    sc = _Scanner(cmd, 0)
    sc.parse_list(None)
    sc.finish()
    return sc.result


# functional form: no annotation text for typing to compile (see shell_words.Redirect)
_Heredoc = NamedTuple(  # noqa: UP014 — see above
    "_Heredoc", [("delimiter", str), ("strip_tabs", bool), ("quoted", bool), ("sink", list[str])])


class _Scanner(WordReader):
    def __init__(self, src: str, depth: int, result: SplitResult | None = None):
        self.s, self.n, self.i = src, len(src), 0
        self.depth = depth
        self.result = result if result is not None else SplitResult()
        self.pending: list[_Heredoc] = []

    # -- bookkeeping ------------------------------------------------------------------------
    def error(self, msg: str, *, unbalanced: bool = False) -> None:
        if unbalanced:
            self.result.unbalanced = True
        if self.result.parse_error is None:
            self.result.parse_error = msg

    def finish(self) -> None:
        if self.pending:
            self.error("here-document without its delimiter line", unbalanced=True)

    def skip_blanks(self) -> None:
        while self.i < self.n:
            if self.s[self.i] in " \t":
                self.i += 1
            elif self.s.startswith("\\\n", self.i):   # line continuation
                self.i += 2
            else:
                return

    def sub_scan(self, text: str) -> None:
        """Parse `text` (a backtick body, `sh -c` string…) into the same result."""
        if self.depth >= _MAX_DEPTH:
            self.error("nesting too deep")
            return
        sub = _Scanner(text, self.depth + 1, self.result)
        sub.parse_list(None)
        sub.finish()

    # -- lists ------------------------------------------------------------------------------
    def parse_list(self, close: str | None) -> None:
        if self.depth >= _MAX_DEPTH:
            self.error("nesting too deep", unbalanced=True)
            self.i = self.n
            return
        need_command = False  # after a binary operator another command must follow
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                if close:
                    self.error(f"missing '{close}'", unbalanced=True)
                if need_command:
                    self.error("command expected after operator")
                return
            c = self.s[self.i]
            if close == ")" and c == ")":
                self.i += 1
                return
            if close == "}" and c == "}" and self.peek(1) in _META | {""}:
                self.i += 1
                return
            if c == "#":
                while self.i < self.n and self.s[self.i] != "\n":
                    self.i += 1
                continue
            if c == "\n":
                self.i += 1
                self.read_heredoc_bodies()
                continue
            op = self.separator()
            if op:
                if need_command or (op not in (";", "&") and not self.result.parts):
                    self.error(f"syntax error near '{op}'")
                need_command = op in ("&&", "||", "|", "|&")
                continue
            need_command = False
            if c == ")":
                self.error("unexpected ')'", unbalanced=True)
                self.i += 1
            elif c == "(":
                self.i += 1
                self.result.has_subshell = True
                self.parse_list(")")
            elif c == "{" and self.peek(1) in (" ", "\t", "\n"):
                self.i += 1
                self.result.has_subshell = True
                self.parse_list("}")
            else:
                self.simple_command()

    def separator(self) -> str | None:
        s, i = self.s, self.i
        for op in (";;&", ";;", ";&", "&&", "||", "|&", ";", "|"):
            if s.startswith(op, i):
                self.i += len(op)
                return op
        if s.startswith("&", i) and not s.startswith("&>", i):
            self.i += 1
            return "&"
        return None

    def read_heredoc_bodies(self) -> None:
        while self.pending:
            doc = self.pending.pop(0)
            lines: list[str] = []
            while True:
                if self.i >= self.n:
                    self.error(f"here-document delimited by end of input (wanted {doc.delimiter!r})",
                               unbalanced=True)
                    break
                end = self.s.find("\n", self.i)
                end = self.n if end < 0 else end
                line = self.s[self.i:end]
                self.i = min(end + 1, self.n)
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    break
                lines.append(line)
            body = "\n".join(lines)
            doc.sink.append(body)
            if not doc.quoted:   # an unquoted heredoc still expands $( ) and backticks
                self.scan_expanding_text(body)

    def scan_expanding_text(self, text: str) -> None:
        sub = _Scanner(text, self.depth + 1, self.result)
        junk: list[str] = []
        while sub.i < sub.n:
            c = sub.s[sub.i]
            if c == "\\":
                sub.i += 2
            elif c == "$":
                sub.read_dollar(junk, in_dq=True)
            elif c == "`":
                sub.read_backtick(junk)
            else:
                sub.i += 1

    # -- simple commands --------------------------------------------------------------------
    def simple_command(self) -> None:
        start = self.i
        argv: list[str] = []
        raw_words: list[str] = []
        dynamic: set[int] = set()
        env: dict[str, str] = {}
        redirects: list[Redirect] = []
        heredocs: list[str] = []
        comment_at: int | None = None
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                break
            c = self.s[self.i]
            if c in "<>" and self.peek(1) == "(":
                word, dyn = self.process_substitution()
                argv.append(word)
                raw_words.append(word)
                dynamic.add(len(argv) - 1)
                continue
            if c in "<>" or (c == "&" and self.peek(1) == ">"):
                self.redirect("", redirects, heredocs)
                continue
            if c in _META:
                if c == "(":   # `f() {…}`, `a=(x)`: not something we model; still scan inside
                    self.error("unexpected '('")
                    self.i += 1
                    self.result.has_subshell = True
                    self.parse_list(")")
                break
            if c == "#":   # a comment starts only at a word boundary, which this is
                comment_at = self.i
                while self.i < self.n and self.s[self.i] != "\n":
                    self.i += 1
                break
            word_start = self.i
            value, dyn = self.read_word()
            raw = self.s[word_start:self.i]
            if self.peek() in ("<", ">") and (raw.isdigit() or re.fullmatch(r"\{\w+\}", raw)):
                self.redirect(raw, redirects, heredocs)     # `2>file`, `{fd}>file`
                continue
            if not argv and "=" in raw and re.match(_ASSIGNMENT, raw):
                name, _, val = value.partition("=")
                env[name.rstrip("+")] = val
                continue
            if not argv and not env and raw in _PREFIX_KEYWORDS:
                start = self.i
                continue
            argv.append(value)
            raw_words.append(raw)
            if dyn:
                dynamic.add(len(argv) - 1)
        raw_text = self.s[start:self.i if comment_at is None else comment_at].strip()
        if argv or env or redirects:
            self.result.parts.append(SimpleCommand(argv, raw_text, env, redirects, raw_words,
                                                   frozenset(dynamic), heredocs))

    def process_substitution(self) -> tuple[str, bool]:
        start = self.i
        self.i += 2
        self.result.has_command_substitution = True
        self.parse_list(")")
        return self.s[start:self.i], True

    def redirect(self, fd: str, redirects: list[Redirect], heredocs: list[str]) -> None:
        op = next(o for o in _REDIRECT_OPS if self.s.startswith(o, self.i))
        self.i += len(op)
        self.skip_blanks()
        c = self.peek()
        if c in "<>" and self.peek(1) == "(":
            target, _ = self.process_substitution()
        elif not c or c in _META:
            self.error(f"missing target after '{op}'")
            return
        else:
            word_start = self.i
            target, _ = self.read_word()
            if op in ("<<", "<<-"):
                raw = self.s[word_start:self.i]
                self.result.has_heredoc = True
                quoted = any(q in raw for q in "'\"\\")
                self.pending.append(_Heredoc(target, op == "<<-", quoted, heredocs))
        redirects.append(Redirect(fd + op, target))
