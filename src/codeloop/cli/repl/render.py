"""REPL rendering: events → ANSI text printed above the prompt, and the live status line.

Owns how things look: streamed assistant markdown (printed block by block as each paragraph or
code fence completes, so nothing is ever re-drawn and nothing flickers), tool calls as compact
cells (`● Bash(ls)` then `  ⎿  result`, cut to a few lines; Ctrl+O toggles the expanded view,
which reprints the recent cells in full), diffs for Edit/Write from the result's structuredPatch,
the TodoWrite checklist, clean messages for refused or failed tools, and notices. The status
line's text is `repl.progress`. It never reads input and never touches the prompt: output
goes through `write`, which the REPL points at prompt_toolkit's patched stdout.

rich is imported here, so this module is only imported once the REPL starts.
"""

from __future__ import annotations

import re
import shutil
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.padding import Padding
from rich.text import Text

from codeloop.events import (ApiCallEvent, AssistantEvent, CompactBoundary, Event, PermissionDenied, StreamEvent,
                             SystemEvent, Terminal, Tombstone, UserEvent)
from codeloop.cli.repl.cells import call_body, result_line, strip_reminders, tool_label
from codeloop.cli.repl.progress import Progress, duration
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message

_TRAILING_BLANKS = re.compile(r"[ ]+((?:\x1b\[[0-9;]*m)*)$", re.M)
_TOOL_ERROR = re.compile(r"^\s*<tool_use_error>(.*?)</tool_use_error>\s*$", re.S)
USER_REJECTED = "The user doesn't want to proceed with this tool use."
RESULT_LINES = 3
KEPT_CELLS = 50                # tool results Ctrl+O can show in full
DIFF_LINES = 40
TURN_DURATION_LINE_AFTER_S = 30.0
_STYLES = {"": "", "info": "dim", "hint": "cyan", "warning": "yellow", "error": "bold red", "ok": "green"}


def stable_prefix_end(buf: str) -> int:
    """Where the complete markdown blocks end: after a blank line outside a code fence."""
    end, pos, in_fence = 0, 0, False
    for line in buf.splitlines(keepends=True):
        pos += len(line)
        if not line.endswith("\n"):
            break  # an unfinished line is never stable
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            if not in_fence:
                end = pos  # a closed fence is a complete block
        elif not stripped and not in_fence:
            end = pos
    return end


def lines_word(n: int) -> str:
    return f"{n} line{'s' * (n != 1)}"


def clean_tool_error(text: str) -> str:
    """What a refused or failed tool says, without the model-facing `<tool_use_error>` wrapper."""
    m = _TOOL_ERROR.match(text)
    inner = m.group(1).strip() if m else text
    if inner.startswith(USER_REJECTED):
        return "No (you declined this; tell Claude what to do differently)"
    return inner


def todo_lines(todos: list[dict[str, Any]]) -> Text:
    """The checklist, as Claude Code draws it: ☒ done (struck), ☐ to do, the active item bold."""
    out = Text()
    for i, t in enumerate(todos or []):
        status = t.get("status")
        box, style = (("☒ ", "dim strike") if status == "completed"
                      else ("☐ ", "bold") if status == "in_progress" else ("☐ ", ""))
        out.append("  ⎿  " if i == 0 else "     ", style="dim")
        out.append(box + str(t.get("content", "")), style=style)
        if i < len(todos) - 1:
            out.append("\n")
    return out if todos else Text.assemble(("  ⎿  ", "dim"), ("(no todos)", "dim"))


class Renderer:
    def __init__(self, write: Callable[[str], None], *, color: bool = True) -> None:
        self.write = write
        self.console = Console(force_terminal=color, color_system="standard" if color else None,
                               width=self._width(), highlight=False, soft_wrap=False)
        self._buf = ""              # streamed text not yet printed
        self._printed = 0           # characters of the current text block already printed
        self._tool_names: dict[str, tuple[str, dict[str, Any]]] = {}
        self._withdrawn: set[str | None] = set()   # response ids already marked as withdrawn
        # MessageDisplay hooks decide what a text shows: it is printed whole, once they answered
        self.hold_text = False
        self.progress = Progress(tool_label)
        self.busy = False
        self.expanded = False       # Ctrl+O: tool output in full
        self.cells: deque[tuple[str, str, bool]] = deque(maxlen=KEPT_CELLS)   # (label, output, error)
        self._label = ""            # the label of the cell whose result is being drawn
        self.lines_added = self.lines_removed = 0   # by edits this session (the status line's cost block)

    @staticmethod
    def _width() -> int:
        return max(20, shutil.get_terminal_size((100, 30)).columns)

    def _out(self, *renderables: Any) -> None:
        self.console.width = self._width()
        with self.console.capture() as cap:
            for r in renderables:
                self.console.print(r)
        # rich pads lines to the full width; trailing blanks wrap badly after a resize
        self.write(_TRAILING_BLANKS.sub(r"\1", cap.get()))

    # -- notices ---------------------------------------------------------------------------------
    def show(self, text: str, style: str = "") -> None:
        self._out(Text(text, style=_STYLES.get(style, style)))

    def markdown(self, text: str) -> None:
        if text.strip():
            self._out(Markdown(text, code_theme="ansi_dark"))

    # -- the query ---------------------------------------------------------------------------------
    def query_started(self) -> None:
        self.busy = True
        self.progress.reset()

    def query_finished(self, duration_s: float, aborted: bool) -> None:
        self.busy = False
        self._flush_text(final=True)
        if duration_s > TURN_DURATION_LINE_AFTER_S and not aborted:
            self.show(f"✻ Worked for {duration(duration_s)}", "info")

    def event(self, ev: Event) -> None:
        if isinstance(ev, StreamEvent):
            self._stream(ev.raw)
        elif isinstance(ev, AssistantEvent):
            self._assistant(ev.message)
        elif isinstance(ev, UserEvent):
            self._user(ev.message)
        elif isinstance(ev, ApiCallEvent):
            self.progress.call_finished(ev.usage)
        elif isinstance(ev, SystemEvent):
            if ev.text:
                self.show(("⚠ " if ev.level != "info" else "") + ev.text, ev.level)
        elif isinstance(ev, CompactBoundary):
            self.show(f"✻ Conversation compacted ({ev.trigger}; ~{ev.pre_tokens:,} tokens summarised)", "info")
        elif isinstance(ev, PermissionDenied):
            pass  # the tool_result that follows says so
        elif isinstance(ev, Tombstone):
            self._withdraw(ev.message)
        elif isinstance(ev, Terminal):
            self._flush_text(final=True)
            if ev.reason in (TerminalReason.ABORTED_STREAMING, TerminalReason.ABORTED_TOOLS):
                self.show("  ⎿  Interrupted · What should Claude do instead?", "error")
            elif ev.reason is TerminalReason.MAX_TURNS:
                self.show(f"Stopped after {ev.turn_count} turns (max turns reached).", "warning")
            elif ev.reason is TerminalReason.ENDED_BY_MODEL:
                self.show("The model ended this conversation. Start a new session (or /clear).", "warning")
            elif ev.reason is TerminalReason.HOOK_STOPPED and ev.error:
                self.show(f"Stopped by a hook: {ev.error}", "warning")

    def _withdraw(self, msg: Message) -> None:
        """Printed text cannot be unprinted: say, once per response, that it no longer counts."""
        if msg.role != "assistant" or msg.id in self._withdrawn:
            return
        self._withdrawn.add(msg.id)
        self._buf, self._printed = "", 0   # whatever of it was still unprinted stays so
        self.show("  ⎿  ↺ The response above was withdrawn and does not count.", "info")

    def _stream(self, raw: dict[str, Any]) -> None:
        kind = raw.get("type")
        if kind == "content_block_start" and (raw.get("content_block") or {}).get("type") == "text":
            self._buf, self._printed = "", 0
        elif kind == "content_block_delta":
            delta = raw.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.progress.stats.streamed_chars += len(delta.get("text", ""))
                if not self.hold_text:
                    self._buf += delta.get("text", "")
                    self._flush_text(final=False)
            elif delta.get("type") in ("input_json_delta", "thinking_delta"):
                self.progress.stats.streamed_chars += len(delta.get("partial_json", "") or delta.get("thinking", ""))
        elif kind == "message_start":
            self.progress.stats.streamed_chars = 0
            self.progress.stats.live_usage = dict((raw.get("message") or {}).get("usage") or {})

    def _flush_text(self, *, final: bool) -> None:
        end = len(self._buf) if final else stable_prefix_end(self._buf)
        if end <= 0:
            return
        chunk, self._buf = self._buf[:end], self._buf[end:]
        self._printed += len(chunk)
        self.markdown(chunk)

    def _assistant(self, msg: Message) -> None:
        if msg.is_api_error:
            self._flush_text(final=True)
            self.show(f"  ⎿  {msg.text}", "error")
            return
        for block in msg.content:
            kind = block.get("type")
            if kind == "text":
                text = block.get("text", "")
                if self._printed or self._buf:  # streamed: print only what has not been shown
                    rest = text[self._printed:]
                    self._buf, self._printed = "", 0
                    self.markdown(rest)
                else:
                    self.markdown(text)
            elif kind == "tool_use":
                self._flush_text(final=True)
                inp = block.get("input") or {}
                self._tool_names[block.get("id", "")] = (block.get("name", ""), inp)
                label = tool_label(block.get("name", "?"), inp)
                if self.busy:
                    self.progress.tool_started(block.get("id", ""), block.get("name", ""), label)
                self._out(Text.assemble(("● ", "green"), (label, "bold")))
                if (body := call_body(block.get("name", ""), inp)) is not None:
                    self._out(Padding(Markdown(body, code_theme="ansi_dark"), (0, 0, 0, 5)))
            elif kind == "thinking" and block.get("thinking"):
                self.show("✻ Thinking…", "info")

    def _user(self, msg: Message) -> None:
        results = [b for b in msg.content if b.get("type") == "tool_result"]
        if results:
            for b in results:
                self._tool_result(b, msg.tool_use_result)
            return
        if msg.is_meta:
            return
        text = msg.text
        if text.startswith("<bash-input>"):
            self._label = "!" + _between(text, "bash-input")
            self._out(Text.assemble(("! ", "magenta"), (_between(text, "bash-input"), "bold")))
        elif text.startswith("<bash-stdout>"):
            out, err = _between(text, "bash-stdout"), _between(text, "bash-stderr")
            self._result_lines((out + ("\n" + err if err else "")).strip() or "(no output)",
                               error=bool(err) and not out)
        elif text in ("[Request interrupted by user]", "[Request interrupted by user for tool use]"):
            return  # the Terminal line says it

    def _tool_result(self, block: dict[str, Any], data: Any) -> None:
        tid = block.get("tool_use_id", "")
        name, inp = self._tool_names.pop(tid, ("", {}))
        run = self.progress.running.get(tid)
        if run is not None and isinstance(data, dict) and name in ("Task", "Agent"):   # Done (3 tool uses · …)
            data = {**data, "toolUses": run.sub_tools, "durationS": time.monotonic() - run.started}
        self.progress.tool_finished(tid)
        self._label = tool_label(name, inp) if name else ""
        content = block.get("content")
        text = content if isinstance(content, str) else "\n".join(
            c.get("text", "") for c in (content or []) if isinstance(c, dict) and c.get("type") == "text")
        error = bool(block.get("is_error"))
        if error:
            text = clean_tool_error(text)
        patch = data.get("structuredPatch") if isinstance(data, dict) else None
        if patch and not error:
            self._diff(patch, created=isinstance(data, dict) and data.get("type") == "create")
            return
        if name == "TodoWrite" and not error and isinstance(data, dict) and "newTodos" in data:
            self._out(todo_lines(data["newTodos"]))
            return
        if name in ("TaskCreate", "TaskUpdate") and not error and isinstance(data, dict) and "tasks" in data:
            # Claude Code's task list, drawn like TodoWrite's checklist (subject in place of content)
            self._out(todo_lines([{**t, "content": t.get("subject", "")} for t in data["tasks"]]))
            return
        text = strip_reminders(text)
        line = result_line(name, inp, text, data, error)
        if line is not None:   # written for the model: a line for people, the result behind Ctrl+O
            self.cells.append((self._label, text, error))
            self._result_lines(line, error=error, record=False)
            return
        self._result_lines(text or "(no output)", error=error)

    def _result_lines(self, text: str, *, error: bool, record: bool = True) -> None:
        if record:
            self.cells.append((self._label, text, error))
        lines = text.splitlines() or [""]
        limit = len(lines) if self.expanded else RESULT_LINES
        shown = lines[:limit]
        if len(lines) > limit:
            shown.append(f"… +{lines_word(len(lines) - limit)} (ctrl+o to expand)")
        style = "red" if error else "dim"
        out = Text()
        for i, line in enumerate(shown):
            out.append("  ⎿  " if i == 0 else "     ", style="dim")
            out.append(line[:self._width() - 6] + ("\n" if i < len(shown) - 1 else ""), style=style)
        self._out(out)

    def _diff(self, patch: Any, *, created: bool = False) -> None:
        lines = patch.splitlines() if isinstance(patch, str) else [
            ln for hunk in patch for ln in (hunk.get("lines") or [])] if isinstance(patch, list) else []
        body = [ln for ln in lines if not ln.startswith(("---", "+++"))]
        added = sum(1 for ln in body if ln.startswith("+"))
        removed = sum(1 for ln in body if ln.startswith("-"))
        self.lines_added, self.lines_removed = self.lines_added + added, self.lines_removed + removed
        summary = (f"Created with {added} line{'s' * (added != 1)}" if created else
                   f"Updated with {added} addition{'s' * (added != 1)} and {removed} removal{'s' * (removed != 1)}")
        out = Text.assemble(("  ⎿  ", "dim"), (summary, ""))
        for ln in body[:DIFF_LINES]:
            style = ("green" if ln.startswith("+") else "red" if ln.startswith("-")
                     else "cyan" if ln.startswith("@@") else "dim")
            out.append("\n     " + ln[:self._width() - 6], style=style)
        if len(body) > DIFF_LINES:
            out.append(f"\n     … +{lines_word(len(body) - DIFF_LINES)}", style="dim")
        self._out(out)

    def preview(self, header: str, patch: str, *, created: bool) -> None:
        """An Edit/Write about to be asked about: the change it would make, inside the dialog."""
        lines = [ln for ln in patch.splitlines() if not ln.startswith(("---", "+++"))]
        if created:  # a new file reads as its content, not as a hunk of additions
            lines = [ln[1:] for ln in lines if ln.startswith("+")]
        width = self._width() - 6
        out = Text.assemble(("╭─ ", "dim"), (header, "bold"))
        for ln in lines[:DIFF_LINES]:
            style = ("" if created else "green" if ln.startswith("+") else "red" if ln.startswith("-")
                     else "cyan" if ln.startswith("@@") else "dim")
            out.append("\n│  ", style="dim")
            out.append(ln[:width], style=style)
        if len(lines) > DIFF_LINES:
            out.append(f"\n│  … +{lines_word(len(lines) - DIFF_LINES)}", style="dim")
        out.append("\n╰─", style="dim")
        self._out(out)

    def toggle_expanded(self) -> None:
        """Ctrl+O: the transcript view. On, the recent tool results are drawn again in full (and
        new ones are not cut); off, results are cut to a few lines again."""
        self.expanded = not self.expanded
        if not self.expanded:
            self.show("Showing tool output collapsed (ctrl+o to expand)", "info")
            return
        self.show(f"── transcript: last {len(self.cells)} tool result{'s' * (len(self.cells) != 1)} in full "
                  "(ctrl+o to collapse) ──", "info")
        for label, text, error in list(self.cells):
            if label:
                self._out(Text.assemble(("● ", "green"), (label, "bold")))
            self._result_lines(text, error=error, record=False)
        self.show("── end of transcript ──", "info")

    def history(self, messages: list[Message], limit: int = 6) -> None:
        """A resumed session: the last few exchanges, so the user sees where they left off."""
        shown = [m for m in messages if not m.is_meta and (m.text or m.tool_uses())][-limit:]
        for m in shown:
            if m.role == "user" and not m.tool_result_ids():
                if m.text.startswith(("<bash-input>", "<bash-stdout>")):
                    self._user(m)      # a `!` command and its output, drawn as when it ran
                else:
                    self._out(Text.assemble(("> ", "bold"), (m.text[:500], "")))
            elif m.role == "assistant":
                self._assistant(m)

    # -- the status line ---------------------------------------------------------------------------
    def status_lines(self, session_cost: float, model: str) -> list[str]:
        if not self.busy:
            return []
        return self.progress.lines(session_cost + self.progress.live_cost(model), self._width())


def _between(text: str, tag: str) -> str:
    start, end = text.find(f"<{tag}>"), text.find(f"</{tag}>")
    return text[start + len(tag) + 2:end] if start >= 0 and end >= 0 else ""
