"""REPL rendering: events → ANSI text printed above the prompt, and the live status line.

Owns how things look: streamed assistant markdown (printed block by block as each paragraph or
code fence completes, so nothing is ever re-drawn and nothing flickers), tool calls as compact
cells (`● Bash(ls)` then `  ⎿  result`), diffs for Edit/Write from the result's structuredPatch,
notices, and the status line's text. It never reads input and never touches the prompt: output
goes through `write`, which the REPL points at prompt_toolkit's patched stdout.

rich is imported here, so this module is only imported once the REPL starts.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from typing import Any, Callable

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from codeloop.events import (ApiCallEvent, AssistantEvent, CompactBoundary, Event, PermissionDenied, StreamEvent,
                             SystemEvent, Terminal, Tombstone, UserEvent)
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message

_TRAILING_BLANKS = re.compile(r"[ ]+((?:\x1b\[[0-9;]*m)*)$", re.M)
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
RESULT_LINES = 3
DIFF_LINES = 40
TURN_DURATION_LINE_AFTER_S = 30.0
_MAIN_ARG = ("command", "file_path", "notebook_path", "pattern", "url", "query", "description", "path", "prompt")
_STYLES = {"": "", "info": "dim", "hint": "cyan", "warning": "yellow", "error": "bold red", "ok": "green"}


def tool_label(name: str, inp: dict[str, Any]) -> str:
    """`Bash(ls -la)`: the tool and its one most telling argument, kept to one line."""
    arg = next((inp[k] for k in _MAIN_ARG if isinstance(inp.get(k), str) and inp.get(k)), None)
    if arg is None and inp:
        arg = json.dumps(inp, ensure_ascii=False)
    arg = " ".join(str(arg or "").split())
    return f"{name}({arg[:100] + '…' if len(arg) > 100 else arg})"


def stable_prefix_end(buf: str) -> int:
    """Where the complete markdown blocks end: after a blank line outside a code fence."""
    end, pos, in_fence = 0, 0, False
    for line in buf.splitlines(keepends=True):
        pos += len(line)
        if not line.endswith("\n"):
            break  # an unfinished line is never stable
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
            if not in_fence:
                end = pos  # a closed fence is a complete block
        elif not stripped and not in_fence:
            end = pos
    return end


@dataclass
class QueryStats:
    started: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    streamed_chars: int = 0  # live estimate until the call's usage arrives
    cost_at_start: float = 0.0


class Renderer:
    def __init__(self, write: Callable[[str], None], *, color: bool = True) -> None:
        self.write = write
        self.console = Console(force_terminal=color, color_system="standard" if color else None,
                               width=self._width(), highlight=False, soft_wrap=False)
        self._buf = ""              # streamed text not yet printed
        self._printed = 0           # characters of the current text block already printed
        self._tool_names: dict[str, tuple[str, dict[str, Any]]] = {}
        self._withdrawn: set[str | None] = set()   # response ids already marked as withdrawn
        self.stats = QueryStats()
        self.busy = False

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
    def query_started(self, cost_so_far: float) -> None:
        self.busy = True
        self.stats = QueryStats(started=time.monotonic(), cost_at_start=cost_so_far)

    def query_finished(self, duration_s: float, aborted: bool) -> None:
        self.busy = False
        self._flush_text(final=True)
        if duration_s > TURN_DURATION_LINE_AFTER_S and not aborted:
            self.show(f"✻ Worked for {_duration(duration_s)}", "info")

    def event(self, ev: Event) -> None:
        if isinstance(ev, StreamEvent):
            self._stream(ev.raw)
        elif isinstance(ev, AssistantEvent):
            self._assistant(ev.message)
        elif isinstance(ev, UserEvent):
            self._user(ev.message)
        elif isinstance(ev, ApiCallEvent):
            self.stats.input_tokens += ev.usage.input_tokens + ev.usage.cache_read_input_tokens \
                + ev.usage.cache_creation_input_tokens
            self.stats.output_tokens += ev.usage.output_tokens
            self.stats.streamed_chars = 0
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
                self._buf += delta.get("text", "")
                self.stats.streamed_chars += len(delta.get("text", ""))
                self._flush_text(final=False)
            elif delta.get("type") == "input_json_delta":
                self.stats.streamed_chars += len(delta.get("partial_json", ""))
        elif kind == "message_start":
            usage = (raw.get("message") or {}).get("usage") or {}
            self.stats.streamed_chars = 0
            self._live_input = int(usage.get("input_tokens") or 0)

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
                self._out(Text.assemble(("● ", "green"), (tool_label(block.get("name", "?"), inp), "bold")))
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
            self._out(Text.assemble(("! ", "magenta"), (_between(text, "bash-input"), "bold")))
        elif text.startswith("<bash-stdout>"):
            out, err = _between(text, "bash-stdout"), _between(text, "bash-stderr")
            self._result_lines((out + ("\n" + err if err else "")).strip() or "(no output)", error=bool(err) and not out)
        elif text in ("[Request interrupted by user]", "[Request interrupted by user for tool use]"):
            return  # the Terminal line says it

    def _tool_result(self, block: dict[str, Any], data: Any) -> None:
        name, _ = self._tool_names.pop(block.get("tool_use_id", ""), ("", {}))
        content = block.get("content")
        text = content if isinstance(content, str) else "\n".join(
            c.get("text", "") for c in (content or []) if isinstance(c, dict) and c.get("type") == "text")
        patch = data.get("structuredPatch") if isinstance(data, dict) else None
        if patch and not block.get("is_error"):
            self._diff(patch, created=isinstance(data, dict) and data.get("type") == "create")
            return
        if name == "Read" and not block.get("is_error"):
            text = f"Read {max(1, text.count(chr(10)) + 1 if text else 0)} lines"
        self._result_lines(text or "(no output)", error=bool(block.get("is_error")))

    def _result_lines(self, text: str, *, error: bool) -> None:
        lines = text.splitlines() or [""]
        shown = lines[:RESULT_LINES]
        if len(lines) > RESULT_LINES:
            shown.append(f"… +{len(lines) - RESULT_LINES} lines")
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
        summary = (f"Created with {added} line{'s' * (added != 1)}" if created else
                   f"Updated with {added} addition{'s' * (added != 1)} and {removed} removal{'s' * (removed != 1)}")
        out = Text.assemble(("  ⎿  ", "dim"), (summary, ""))
        for ln in body[:DIFF_LINES]:
            style = "green" if ln.startswith("+") else "red" if ln.startswith("-") else "cyan" if ln.startswith("@@") else "dim"
            out.append("\n     " + ln[:self._width() - 6], style=style)
        if len(body) > DIFF_LINES:
            out.append(f"\n     … +{len(body) - DIFF_LINES} lines", style="dim")
        self._out(out)

    def history(self, messages: list[Message], limit: int = 6) -> None:
        """A resumed session: the last few exchanges, so the user sees where they left off."""
        shown = [m for m in messages if not m.is_meta and (m.text or m.tool_uses())][-limit:]
        for m in shown:
            if m.role == "user" and not m.tool_result_ids():
                self._out(Text.assemble(("> ", "bold"), (m.text[:500], "")))
            elif m.role == "assistant":
                self._assistant(m)

    # -- the status line ---------------------------------------------------------------------------
    def status_line(self, total_cost: float) -> str:
        if not self.busy:
            return ""
        s = self.stats
        elapsed = time.monotonic() - s.started
        spin = SPINNER[int(elapsed * 10) % len(SPINNER)]
        out_tokens = s.output_tokens + s.streamed_chars // 4
        return (f"{spin} Working… ({_duration(elapsed)} · ↑ {_k(s.input_tokens or getattr(self, '_live_input', 0))}"
                f" ↓ {_k(out_tokens)} tokens · ${total_cost:.4f}) · esc to interrupt")


def _between(text: str, tag: str) -> str:
    start, end = text.find(f"<{tag}>"), text.find(f"</{tag}>")
    return text[start + len(tag) + 2:end] if start >= 0 and end >= 0 else ""


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _duration(s: float) -> str:
    s = int(s)
    return f"{s // 60}m {s % 60}s" if s >= 60 else f"{s}s"
