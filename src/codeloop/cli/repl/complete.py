"""REPL completion: `/` lists slash commands (built-in and custom, with descriptions), `@` fuzzy-
matches file paths of the project; Enter on an open menu; the room the menu needs on screen.

Commands are offered as Claude Code orders them: names that start with what was typed, then
aliases that do (`/re` offers /resume and /rewind before /clear, alias `reset`), then fuzzy
matches. As in Claude Code the first entry of a menu is highlighted from the start (without
being written into the input, which stays what was typed) and ↑/↓ move on from it; Enter with a
`/` menu open runs the highlighted command when its name or an alias starts with what was typed
(a fuzzy guess is not run: the input is sent as typed); with an `@` menu it inserts the path.
The prompt reserves room for the menu while one is open, and only then: with the screen full of
output (or after a resize) a menu that had no room below the input would not be drawn at all.

The file list comes from `rg --files` (which honours .gitignore, .ignore and hidden files as the
Grep tool does), else `git ls-files`, else a bounded walk; it is built once in a thread and
refreshed when older than FILES_TTL_S, so typing never waits on a large tree. Matching is a
subsequence match scored by where the letters fall (file name over folder, runs over gaps).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application.current import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.layout.dimension import Dimension

FILES_TTL_S = 30.0
MAX_FILES = 50_000
MAX_SHOWN = 15
SHORTCUTS = """\
  ! for bash mode              Esc Esc  rewind to an earlier prompt    Shift+Tab  cycle permission modes
  / for commands               Esc      interrupt                      Alt+Enter / Ctrl+J / \\  newline
  @ for file paths (Tab)       Ctrl+C   clear input · twice to exit    Ctrl+V  paste an image file path
  ? this help                  Ctrl+D   exit on empty input            Up/Down  history
  # to remember                Ctrl+O   transcript (full output)       Ctrl+B  background a command"""
LIST_TIMEOUT_S = 10.0


def list_project_files(cwd: Path) -> list[str]:
    """Project-relative paths, .gitignore respected where a tool that knows it is available."""
    from codeloop.shellpath import find_program
    from codeloop.tools.builtin.ripgrep import find_rg

    rg, git = find_rg(), find_program("git")   # never a program planted in the project
    commands = [[git, "ls-files", "--cached", "--others", "--exclude-standard"]] if git else []
    if rg:
        commands.insert(0, [rg, "--files", "--hidden", "--no-require-git", "--glob", "!.git", "--sort", "path"])
    for argv in commands:
        try:
            out = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=LIST_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode in (0, 1):  # rg: 1 = no files
            return [p for p in out.stdout.decode(errors="replace").splitlines() if p][:MAX_FILES]
    found: list[str] = []
    for root, dirs, files in os.walk(cwd):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        found += [os.path.relpath(os.path.join(root, f), cwd) for f in files]
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


def with_folders(files: Iterable[str]) -> list[str]:
    """The files plus each folder that holds them (`src/`), so `@src` can name a folder."""
    out, folders = [], set()
    for f in files:
        out.append(f)
        parts = f.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folders.add("/".join(parts[:i]) + "/")
    return sorted(folders) + out


def fuzzy_score(query: str, path: str) -> float | None:
    """None when `query`'s letters are not a subsequence of `path` (case-insensitive), else a score
    (higher is better): matches in the file name, at word starts and in runs count more."""
    if not query:
        return 0.0
    q, p = query.lower(), path.lower()
    base_start = p.rstrip("/").rfind("/") + 1
    score, pos, run = 0.0, -1, 0
    for ch in q:
        nxt = p.find(ch, pos + 1)
        if nxt < 0:
            return None
        run = run + 1 if nxt == pos + 1 else 0
        score += 1 + run * 2 + (3 if nxt >= base_start else 0)
        if nxt == 0 or p[nxt - 1] in "/_-. ":
            score += 2
        pos = nxt
    if q in p[base_start:]:
        score += 10 + (10 if p[base_start:].startswith(q) else 0)
    return score - len(p) * 0.05


class FileIndex:
    """The project's files, listed in a background thread and cached for FILES_TTL_S."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self._paths: list[str] | None = None
        self._at = 0.0
        self._lock = threading.Lock()
        self._busy = False

    def paths(self, *, wait: float = 1.0) -> list[str]:
        stale = self._paths is None or time.monotonic() - self._at > FILES_TTL_S
        if stale:
            self._refresh(wait if self._paths is None else 0.0)
        return self._paths or []

    def _refresh(self, wait: float) -> None:
        with self._lock:
            if self._busy:
                return
            self._busy = True
        done = threading.Event()

        def work() -> None:
            try:
                self._paths = with_folders(list_project_files(self.cwd))
                self._at = time.monotonic()
            finally:
                self._busy = False
                done.set()
        threading.Thread(target=work, daemon=True, name="codeloop-file-index").start()
        if wait:
            done.wait(wait)

    def search(self, query: str, limit: int = MAX_SHOWN) -> list[str]:
        scored = [(s, p) for p in self.paths() if (s := fuzzy_score(query, p)) is not None]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [p for _, p in scored[:limit]]


class CommandCompletion(Completion):
    """A `/command` entry, marked when its name or an alias starts with what was typed."""

    def __init__(self, text: str, *, prefix: bool, **kw: Any) -> None:
        super().__init__(text, **kw)
        self.prefix = prefix


class ReplCompleter(Completer):
    """`/name` → commands of `registry`; `@query` → MCP resources (`server:uri`), then files of `index`."""

    def __init__(self, registry: Any, index: FileIndex, conv: Callable[[], Any] | None = None) -> None:
        self.registry = registry
        self.index = index
        self.conv = conv   # the session now: its MCP servers' prompts and resources complete too

    def _mcp(self) -> Any:
        return getattr(self.conv(), "mcp", None) if self.conv is not None else None

    def get_completions(self, document: Document, complete_event: Any) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            yield from self._commands(before[1:])
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            yield from self._files(word[1:].strip('"'), len(word))

    def _commands(self, typed: str) -> Iterable[Completion]:
        from codeloop.input.commands import slash_commands_enabled
        from codeloop.input.custom_commands import CommandSource

        if not slash_commands_enabled():
            return
        typed = typed.lower()
        cmds: list[Any] = list(self.registry.all()) if self.registry is not None else []
        if self.conv is not None and self._mcp() is not None:   # the servers' prompts (the registry is not ours)
            from codeloop.input.mcp_input import prompt_commands
            known = {c.name for c in cmds}
            cmds += [c for c in prompt_commands(self.conv()) if c.name not in known]
        names = [c for c in cmds if c.name.startswith(typed)]
        aliases = [c for c in cmds if c not in names and any(a.startswith(typed) for a in c.aliases)]
        fuzzy = [c for c in cmds if c not in names and c not in aliases and fuzzy_score(typed, c.name) is not None]
        for c in [*names, *aliases, *fuzzy]:
            hint = f" {c.argument_hint}" if c.argument_hint else ""
            source = "" if c.source is CommandSource.BUILTIN else f" ({c.source.value})"
            yield CommandCompletion(f"/{c.name}" + (" " if c.argument_hint else ""), start_position=-len(typed) - 1,
                                    display=f"/{c.name}{hint}", display_meta=f"{c.description}{source}",
                                    prefix=c not in fuzzy)

    def _files(self, query: str, replace: int) -> Iterable[Completion]:
        mcp = self._mcp()
        mentions = [(f"{r['server']}:{r['uri']}", str(r.get("name") or "")) for r in (mcp.resources() if mcp else [])]
        found = [(sc, m, d) for m, d in mentions if (sc := fuzzy_score(query, m)) is not None]
        for _, mention, description in sorted(found, key=lambda t: (-t[0], t[1]))[:MAX_SHOWN]:
            yield Completion(f"@{mention} ", start_position=-replace, display=mention, display_meta=description)
        for path in self.index.search(query):
            text = f'@"{path}"' if " " in path else f"@{path}"
            yield Completion(text + ("" if path.endswith("/") else " "), start_position=-replace, display=path)


class MenuEnter(str, Enum):
    """What Enter did with an open completion menu."""
    NONE = "none"           # no menu: Enter submits the input as it is
    RUN = "run"             # a command was taken from the `/` menu: Enter submits it
    INSERTED = "inserted"   # a path was taken from the `@` menu: the input stays open


def menu_enter(buf: Any) -> MenuEnter:
    """Enter with a completion menu: take its highlighted entry (the first unless ↑/↓ moved)."""
    before = buf.document.text_before_cursor
    slash = before.startswith("/") and " " not in before and "\n" not in before
    state = buf.complete_state
    if state is not None and state.completions:
        first: Completion | None = state.completions[min(state.complete_index or 0, len(state.completions) - 1)]
    elif slash and buf.completer is not None:   # typed faster than the menu appeared: the same first entry
        first = next(iter(buf.completer.get_completions(buf.document, CompleteEvent(text_inserted=True))), None)
    else:
        return MenuEnter.NONE
    if first is None:
        return MenuEnter.NONE
    if slash and not getattr(first, "prefix", False):   # only a fuzzy guess: send what was typed
        return MenuEnter.NONE
    buf.apply_completion(first)     # (back to what was typed, then the entry: whether ↑/↓ wrote it or not)
    if slash:
        buf.text = buf.text.rstrip()
        return MenuEnter.RUN
    return MenuEnter.INSERTED


class MenuRoomSession(PromptSession[str]):
    """A PromptSession that makes room below the input for the completion menu while it is open
    (prompt_toolkit's `reserve_space_for_menu` would keep those rows blank all the time), and
    highlights a menu's first entry as soon as it is there."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.default_buffer.on_completions_changed += _highlight_first

    def _get_default_buffer_control_height(self) -> Dimension:
        state = self.default_buffer.complete_state
        app = get_app()
        if state is not None and state.completions and not app.is_done:
            # at most half the screen: the toolbar needs the rest (more would be "Window too small")
            rows = app.output.get_size().rows
            return Dimension(min=max(1, min(len(state.completions) + 1, MAX_SHOWN + 1, rows // 2)))
        return Dimension()


def _highlight_first(buf: Any) -> None:
    """Mark the first entry without writing it into the input (prompt_toolkit would write it).
    Not a lone entry that adds nothing (`/help` typed in full): prompt_toolkit drops that one
    from the list, and a mark on an emptied list would point at nothing."""
    state = buf.complete_state
    if state is None or not state.completions or state.complete_index is not None:
        return
    if len(state.completions) == 1:
        before, only = state.original_document.text_before_cursor, state.completions[0]
        if before[len(before) + only.start_position:] == only.text:
            return
    state.go_to_index(0)
