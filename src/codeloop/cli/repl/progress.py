"""The REPL's live status: what is running now, for how long, and what it has cost so far.

Owns the spinner lines above the prompt (as Claude Code draws them): the running tool's name (or
"Thinking"), elapsed time, this turn's tokens (↑ in, ↓ out — estimated live while a response
streams) and the session's cost (the finished calls plus an estimate of the one streaming now);
beneath, while a Bash command runs, the last lines of its output, and while a subagent works,
its current tool, tool count and tokens. Fed by the renderer (tool_use blocks, results, usage),
the conversation's side events (subagents) and the tool context's `live_output` (Bash).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TAIL_LINES = 3          # Bash output lines shown while it runs
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")
CHARS_PER_TOKEN = 4     # the live estimate of streamed output tokens until the call's usage arrives


@dataclass
class Running:
    """A tool call in progress as the progress line shows it."""
    name: str
    label: str
    started: float
    sub_tool: str = ""      # a subagent's current tool (Task)
    sub_tools: int = 0
    sub_tokens: int = 0


@dataclass
class TurnStats:
    """The current turn's start time and token counts for the progress line."""
    started: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    streamed_chars: int = 0                     # this call's output so far, until its usage arrives
    live_usage: dict[str, Any] = field(default_factory=dict)   # message_start usage of this call


class Progress:
    def __init__(self, label: Callable[[str, dict[str, Any]], str]) -> None:
        self.label = label      # `Bash(ls)` for a tool call (repl.render.tool_label)
        self.stats = TurnStats()
        self.running: dict[str, Running] = {}
        # tool_use_id → the last output of a running tool (ToolContext.live_output), when wired
        self.live_output: Callable[[], dict[str, Callable[[], str]]] | None = None

    def reset(self) -> None:
        self.stats = TurnStats(started=time.monotonic())
        self.running.clear()

    # -- feeding -------------------------------------------------------------------------------------
    def tool_started(self, tid: str, name: str, label: str) -> None:
        self.running[tid] = Running(name, label, time.monotonic())

    def tool_finished(self, tid: str) -> None:
        self.running.pop(tid, None)

    def call_finished(self, usage: Any) -> None:
        s = self.stats
        s.input_tokens += usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        s.output_tokens += usage.output_tokens
        s.streamed_chars, s.live_usage = 0, {}

    def side_event(self, ev: Any) -> None:
        """A subagent's messages and task events: its current tool and tokens, under its Task."""
        from codeloop.events import AssistantEvent, SystemEvent

        if isinstance(ev, AssistantEvent):
            parent = self.running.get(ev.message.parent_tool_use_id or "")
            if parent is None:
                return
            for b in ev.message.content:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    parent.sub_tool = self.label(b.get("name", "?"), b.get("input") or {})
                    parent.sub_tools += 1
            usage = ev.message.usage or {}
            parent.sub_tokens += sum(int(usage.get(k) or 0) for k in (
                "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        elif isinstance(ev, SystemEvent) and ev.subtype == "task_progress":
            parent = self.running.get(str(ev.data.get("tool_use_id") or ""))
            usage = ev.data.get("usage") or {}
            if parent is not None:
                parent.sub_tokens = max(parent.sub_tokens, int(usage.get("total_tokens") or 0))
                parent.sub_tools = max(parent.sub_tools, int(usage.get("tool_uses") or 0))

    # -- the numbers ---------------------------------------------------------------------------------
    def turn_tokens(self) -> tuple[int, int]:
        s = self.stats
        live_in = sum(int(s.live_usage.get(k) or 0) for k in (
            "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        return s.input_tokens + live_in, s.output_tokens + s.streamed_chars // CHARS_PER_TOKEN

    def live_cost(self, model: str) -> float:
        """The streaming call's cost so far (its usage, hence the session's cost, comes at its end)."""
        s = self.stats
        if not s.live_usage and not s.streamed_chars:
            return 0.0
        from codeloop.providers.pricing import cost_usd
        from codeloop.usage import Usage

        u = Usage.from_api({**s.live_usage, "output_tokens": s.streamed_chars // CHARS_PER_TOKEN})
        try:
            return cost_usd(u, model)
        except Exception:  # an unknown model has no price: the finished calls' cost still shows
            return 0.0

    # -- the lines -----------------------------------------------------------------------------------
    def lines(self, session_cost: float, width: int) -> list[str]:
        now = time.monotonic()
        elapsed = now - self.stats.started
        spin = SPINNER[int(elapsed * 10) % len(SPINNER)]
        current = next(reversed(self.running.values()), None)
        verb = f"Running {current.label}" if current is not None else "Thinking"
        tin, tout = self.turn_tokens()
        head = (f"{spin} {verb}… ({duration(elapsed)} · ↑ {k(tin)} ↓ {k(tout)} tokens · "
                f"session ${session_cost:.4f} · esc to interrupt)")
        out = [clip(head, width)]
        for tid, r in list(self.running.items())[-3:]:
            if r.sub_tool or r.sub_tokens:
                out.append(clip(f"  ⎿  {r.sub_tool or 'starting'} · {r.sub_tools} tool use{'s' * (r.sub_tools != 1)}"
                                f" · {k(r.sub_tokens)} tokens · {duration(now - r.started)}", width))
            tail = self._tail(tid)
            if tail:
                out += [clip(("  ⎿  " if i == 0 else "     ") + ln, width) for i, ln in enumerate(tail)]
        return out

    def _tail(self, tid: str) -> list[str]:
        live = self.live_output() if self.live_output is not None else {}
        get = live.get(tid)
        if get is None:
            return []
        try:
            text = get()
        except Exception:  # the tool finished meanwhile
            return []
        # a program's colours and cursor moves must not reach the toolbar
        lines = [_CONTROL.sub("", ln).rstrip() for ln in text.replace("\r", "\n").splitlines()]
        lines = [ln for ln in lines if ln.strip()]
        return lines[-TAIL_LINES:]


def clip(s: str, width: int) -> str:
    s = s.expandtabs(4)
    return s if len(s) <= width - 1 else s[:max(1, width - 2)] + "…"


def k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def duration(s: float) -> str:
    s = int(s)
    return f"{s // 60}m {s % 60}s" if s >= 60 else f"{s}s"


def restore_cost(conv: Any) -> None:
    """A resumed session's cost and usage, from the usage its transcript's responses carry (a
    response split over several entries repeats its usage under one id: counted once)."""
    if conv.cost_usd or conv.usage_by_model:
        return
    from codeloop.providers.pricing import cost_usd
    from codeloop.usage import Usage

    by_id: dict[Any, Any] = {}
    for i, m in enumerate(conv.messages):
        if m.role == "assistant" and m.usage and m.model != "<synthetic>":
            by_id[m.id if m.id is not None else ("anon", i)] = m
    for m in by_id.values():
        model = m.model or conv.config.model
        u = Usage.from_api(m.usage)
        conv.usage_by_model.setdefault(model, Usage()).add(u)
        try:
            conv.cost_usd += cost_usd(u, model)
        except Exception:  # a model without a price adds nothing
            pass


def exit_summary(conv: Any, wall_s: float) -> str:
    """What Claude Code prints when the session ends: the cost, and how to come back to it."""
    u = conv.usage
    lines = [f"Total cost:            ${conv.cost_usd:.4f}",
             f"Total duration (API):  {duration(conv.api_duration_ms / 1000)}",
             f"Total duration (wall): {duration(wall_s)}",
             f"Usage:                 {k(u.input_tokens)} input, {k(u.output_tokens)} output, "
             f"{k(u.cache_read_input_tokens)} cache read, {k(u.cache_creation_input_tokens)} cache write"]
    if conv.config.persist and conv.transcript_path.exists() and conv.messages:
        lines += ["", "Resume this session with:", f"codeloop --resume {conv.session_id}"]
    return "\n".join(lines) + "\n"
