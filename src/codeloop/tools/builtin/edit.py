"""The Edit tool: exact string replacement in a file the model has read.

Owns the matching rules (unique unless replace_all, CRLF-tolerant matching that keeps the
file's own line endings, UTF-8 with or without BOM), the closest text offered when old_string
is not found, the lines of each match when it is not unique, the refusal of an edit that
breaks a valid .json file, leaves a .py block's opening line with no body or parts a Python or
YAML block's opening line (`def f(x):`) from the lines indented under it, and the snippet shown
after an edit.
Freshness checks come from the Write tool's module, the checked no-follow open and the
atomic replacement from `fileio.WriteTarget`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from codeloop.tools.base import LazyModel, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.fileio import WriteTarget, checked_paths
from codeloop.tools.builtin.read import looks_binary, missing_file_error, number_lines, record, split_lines
from codeloop.tools.builtin.write import ensure_fresh_read, new_file_mode, unified_diff

BOM = b"\xef\xbb\xbf"
SNIPPET_CONTEXT = 4
MAX_EDIT_BYTES = 256 * 1024 * 1024  # an edit holds the file (and its edited copy) in memory
# "Did you mean" for a string not found: only in files small enough to compare line by line
MAX_HINT_LINES, MAX_HINT_SPAN, HINT_MIN_RATIO = 5_000, 20, 0.6
MAX_CHECK_CHARS = 8 * 1024 * 1024   # the .json and .py checks parse texts up to this size
MAX_MATCH_LINES = 10  # the lines of a non-unique old_string listed in the error

DESCRIPTION = """\
Performs exact string replacements in files.

Usage:
- You must use your Read tool at least once in the conversation before editing. This tool will \
error if you attempt an edit without reading the file, or if the file changed on disk since.
- When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) \
as it appears AFTER the line number prefix. The line number prefix format is: spaces + line \
number + tab. Everything after that tab is the actual file content to match. Never include any \
part of the line number prefix in the old_string or new_string.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly \
required.
- The edit will FAIL if old_string is not unique in the file. Either provide a larger string with \
more surrounding context to make it unique or use replace_all to change every instance of \
old_string.
- Use replace_all for replacing and renaming strings across the file, for instance renaming a \
variable.
- An empty old_string on a file that does not exist creates it with new_string as its content.
- Only use emojis if the user explicitly requests it. Avoid adding emojis to files unless asked."""


def _to_crlf(s: str) -> str:
    return s.replace("\r\n", "\n").replace("\n", "\r\n")


def apply_edit(text: str, old: str, new: str, replace_all: bool) -> tuple[str, int, str, str]:
    """Returns (new text, replacements, old and new as matched) or raises ToolError."""
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old:
        # The model copies Read output, which shows no CR; match in the file's own line endings
        # (rather than normalising the whole file) so mixed-ending files keep their bytes.
        old, new = _to_crlf(old), _to_crlf(new)
        count = text.count(old)
    if count == 0:
        raise ToolError(f"String to replace not found in file.\nString: {old}{closest_hint(text, old)}")
    if count > 1 and not replace_all:
        raise ToolError(
            f"Found {count} matches of the string to replace, but replace_all is false. To replace "
            "all occurrences, set replace_all to true. To replace only one occurrence, please "
            f"provide more context to uniquely identify the instance.\nString: {old}{match_lines(text, old)}"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return updated, count if replace_all else 1, old, new


def match_lines(text: str, old: str) -> str:
    """Where each match starts, with its line as Read shows it: a model told only "found 3"
    (small ones especially) resends the same old_string; seeing the lines, it can pick the one
    it meant and copy enough of it, or see that it wants every one (replace_all)."""
    starts, at, line, counted = [], text.find(old), 1, 0
    while at != -1:   # newlines counted from the previous match on: linear in the file, however many matches
        line += text.count("\n", counted, at)
        counted = at
        starts.append(line)
        at = text.find(old, at + max(len(old), 1))
    lines = split_lines(text)
    shown = sorted(set(starts))[:MAX_MATCH_LINES]
    more = len(set(starts)) - len(shown)
    listing = "\n".join(number_lines([lines[n - 1]], n) for n in shown if n <= len(lines))
    return (f"\nThe matches are on these lines:\n{listing}" + (f"\n(and {more} more lines)" if more > 0 else "")
            if listing else "")


def closest_hint(text: str, old: str) -> str:
    """The file's text most like `old` (same number of lines), as a JSON string the model can copy:
    models often drop quotes or change spacing in old_string, and "not found" alone leaves them
    retrying the same wrong string. Empty when nothing is close, or the file is too big to scan."""
    import difflib
    import json

    target = old.strip()
    lines = text.split("\n")
    k = target.count("\n") + 1
    if not target or len(lines) > MAX_HINT_LINES or k > MAX_HINT_SPAN:
        return ""
    best, best_ratio, at = "", HINT_MIN_RATIO, 0
    for i in range(max(1, len(lines) - k + 1)):
        candidate = "\n".join(lines[i:i + k]).strip()
        if not candidate:
            continue
        sm = difflib.SequenceMatcher(None, target, candidate, autojunk=False)
        if sm.real_quick_ratio() > best_ratio and sm.quick_ratio() > best_ratio and sm.ratio() > best_ratio:
            best, best_ratio, at = candidate, sm.ratio(), i + 1
    if not best:
        return ""
    return (f"\nThe closest text in the file (line {at}), as a JSON string to copy into old_string: "
            f"{json.dumps(best, ensure_ascii=False)}")


def keeps_json_valid(path: Path, before: str, after: str) -> None:
    """Refuse an edit that turns a valid .json file into invalid JSON (a dropped comma or quote):
    the file stays as it was and the model is told where the edit broke it."""
    if path.suffix.lower() != ".json" or len(after) > MAX_CHECK_CHARS:
        return
    import json

    try:
        json.loads(before)
    except ValueError:
        return   # it was not valid JSON before (comments, a template): not ours to judge
    try:
        json.loads(after)
    except ValueError as exc:
        raise ToolError(f"Edit not applied: {path.name} would no longer be valid JSON ({exc}). "
                        "Keep the quotes and commas of the original text in new_string.") from None


def keeps_python_blocks(path: Path, before: str, after: str) -> None:
    """Refuse an edit that leaves a block's opening line in a .py file with no body (`def f(x):`
    followed by nothing indented), when the file compiled before: the file stays as it was and
    the model is told where. Only that error: other syntax errors may be a step of a larger
    change. Compiled only, never run. (Asked to add a function, a small model wrote its `def`
    line alone after the last function and answered that it was added.)"""
    if path.suffix.lower() != ".py" or len(after) > MAX_CHECK_CHARS:
        return
    try:
        compile(after, str(path), "exec", dont_inherit=True)
        return   # the usual case: one compile, the edited text's
    except SyntaxError as exc:
        if "expected an indented block" not in str(exc.msg):
            return
        error = exc
    except ValueError:
        return
    try:
        compile(before, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return   # it did not compile before: not ours to judge
    raise ToolError(f"Edit not applied: in {path.name}, line {error.lineno}: {error.msg}. Give each new block "
                    "(a def, class, if, for …) its indented body in new_string.")


def _indent(line: str) -> int:
    return len(line.expandtabs()) - len(line.expandtabs().lstrip())


# Files whose indentation is their structure: a line after a block's opening line takes the block
# over. (Not prose: a Markdown "Steps:" line may well get a sentence before its indented list.)
INDENTED_SUFFIXES = (".py", ".pyi", ".pyw", ".yaml", ".yml")


def keeps_blocks_whole(path: Path, text: str, old: str, new: str, at: int) -> None:
    """Refuse an edit of a Python or YAML file whose old_string ends with a line that opens an
    indented block (`def f(x):`, `for …:`, a YAML key: it ends with a colon and the next lines
    are indented deeper) when new_string keeps that line but puts a less indented line after it:
    the block's lines would then belong to that line (asked to add a function after another,
    models anchor on its `def` line and split it, the old body becoming the new function's).
    Changing the opening line itself, or adding lines inside the block, is not refused."""
    if path.suffix.lower() not in INDENTED_SUFFIXES:
        return
    end = at + len(old)
    if not old.strip() or not (old.endswith("\n") or end == len(text) or text[end] in "\r\n"):
        return
    old_lines = old.replace("\r", "").rstrip("\n").split("\n")
    head = old_lines[-1]
    if not head.strip() or not head.rstrip().endswith(":"):
        return
    after = text[end:].replace("\r", "").split("\n")
    if not old.endswith("\n"):
        after = after[1:]
    body = [i for i, line in enumerate(after) if line.strip()]
    if not body or _indent(after[body[0]]) <= _indent(head):
        return
    deeper = _indent(after[body[0]])
    kept = [line for line in new.replace("\r", "").split("\n") if line.strip()]
    if head.strip() not in (line.strip() for line in kept):
        return
    parent = next((line for line in reversed(kept) if _indent(line) < deeper), head)
    if parent.strip() == head.strip():
        return
    first = text.count("\n", 0, at) + len(old_lines)   # the opening line's number
    last = first + max(i + 1 for i in body if all(_indent(after[j]) >= deeper for j in body if j <= i))
    block = f"line {last} is" if last == first + 1 else f"lines {first + 1}-{last} are"
    whole = json.dumps("\n".join([head, *after[:last - first]]), ensure_ascii=False)
    raise ToolError(f"Edit not applied: line {first}, `{head.strip()}`, opens a block ({block} indented under "
                    f"it); new_string keeps that line but puts `{parent.strip()}` after it, so those lines would "
                    f"belong to `{parent.strip()}`. To add something after the block, make old_string the whole "
                    f"block (lines {first}-{last}), as a JSON string: {whole}, and new_string that block followed "
                    "by the new text.")


def edit_snippet(updated: str, new: str, offset: int) -> str:
    """cat -n view of the lines around the first replacement, so the model sees the result."""
    first = updated.count("\n", 0, offset) + 1
    last = first + new.count("\n")
    lines = split_lines(updated)
    start = max(first - SNIPPET_CONTEXT, 1)
    end = min(last + SNIPPET_CONTEXT, len(lines))
    return number_lines(lines[start - 1 : end], start)


class EditTool(Tool):
    name: ClassVar[str] = "Edit"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[Any] = LazyModel("codeloop.tools.builtin.edit_input", "EditInput")

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        path, real = checked_paths(ctx, inp.file_path, "Edit")
        # An edit is short and touches only a regular file; it is let finish rather than abandoned.
        return await asyncio.to_thread(self._edit, path, real, inp, ctx)

    def _edit(self, path: Path, real: str, inp: Any, ctx: ToolContext) -> ToolResult:
        if inp.old_string == inp.new_string:
            raise ToolError(
                "No changes to make: old_string and new_string are exactly the same."
            )
        target = WriteTarget(ctx, "Edit", path, real)
        try:
            if target.existing is None:
                if inp.old_string != "":
                    raise missing_file_error(path, ctx)
                return self._create(target, path, inp.new_string, ctx)
            return self._replace(target, path, inp, ctx)
        finally:
            target.close()

    def _replace(self, target: WriteTarget, path: Path, inp: Any, ctx: ToolContext) -> ToolResult:
        assert target.existing is not None
        if target.existing.st.st_size > MAX_EDIT_BYTES:
            raise ToolError(f"Cannot edit {path}: it is larger than {MAX_EDIT_BYTES // 2**20} MB; "
                            "use Bash (e.g. sed) for a file this size.")
        ensure_fresh_read(path, ctx, target.existing.st, target.read_existing)
        raw = target.read_existing()
        if looks_binary(raw):
            raise ToolError(f"Cannot edit {path}: it appears to be a binary file.")
        has_bom = raw.startswith(BOM)
        try:
            text = raw[len(BOM) if has_bom else 0 :].decode("utf-8")
        except UnicodeDecodeError as e:
            raise ToolError(f"Cannot edit {path}: it is not valid UTF-8 text.") from e

        if inp.old_string == "":
            if text.strip():
                raise ToolError(
                    "Cannot create new file - file already exists. Use a non-empty old_string "
                    "to edit it, or Write to replace it."
                )
            updated, replacements, new_matched = inp.new_string, 1, inp.new_string
            first_at = 0
        else:
            updated, replacements, old_matched, new_matched = apply_edit(
                text, inp.old_string, inp.new_string, inp.replace_all
            )
            first_at = text.index(old_matched)
        if inp.old_string:
            keeps_blocks_whole(path, text, old_matched, new_matched, first_at)
        keeps_json_valid(path, text, updated)
        keeps_python_blocks(path, text, updated)

        data = (BOM if has_bom else b"") + updated.encode("utf-8")
        new_st = target.replace(data, new_file_mode(target.existing.st))
        ctx.read_files[str(path)] = record(new_st, hashlib.sha256(data).hexdigest(), partial=False)

        if inp.replace_all and replacements > 1:
            text_out = (
                f"The file {path} has been updated. All {replacements} occurrences of the "
                "old_string were successfully replaced with the new_string."
            )
        else:
            text_out = (
                f"The file {path} has been updated. Here's the result of running `cat -n` on a "
                f"snippet of the edited file:\n{edit_snippet(updated, new_matched, first_at)}"
            )
        return ToolResult(
            text_out,
            data={
                "filePath": str(path),
                "oldString": inp.old_string,
                "newString": inp.new_string,
                "replaceAll": inp.replace_all,
                "replacements": replacements,
                "structuredPatch": unified_diff(text, updated, path),
            },
        )

    def _create(self, target: WriteTarget, path: Path, content: str, ctx: ToolContext) -> ToolResult:
        data = content.encode("utf-8")
        new_st = target.replace(data, new_file_mode(None))
        ctx.read_files[str(path)] = record(new_st, hashlib.sha256(data).hexdigest(), partial=False)
        return ToolResult(
            f"File created successfully at: {path}",
            data={
                "filePath": str(path),
                "oldString": "",
                "newString": content,
                "replaceAll": False,
                "replacements": 1,
                "structuredPatch": unified_diff("", content, path),
            },
        )
