"""The local profile's call fixes: each call the embedded model writes, made to do what it meant.

Read by `local_profile.steering()` (the provider keeps a fix only when it reveals nothing the
model was not shown: `request_rules.reveals_nothing`). Edit: a replace_all of a bare name kept to
whole words, an old_string that lost its quotes matched with them. Write over an existing file:
one that only re-creates the file writes it as it is, one that drops the whole file for an
addition keeps it. Grep: kept to the kind of file the request names. The Edit and Write fixes
read the named file themselves (a regular file only, opened non-blocking).
"""

from __future__ import annotations

import re
from typing import Any


def whole_word_edit(text: str, old: str, new: str) -> tuple[str, str] | None:
    """(old_string, new_string) for one Edit that replaces the name `old` only where it stands as
    a whole word: the lines from its first such use to its last, as they are and as they become.
    None when there is nothing to narrow (`old` is not a bare name, never stands alone, or no
    longer word contains it) or those lines occur twice in the file.

    Why: the local model must decide replace_all on every Edit (`EXTRA_ARGUMENTS`) and sets it to
    rename a name, but Edit replaces text, not names: `x` made `xs` also turns `xs` into `xss`."""
    if not re.fullmatch(r"\w+", old):
        return None
    word = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)")
    uses = list(word.finditer(text))
    if not uses or len(uses) == text.count(old):
        return None
    start = text.rfind("\n", 0, uses[0].start()) + 1
    end = text.find("\n", uses[-1].end())
    lines = text[start:len(text) if end == -1 else end]
    if text.count(lines) != 1:
        return None
    return lines, word.sub(lambda _m: new, lines)


QUOTES = "\"'`"
MIN_REQUOTED = 3


def requoted_edit(text: str, old: str, new: str) -> tuple[str, str] | None:
    """(old_string, new_string) for an Edit whose old_string is not in the file only because
    quotes were left out of it (`debug: false` for the file's `"debug": false`): the file's own
    text, and that text with the part the model changed (what differs between its old_string
    and new_string) changed. None when old_string is there as written, or its quote-free form is
    not found exactly once. Small models drop quotes when they copy a line, and retry the same
    string after "not found" whatever the error suggests."""
    # only quotes left out: an old_string with quotes the file lacks is the model's own idea
    # (a value it wants quoted), and no guess about it is safe
    if old in text or len(old) < MIN_REQUOTED or any(c in QUOTES for c in old):
        return None
    at = [i for i, c in enumerate(text) if c not in QUOTES]   # each quote-free char's place in text
    plain = "".join(text[i] for i in at)
    pos = plain.find(old)
    if pos == -1 or plain.find(old, pos + 1) != -1:
        return None
    start, end = at[pos], at[pos + len(old) - 1] + 1
    region = text[start:end]

    def place(k: int) -> int:   # where old[k:] starts in region
        return at[pos + k] - start if k < len(old) else len(region)

    p = 0
    while p < min(len(old), len(new)) and old[p] == new[p]:
        p += 1
    q = 0
    while q < min(len(old), len(new)) - p and old[-1 - q] == new[-1 - q]:
        q += 1
    changed = region[:place(p)] + new[p:len(new) - q] + region[place(len(old) - q):]
    return None if changed == region else (region, changed)


MAX_FIXED_FILE = 1_000_000


def _file_text(inp: dict[str, Any]) -> str | None:
    """The named regular file's text (relative to the process's folder, as the CLI runs), or None.
    Opened non-blocking and checked on the open descriptor: a FIFO or device planted under the
    name must never hang the model's turn (Edit itself refuses such files later)."""
    import os
    import stat

    from codeloop.tools.builtin.fileio import READ_FLAGS

    try:
        fd = os.open(str(inp.get("file_path", "")), READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FIXED_FILE:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_FIXED_FILE + 1).decode("utf-8")
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def fix_edit(name: str, inp: dict[str, Any]) -> dict[str, Any]:
    """An Edit made to do what the model meant, reading the file it names (one not found leaves
    the call as it is): a replace_all of a bare name kept to whole words (`whole_word_edit`), an
    old_string that lost its quotes matched with them (`requoted_edit`)."""
    old, new = inp.get("old_string"), inp.get("new_string")
    if name != "Edit" or not isinstance(old, str) or not isinstance(new, str) or not old:
        return inp
    text = _file_text(inp)
    if text is None:
        return inp
    if inp.get("replace_all") is True and (narrowed := whole_word_edit(text, old, new)) is not None:
        return {**inp, "old_string": narrowed[0], "new_string": narrowed[1], "replace_all": False}
    if (requoted := requoted_edit(text, old, new)) is not None:
        return {**inp, "old_string": requoted[0], "new_string": requoted[1]}
    return inp


ADDS = re.compile(r"\b(add|append|insert)\b(?!\.\w)", re.I)   # not a file's name (add.py)
AT_TOP = re.compile(r"\b(top|beginning|start|first line)\b", re.I)


def fix_write(name: str, inp: dict[str, Any], request: str = "") -> dict[str, Any]:
    """A Write over an existing file made to keep the file: one that would only re-create it (its
    text, final newlines aside) writes it as it is (asked to make a file executable, a small model
    first writes it out again and loses the final newline); for a request to add something, one
    that carries none of the file's lines puts them back around the new text (asked to add a
    function, a small model writes the function alone over the file)."""
    content = inp.get("content")
    if name != "Write" or not isinstance(content, str) or not content.strip():
        return inp
    text = _file_text(inp)
    if text is None or text == content or not text.strip():
        return inp
    if text.rstrip("\n") == content.rstrip("\n"):
        return {**inp, "content": text}
    mine = {line.strip() for line in content.splitlines() if line.strip()}
    if not ADDS.search(request) or mine & {line.strip() for line in text.splitlines() if line.strip()}:
        return inp
    gap = "\n\n\n" if str(inp.get("file_path", "")).endswith(".py") else "\n"
    new = content.strip("\n") + "\n"
    return {**inp, "content": new + text if AT_TOP.search(request) else text.rstrip("\n") + gap + new}


# "Which .txt files…", "how many .py files…": one kind of file named
_ONE_KIND = re.compile(r"(?<![\w/])\.([A-Za-z]\w{0,7})\s+(files?|scripts?|modules?)\b")


def fix_grep(name: str, inp: dict[str, Any], request: str = "") -> dict[str, Any]:
    """A Grep with no glob, for a request that names one kind of file, searches that kind only:
    small models list every file that matched ("the files that mention budget are apr.md, …"
    asked about the .txt ones). Narrowing a search shows less, never more."""
    kinds = {m.group(1) for m in _ONE_KIND.finditer(request)}
    if name != "Grep" or len(kinds) != 1 or inp.get("glob") or inp.get("type"):
        return inp
    return {**inp, "glob": f"*.{kinds.pop()}"}


def fix_call(name: str, inp: dict[str, Any], request: str = "") -> dict[str, Any]:
    """Every fix in turn: Read's line numbers out of what Write and Edit write, then the above."""
    from codeloop.providers.constrained import strip_read_numbers

    inp = fix_edit(name, strip_read_numbers(name, inp))
    return fix_grep(name, fix_write(name, inp, request), request)
