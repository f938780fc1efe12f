"""StreamingToolExecutor (spec 004 §9.2): start tools while the model is still streaming.

Owns the scheduling of one assistant response's tool_use blocks: concurrency-safe tools run in
parallel, the others run alone and in order; a failing Bash cancels its siblings; an abort stops
queued tools from starting, and an interrupt (the user typed while tools run) also cancels the
running tools that declare themselves `interruptible`; `discard` throws everything away for a
fallback/retry. Every tool
added gets exactly one ToolUpdate (unless discarded), so no tool_use is ever left dangling.
Results come out in completion order; the loop puts them back into tool_use order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from codeloop.loop.tool_runner import CanUseTool, ToolRun, run_tool_use
from codeloop.messages import ENDED_BY_MODEL_TOOL_RESULT, INTERRUPT_MESSAGE_FOR_TOOL_USE, Message, tool_result_message
from codeloop.tools.base import Tool, ToolContext, ToolError
from codeloop.tools.registry import find_tool, parse_tool_input

# Only Bash failures cascade: a failed command usually means the commands run beside it (often
# its dependants) are pointless, whereas a failed Read or Grep says nothing about its siblings.
CASCADING_TOOL = "Bash"
DESCRIPTION_CHARS = 40


@dataclass
class ToolUpdate:
    """A finished tool call's result message as the streaming executor reports it."""
    message: Message            # the user message with the tool_result
    tool_use_id: str
    tool_name: str
    denied: bool = False
    tool_input: dict = field(default_factory=dict)
    prevent_continuation: bool = False   # a PostToolUse hook said `continue: false`
    stop_reason: str | None = None


@dataclass
class _Entry:
    """A tool_use block in the streaming executor and its run status."""
    block: dict[str, Any]
    invalid_json: str | None
    safe: bool
    status: Literal["queued", "running", "done"] = "queued"
    task: asyncio.Task | None = None

    @property
    def id(self) -> str:
        return self.block["id"]

    @property
    def name(self) -> str:
        return self.block.get("name", "")


class StreamingToolExecutor:
    def __init__(self, tools: list[Tool], can_use_tool: CanUseTool, ctx: ToolContext, *, run=run_tool_use) -> None:
        self._tools = tools
        self._can_use_tool = can_use_tool
        self._ctx = ctx
        self._run = run
        self._entries: list[_Entry] = []
        self._ready: list[ToolUpdate] = []      # finished, not yet handed out
        self._tasks: set[asyncio.Task] = set()  # kept so tasks are not garbage-collected mid-run
        self._errored: str | None = None        # "Bash(cmd)" of the Bash call that failed
        self._discarded = False
        # An executor is made just before each request goes out: once the request is out, pydantic
        # and the common tools are imported while the model thinks, unless a tool call is already
        # here by then (plain inputs need no pydantic: `tools.plain_input`).
        from codeloop.tools.lazy import warm_later
        if (arm := warm_later(tools, lambda: not self._entries and not self._discarded)) is not None:
            from codeloop.providers.transport import call_when_sent
            call_when_sent(arm)

    # -- feeding ------------------------------------------------------------------------------

    def add_tool(self, block: dict, *, invalid_json: str | None = None) -> None:
        if self._discarded:
            return
        entry = _Entry(block, invalid_json, self._is_safe(block, invalid_json))
        self._entries.append(entry)
        if self._errored is not None:
            self._finish(entry, self._cancelled_update(entry))
        elif self._ctx.abort.aborted:
            self._finish(entry, self._interrupted_update(entry))
        else:
            self._schedule()

    def _is_safe(self, block: dict, invalid_json: str | None) -> bool:
        tool = find_tool(self._tools, block.get("name", ""))
        if tool is None or invalid_json is not None:
            return True  # run_tool_use answers with an error before anything can happen
        try:
            return bool(tool.is_concurrency_safe(parse_tool_input(tool, block.get("input") or {})))
        except ToolError:
            return True  # invalid input: same, an error result and no side effects
        except Exception:
            return False  # a buggy predicate: running it alone is the cautious choice

    def _interruptible(self, entry: _Entry) -> bool:
        tool = find_tool(self._tools, entry.name)
        return bool(getattr(tool, "interruptible", False)) if tool is not None else False

    # -- scheduling ---------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._discarded:
            return
        if self._ctx.abort.aborted:
            # Running tools watch the abort themselves; queued ones must never start. Typing while
            # tools run (AbortReason.INTERRUPT) cancels the ones that declare cancelling harmless.
            from codeloop.abort import AbortReason

            interrupt = self._ctx.abort.reason is AbortReason.INTERRUPT
            for e in self._entries:
                if e.status == "queued":
                    self._finish(e, self._interrupted_update(e))
                elif e.status == "running" and interrupt and self._interruptible(e):
                    assert e.task is not None
                    e.task.cancel()
                    self._finish(e, self._interrupted_update(e))
            return
        for e in self._entries:
            if e.status != "queued":
                continue
            running = [r for r in self._entries if r.status == "running"]
            if not running or (e.safe and all(r.safe for r in running)):
                self._start(e)
            elif not e.safe:
                break  # nothing may jump past a waiting exclusive tool: its effects order later ones

    def _start(self, entry: _Entry) -> None:
        entry.status = "running"
        entry.task = asyncio.create_task(self._execute(entry), name=f"tool:{entry.name}:{entry.id}")
        self._tasks.add(entry.task)

    async def _execute(self, entry: _Entry) -> None:
        try:
            run: ToolRun = await self._run(entry.block, self._tools, self._ctx, self._can_use_tool,
                                           invalid_json=entry.invalid_json)
            update = ToolUpdate(run.message, entry.id, run.tool_name or entry.name, run.denied,
                                dict(entry.block.get("input") or {}), run.prevent_continuation, run.stop_reason)
        except asyncio.CancelledError:
            raise  # discard or a sibling's failure: whoever cancelled has already answered
        except Exception as exc:  # run_tool_use catches tool errors, so this is a bug: still answer
            update = self._error_update(entry, f"{entry.name} failed unexpectedly: {type(exc).__name__}: {exc}")
        # A tool that swallowed its cancellation returns here after it was already answered.
        if self._discarded or entry.status == "done":
            return
        self._finish(entry, update)
        # A denied command never ran, so it says nothing about its siblings: only failures cascade.
        if entry.name == CASCADING_TOOL and update.message.content[0].get("is_error") and not update.denied:
            self._cascade(entry)
        self._schedule()

    def _cascade(self, failed: _Entry) -> None:
        # After an abort a Bash error is just "Command was aborted": the siblings' own results
        # (also aborted, or finished) are more truthful than a cancellation.
        if self._errored is not None or self._ctx.abort.aborted:
            return
        self._errored = _describe(failed.block)
        for e in self._entries:
            if e.status == "done":
                continue
            if e.task is not None:
                e.task.cancel()  # Bash kills its process group on cancellation
            self._finish(e, self._cancelled_update(e))

    def _finish(self, entry: _Entry, update: ToolUpdate) -> None:
        entry.status = "done"
        self._ready.append(update)

    # -- results ------------------------------------------------------------------------------

    def get_completed_results(self) -> list[ToolUpdate]:
        if self._discarded:
            return []
        self._schedule()  # answers queued tools if the query was aborted since the last event
        out, self._ready = self._ready, []
        return out

    async def get_remaining_results(self) -> AsyncIterator[ToolUpdate]:
        while True:
            for update in self.get_completed_results():
                yield update
            if self._discarded:
                return
            # Cancelled tasks are still awaited, so a killed Bash is reaped before we return.
            pending = {t for t in self._tasks if not t.done()}
            if not pending:
                # The scheduler starts a tool whenever none runs, so only a bug could leave one
                # unanswered here: answer it rather than spin or leave a dangling tool_use.
                for e in self._entries:
                    if e.status != "done":
                        self._finish(e, self._error_update(e, f"{e.name} was never started"))
                for update in self.get_completed_results():
                    yield update
                return
            abort_wait = None
            if not self._ctx.abort.aborted:
                abort_wait = asyncio.ensure_future(self._ctx.abort.wait())
            try:
                await asyncio.wait(pending | ({abort_wait} if abort_wait else set()),
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                if abort_wait is not None:
                    abort_wait.cancel()

    def discard(self) -> None:
        self._discarded = True
        self._ready.clear()
        for t in self._tasks:
            t.cancel()

    # -- synthetic results ----------------------------------------------------------------------

    def _error_update(self, entry: _Entry, text: str, *, wrap: bool = True) -> ToolUpdate:
        content = f"<tool_use_error>{text}</tool_use_error>" if wrap else text
        msg = tool_result_message(entry.id, content, is_error=True,
                                  tool_use_result=f"Error: {text}" if wrap else text)
        return ToolUpdate(msg, entry.id, entry.name, False, dict(entry.block.get("input") or {}))

    def _cancelled_update(self, entry: _Entry) -> ToolUpdate:
        return self._error_update(entry, f"Cancelled: parallel tool call {self._errored} errored")

    def _interrupted_update(self, entry: _Entry) -> ToolUpdate:
        # Same shape as query.py's missing_tool_results for an interrupted turn.
        from codeloop.abort import AbortReason

        text = (ENDED_BY_MODEL_TOOL_RESULT
                if self._ctx.abort.reason is AbortReason.END_CONVERSATION else INTERRUPT_MESSAGE_FOR_TOOL_USE)
        return self._error_update(entry, text, wrap=False)


def _describe(block: dict[str, Any]) -> str:
    raw = block.get("input")
    inp = raw if isinstance(raw, dict) else {}
    command, name = str(inp.get("command") or ""), block.get("name", "")
    if not command:
        return name
    if len(command) > DESCRIPTION_CHARS:
        command = command[:DESCRIPTION_CHARS] + "…"
    return f"{name}({command})"
