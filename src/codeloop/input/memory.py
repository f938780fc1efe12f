"""/memory and the `#` shortcut: the CLAUDE.md memory files.

/memory lists the memory files the session reads (the same discovery as the system prompt's
user context: `context.prompt.instruction_files`) and opens one in $VISUAL / $EDITOR (`vi` when
neither is set); `/memory user|project|local|<path>` opens that one directly. The file is created
when missing, and a front end that owns the terminal lends `run_in_terminal(fn)` so the editor
gets the screen. Edits take effect on the next prompt (CLAUDE.md is re-read before each query).

A line that starts with `#` is a note for memory, as in Claude Code: the user is asked where it
goes — project memory (./CLAUDE.md, shared through the repository), local project memory
(./CLAUDE.local.md) or user memory (~/.claude/CLAUDE.md, every project) — and it is appended
there as a bullet — or, if the user says so, sent to the model as an ordinary prompt.
"""

from __future__ import annotations

import os
import shlex
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeloop.input.commands import CommandHost, CommandOutcome


class MemoryScope(str, Enum):
    PROJECT = "project"
    LOCAL = "local"
    USER = "user"


SCOPE_LABELS = {MemoryScope.PROJECT: "Project memory (./CLAUDE.md, checked in)",
                MemoryScope.LOCAL: "Project memory, local (./CLAUDE.local.md, just you)",
                MemoryScope.USER: "User memory (~/.claude/CLAUDE.md, all projects)"}


def memory_path(scope: MemoryScope, cwd: Path) -> Path:
    if scope is MemoryScope.USER:
        return Path(os.path.expanduser("~")) / ".claude" / "CLAUDE.md"
    return cwd / ("CLAUDE.local.md" if scope is MemoryScope.LOCAL else "CLAUDE.md")


def memory_note(text: str) -> str | None:
    """The note of a `# note` input line; None when the input is not one."""
    stripped = text.strip()
    if not stripped.startswith("#"):
        return None
    note = stripped.lstrip("#").strip()
    return note or None


def append_note(path: Path, note: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    sep = "" if not old or old.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as f:
        f.write(f"{sep}- {note}\n")


SEND_AS_PROMPT = "prompt"


async def add_memory_note(host: CommandHost, text: str) -> str | None:
    """Ask where the `# note` goes and append it there; the line to show. None: the user would
    rather send the line to the model as it is (a prompt that happens to start with #)."""
    note = memory_note(text)
    if note is None:
        return "Nothing to remember: type the note after the #."
    choice = await host.choose(f"Save to memory: {note!r} — where?",
                               [*((s.value, label) for s, label in SCOPE_LABELS.items()),
                                (SEND_AS_PROMPT, "Not memory: send it to the model as a prompt")])
    if choice == SEND_AS_PROMPT:
        return None
    if choice is None:
        return "Not saved to memory."
    path = memory_path(MemoryScope(choice), host.conv.config.cwd)
    try:
        append_note(path, note)
    except OSError as exc:
        return f"Could not save to {path}: {exc}"
    return f"Saved to {path} (read from the next prompt on)."


def memory_files(host: CommandHost) -> list[Path]:
    from codeloop.context.prompt import instruction_files
    from codeloop.session.store import config_dir

    return [p for p, _ in instruction_files(host.conv.config.cwd, config_dir())]


def editor_argv(path: Path) -> list[str]:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return [*shlex.split(editor), str(path)]


async def open_in_editor(host: CommandHost, path: Path) -> str:
    import subprocess

    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(exist_ok=True)
    argv = editor_argv(path)

    def edit() -> int:
        try:
            return subprocess.run(argv, check=False).returncode
        except OSError:
            return -1

    runner = getattr(host, "run_in_terminal", None)
    code = await runner(edit) if runner is not None else edit()
    if code == -1:
        return f"Could not start the editor {argv[0]!r}: set $EDITOR (or $VISUAL). The file is {path}"
    if code:
        return f"The editor exited with status {code}; {path} is as it left it."
    return f"Edited {path} (read from the next prompt on)."


async def memory_command(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.input.commands import CommandOutcome

    cwd = host.conv.config.cwd
    arg = args.strip()
    if arg:
        path = memory_path(MemoryScope(arg), cwd) if arg in {s.value for s in MemoryScope} else \
            Path(os.path.expanduser(arg)) if os.path.isabs(os.path.expanduser(arg)) else cwd / arg
        return CommandOutcome(await open_in_editor(host, path))
    loaded = memory_files(host)
    listing = ["Memory files in use:", *(f"  {p}" for p in loaded)] if loaded else ["No memory files in use yet."]
    host.show("\n".join(listing))
    options = [(str(p), str(p)) for p in loaded]
    for scope, label in SCOPE_LABELS.items():
        p = memory_path(scope, cwd)
        if all(os.path.realpath(k) != os.path.realpath(p) for k, _ in options):
            options.append((str(p), f"{label} — new"))
    choice = await host.choose("Open which memory file in your editor?", options)
    if choice is None:
        return CommandOutcome("Memory unchanged. (Tip: a line starting with # adds a note to memory.)")
    return CommandOutcome(await open_in_editor(host, Path(choice)))
