"""When a request for a change, or a question answered by measuring, may get its final answer:
the local profile's request rules, read by the constrained provider (`constrained.py`).

Small models declare a change done without making it (a Grep, then "renamed"), or after its
first step, and answer by pasting the tool's report; asked how many or which is largest, they
answer from a listing of names by guessing. `ChangeRules` says how to tell such a request and a
call that serves it; the functions here read the history since the prompt and say what is
still missing (and which arguments this request gives no reason to leave empty). Also owns the
few helpers that find that history (the prompt, the calls).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from codeloop.messages import READ_ATTACHMENT_HEAD
from codeloop.providers.openai_translate import _text_of


def since_prompt(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user" and not has_results(m)), default=0)
    return messages[start:]


def has_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def call_json(block: dict[str, Any]) -> str:
    return json.dumps({"name": block.get("name", ""), "arguments": block.get("input") or {}})


def request_text(content: Any) -> str:
    """The user's own words in a prompt message (the last text block: attachments come first)."""
    if isinstance(content, str):
        text = content
    else:
        texts = [b.get("text") or "" for b in content or [] if b.get("type") == "text"
                 and not (b.get("text") or "").startswith(READ_ATTACHMENT_HEAD)]
        text = texts[-1] if texts else ""
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


# What a tool says when its result shows nothing of what it did (Bash's rm, mv, chmod, sed -i).
NO_OUTPUT = "(no output)"
MAX_CHECK_CALLS = 6
NOT_CHANGED_YET = "Nothing has been changed yet: make the requested change with a tool."
CHANGES_MADE = ("Changes already made for this request (they worked: never make one of them again, and never undo "
                "one): {calls}")


@dataclass(frozen=True)
class ChangeRules:
    """How the local profile tells a request for a change, and a call that makes one. Small
    models declare a change done without making it (a Grep, then "renamed"), or after its first
    step, and answer by pasting the tool's report; these rules hold the final answer back."""
    check_after: tuple[str, ...] = ()   # tools whose report shows a snippet, not the outcome
    request: str = ""                   # regex: the request asks for a change (not a question)
    shell_tool: str = ""                # the tool whose `command` may change files…
    commands: str = ""                  # …when it matches this regex
    measure: str = ""                   # regex: a question answered by counting or comparing files
    shell_only: str = ""                # regex: a request only a command does well (copying a file)
    # (request regex, command regex, the command as the model is told it): a change request that
    # matches is not done until a shell command matching it worked ("…and make it executable")
    needs: tuple[tuple[str, str, str], ...] = ()
    search_tool: str = ""               # the tool that shows each matching line as `path:line:text`…
    search_question: str = ""           # …which a question about files' contents needs (and its tally counts)
    # (tool, argument) whose text may be empty only when the request asks to remove something
    # (`removal`, a regex): see `kept_arguments`
    keep_text: tuple[tuple[str, str], ...] = ()
    removal: str = ""


def failed_ids(since: list[dict[str, Any]]) -> set[str]:
    """The tool_use ids whose results in `since` are errors."""
    return {b.get("tool_use_id") for m in since if has_results(m) for b in m["content"]
            if b.get("type") == "tool_result" and b.get("is_error")}


def tool_calls(since: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in since if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"] if b.get("type") == "tool_use"]


def unchecked_change(messages: list[dict[str, Any]], rules: ChangeRules) -> bool:
    """The newest result is a change nobody has looked at: a call of a `check_after` tool or a
    command that printed nothing. The next reply must then be a tool call: a check (ls, Read,
    running the program) or the rest of the change. After MAX_CHECK_CALLS calls the answer is
    allowed whatever came last."""
    since = since_prompt(messages)
    calls = tool_calls(since)
    if not calls or len(calls) >= MAX_CHECK_CALLS or not has_results(since[-1]):
        return False
    results = [b for b in since[-1]["content"] if b.get("type") == "tool_result"]
    silent = any(_text_of(b.get("content")).strip() in ("", NO_OUTPUT) and not b.get("is_error") for b in results)
    return silent or calls[-1].get("name") in rules.check_after


def kept_arguments(messages: list[dict[str, Any]], rules: ChangeRules) -> tuple[tuple[str, str], ...]:
    """The (tool, argument) pairs whose text must not be empty for this request: all of
    `rules.keep_text` unless the request asks to remove something (`rules.removal`). Asked to
    comment out a line, or to change one, small models write an empty new text and delete it."""
    if not rules.keep_text or (rules.removal and re.search(rules.removal, request_of(messages), re.I)):
        return ()
    return rules.keep_text


def _is_change(call: dict[str, Any], rules: ChangeRules) -> bool:
    return call.get("name") in rules.check_after or bool(
        rules.commands and call.get("name") == rules.shell_tool
        and re.search(rules.commands, str((call.get("input") or {}).get("command", ""))))


def changes_made(messages: list[dict[str, Any]], rules: ChangeRules) -> list[str]:
    """The change calls since the prompt that succeeded, as `Name {input}`. After a change and a
    look, small models make the same change again (a second `sed s/a/ab/` doubles the rename, an
    Edit repeated fails and the answer reports the failure); the results turn lists them."""
    since = since_prompt(messages)
    failed = failed_ids(since)
    return [call_json(c) for c in tool_calls(since) if _is_change(c, rules) and c.get("id") not in failed]


def change_missing(messages: list[dict[str, Any]], rules: ChangeRules) -> bool:
    """The request asks for a change (`rules.request`, and it is not a question) and no call
    since it has made one: a check_after tool, or a shell command matching `rules.commands`,
    that did not fail."""
    if not rules.request or not messages:
        return False
    since = since_prompt(messages)
    if not asks_for_change(request_of(messages), rules):
        return False
    calls = tool_calls(since)
    if len(calls) >= MAX_CHECK_CALLS:
        return False
    failed = failed_ids(since)   # a refused Edit changed nothing: small models answer "added" after one
    return not any(_is_change(c, rules) and c.get("id") not in failed for c in calls)


def request_of(messages: list[dict[str, Any]]) -> str:
    """The user's words in the prompt the newest turns answer."""
    since = since_prompt(messages)
    return request_text(since[0].get("content")) if since else ""


def asks_for_change(request: str, rules: ChangeRules) -> bool:
    return bool(rules.request and re.search(rules.request, request, re.I)) and not request.rstrip().endswith("?")


# with the commands for each kind of count: told only "a command", a small model that had
# searched for the lines it was asked to count ran `wc -l` on the whole file
# and `ls -l` named alone for sizes and permissions: told "ls -l counts sizes" next to grep -c, a
# small model asked which scripts are executable ran `ls -l … | grep -c executable` (it printed 0)
NOT_MEASURED_YET = ("Nothing has been measured yet: run a command that prints the numbers the answer needs "
                    "(grep -c PATTERN FILE counts only the lines that match; wc -l and wc -w count all lines and "
                    "words; ls -l FOLDER, run alone, shows each file's size and permissions).")


def measure_missing(messages: list[dict[str, Any]], rules: ChangeRules) -> bool:
    """The request is a question that counts or compares files (`rules.measure`, and not a
    change) and no shell command since it has printed anything. Small models otherwise answer
    "how many words" or "which is largest" from a Read or a listing of names, by guessing; a
    command (wc, ls -l) prints the numbers. After MAX_CHECK_CALLS calls the answer is allowed."""
    if not rules.measure or not rules.shell_tool or not messages:
        return False
    request = request_of(messages)
    if not re.search(rules.measure, request, re.I) or asks_for_change(request, rules):
        return False
    since = since_prompt(messages)
    calls = tool_calls(since)
    if len(calls) >= MAX_CHECK_CALLS:
        return False
    printed = {b.get("tool_use_id") for m in since if has_results(m) for b in m["content"]
               if b.get("type") == "tool_result" and not b.get("is_error")
               and _text_of(b.get("content")).strip() not in ("", NO_OUTPUT)}
    tallied = {b.get("tool_use_id") for m in since if has_results(m) for b in m["content"]
               if b.get("type") == "tool_result" and not b.get("is_error") and search_tally(_text_of(b.get("content")))}
    counts_by_search = bool(rules.search_tool and rules.search_question
                            and re.search(rules.search_question, request, re.I))
    return not any((c.get("name") == rules.shell_tool and c.get("id") in printed)
                   or (counts_by_search and c.get("name") == rules.search_tool and c.get("id") in tallied)
                   for c in calls)


NOT_SEARCHED_YET = "Nothing has been searched yet: search the files' contents ({tool}) for the word the question names."


def search_missing(messages: list[dict[str, Any]], rules: ChangeRules) -> bool:
    """The request asks which files or lines mention, contain or use something (`rules.search_question`,
    and not a change) and no search of contents has been made: a `search_tool` call, or a shell
    command that runs grep. Small models otherwise list files by name (a Glob) and answer that
    they all mention it, or look for the word in file names. After MAX_CHECK_CALLS calls the
    answer is allowed."""
    if not rules.search_question or not rules.search_tool or not messages:
        return False
    request = request_of(messages)
    if not re.search(rules.search_question, request, re.I) or asks_for_change(request, rules):
        return False
    calls = tool_calls(since_prompt(messages))
    return len(calls) < MAX_CHECK_CALLS and not any(
        c.get("name") == rules.search_tool or (c.get("name") == rules.shell_tool and re.search(
            r"\bgrep\b", str((c.get("input") or {}).get("command", "")))) for c in calls)


_MATCH_LINE = re.compile(r"^(.+?):(\d+):")
TALLY = "({lines} matching {line_word} in {files} {file_word})"
# when some matching lines are indented and some not: asked for the top-level functions, a small
# model counted the methods too (`def ` matches both)
INDENTED = ": {top} not indented (top level), {inner} indented)"


def search_tally(text: str) -> str:
    """How many lines and files a search result shows, as a note for the model, or "": only when
    every line is a match (`path:line:text`) and the output was not cut short; how many of them
    are indented, when some are and some not. Asked how many
    lines or files mention a word, a small model that has the matching lines before it counts
    every line of the file instead (`wc -l`), or the files of every kind."""
    lines = [line for line in text.splitlines() if line.strip()]
    matches = [_MATCH_LINE.match(line) for line in lines]
    if not lines or not all(matches):
        return ""
    files = len({m.group(1) for m in matches if m})
    tally = TALLY.format(lines=len(lines), line_word="line" if len(lines) == 1 else "lines", files=files,
                         file_word="file" if files == 1 else "files")
    inner = sum(line[m.end():][:1].isspace() for line, m in zip(lines, matches) if m)
    return tally if inner in (0, len(lines)) else tally[:-1] + INDENTED.format(top=len(lines) - inner, inner=inner)


def shell_only(messages: list[dict[str, Any]], rules: ChangeRules) -> bool:
    """The request is one a command does better than writing files (`rules.shell_only`): a small
    model "copies" a file by writing out what it remembers of it, a final newline or a line lost."""
    return bool(rules.shell_only and re.search(rules.shell_only, request_of(messages), re.I))


STILL_NEEDED = "Not done yet: part of the request needs the command {command}."


def command_missing(messages: list[dict[str, Any]], rules: ChangeRules) -> str:
    """The command a change request still needs (`rules.needs`), or "". Asked to write a script
    and make it executable, small models write it, look at it a few times and declare it done."""
    request = request_of(messages)
    if not rules.needs or not asks_for_change(request, rules):
        return ""
    since = since_prompt(messages)
    calls = tool_calls(since)
    if len(calls) >= MAX_CHECK_CALLS:
        return ""
    failed = failed_ids(since)
    ran = [str((c.get("input") or {}).get("command", "")) for c in calls
           if c.get("name") == rules.shell_tool and c.get("id") not in failed]
    for asked, command, label in rules.needs:
        if re.search(asked, request, re.I) and not any(re.search(command, r) for r in ran):
            return label
    return ""


# Where a copied tool report starts in an answer: the Edit and Write report's own words (numbered
# lines alone are left: an answer may quote a file's lines when asked for them)
_PASTED = re.compile(r"here's the result of running", re.I)


def cut_pasted_report(answer: str) -> str:
    """The final answer without a tool's report pasted into it: cut where the paste starts, the
    model's own words before it kept (none left: the answer as it was). Small models answer a
    change with the Edit's report ("The file … has been updated. Here's the result of running
    `cat -n` …" and the numbered lines); the sentence before the report says what was done."""
    m = _PASTED.search(answer)
    kept = answer[:m.start()].rstrip(" :\n\t") if m else answer
    return kept if kept.strip() else answer


_LS_FILE = re.compile(r"^-([rwxsStT-]{9})[.+@]?\s+\d+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+\S+\s+(.+)$")
_LS_OTHER = re.compile(r"^([dlcbps][rwxsStT-]{9}[.+@]?\s|total \d+$)")


def listing_note(text: str) -> str:
    """What an `ls -l` listing says of its regular files, in words, or "": the largest (when there
    are several) and which are executable. Only when every line is a listing line (`total N`,
    other kinds of entry). Small models read `-rwxr-xr-x` and `-rw-r--r--` alike ("all of them
    are executable") and take the largest from the names."""
    lines = [line for line in text.splitlines() if line.strip()]
    files = [m.groups() for line in lines if (m := _LS_FILE.match(line))]
    if not files or len(files) + sum(bool(_LS_OTHER.match(line)) for line in lines) != len(lines):
        return ""
    notes = []
    sizes = sorted((int(size), name) for _, size, name in files)
    if len(sizes) > 1 and sizes[-1][0] > sizes[-2][0]:
        notes.append(f"largest {sizes[-1][1]} ({sizes[-1][0]} bytes)")
    run = [name for perms, _, name in files if perms[2] in "xs"]
    rest = [name for perms, _, name in files if perms[2] not in "xs"]
    notes.append(f"executable: {', '.join(run) or 'none'}" + (f"; not executable: {', '.join(rest)}" if rest else ""))
    return f"(This listing's files: {'; '.join(notes)}.)"


_NAMED_FILE = re.compile(r"[\w./-]*\w\.[A-Za-z]\w*\b")


def attached_paths(messages: list[dict[str, Any]]) -> list[str]:
    """The files attached to the prompt (a Read the harness made of each existing file it names)."""
    since = since_prompt(messages)
    content = since[0].get("content") if since else None
    paths = []
    for b in content if isinstance(content, list) else []:
        text = (b.get("text") or "") if b.get("type") == "text" else ""
        if text.startswith(READ_ATTACHMENT_HEAD) and (m := re.search(r'"file_path":\s*"([^"]+)"', text)):
            paths.append(m.group(1))
    return paths


def command_first(messages: list[dict[str, Any]], rules: ChangeRules) -> str:
    """The command a change request needs (`command_missing`) when every file the request names
    is already there (attached to the prompt), or "": then the command alone is offered first.
    Asked to make an existing script executable, small models first write it out again (a blank
    line added, the final newline lost), then run chmod."""
    needed = command_missing(messages, rules)
    named = _NAMED_FILE.findall(request_of(messages))
    attached = attached_paths(messages)
    if not needed or not named:
        return ""
    there = all(any(p == n or p.endswith("/" + n.removeprefix("./")) for p in attached) for n in named)
    return needed if there else ""


def repeats_a_change(messages: list[dict[str, Any]], rules: ChangeRules, name: str, inp: dict[str, Any]) -> bool:
    """The call is exactly a `check_after` change (an Edit, a Write) that already worked since the
    prompt. Made again, an Edit whose new text contains its old text applies twice (`f(s)` made
    `f(s):` becomes `f(s)::`) and one that does not fails, and the answer reports the failure."""
    if name not in rules.check_after:
        return False
    since = since_prompt(messages)
    failed = failed_ids(since)
    return any(c.get("name") == name and c.get("input") == inp and c.get("id") not in failed
               for c in tool_calls(since))


_NO_QUOTES = str.maketrans("", "", "\"'`")
_NUMBERED = re.compile(r"^ *\d+\t")   # a line as Read shows it: its number, a tab


def _line_forms(text: str) -> set[str]:
    """Each line of `text`, stripped, as it is and without a Read line-number prefix."""
    return {v.strip() for line in text.splitlines() for v in (line, _NUMBERED.sub("", line))}


def reveals_nothing(messages: list[dict[str, Any]], before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a call input a fixer rewrote puts before the model only text it already had: every
    line of the new old_string is in the model's own old_string (quotes aside: the quote fix only
    puts back the file's quotes) or in what the conversation has shown it (tool results, the
    user's words). The local profile's Edit fixes read the named file themselves, outside the
    permission checks, and the rewritten call goes into the history the model reads next; the
    lines of a file a Read deny rule hides must never leak that way. (new_string is made from the
    new old_string and the model's own new_string, so it adds nothing of the file's.)"""
    return all(_field_reveals_nothing(messages, before, after, key) for key in ("old_string", "content"))


def _field_reveals_nothing(messages: list[dict[str, Any]], before: dict[str, Any], after: dict[str, Any],
                           key: str) -> bool:
    """`reveals_nothing` for one field: an Edit's old_string, or a Write's content. A Write fix
    puts the file's own lines around the model's (each line of the new content that is not a
    line of the model's must have been shown); one that only adds final newlines to the model's
    lines still says, by firing, that the file matched them: then every line must have been shown."""
    new = after.get(key)
    if not isinstance(new, str) or new == before.get(key):
        return True
    if key == "content":
        mine = str(before.get(key) or "")
        # the model's own lines, also without Read's line-number prefix (that fix shows nothing new)
        own_lines = set() if new.strip() == mine.strip() else _line_forms(mine)
        unknown = [line.strip() for line in new.splitlines() if line.strip() and line.strip() not in own_lines]
    else:
        own = str(before.get(key) or "").translate(_NO_QUOTES)
        unknown = [line.strip() for line in new.splitlines()
                   if line.strip() and line.strip().translate(_NO_QUOTES) not in own]
    if not unknown:
        return True
    shown = []
    for m in messages:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        shown += [_text_of(b.get("content")) if b.get("type") == "tool_result" else b.get("text") or ""
                  for b in blocks if b.get("type") in ("text", "tool_result")]
    text = "\n".join(shown)
    if key == "content":   # a whole file's lines: each must have been shown as a line (a Read's)
        lines = _line_forms(text)
        return all(line in lines for line in unknown)
    return all(line in text for line in unknown)
