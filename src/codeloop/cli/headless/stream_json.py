"""`-p --input-format stream-json`: a multi-turn session over JSONL stdin/stdout, as the SDKs drive it.

Owns the session runner: a reader task that parses stdin lines, answers inbound control
requests at once (so `interrupt` works mid-query), resolves the answers to our outbound
requests (`can_use_tool`, `hook_callback`) by request_id, and queues user messages; the main
task runs the queued messages in order, one query each, each ending with its own `result`
line, on one Conversation. Stdin EOF ends the session after the current query (stdin is read
by stdin_reader.py). Output shapes are print mode's (`cli.output`: `Printer`, `build_result`),
so every line matches `-p`.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, TextIO

from codeloop.abort import AbortController, AbortReason
from codeloop.cli.headless import control, loop_signals
from codeloop.cli.headless.control import ControlError, ControlSubtype
from codeloop.cli.headless.output import (EXIT_ERROR, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM, STRUCTURED_RETRY_LIMIT,
                                          BudgetGuard, Printer, apply_structured, build_result, emit, error_result,
                                          message_line, status_line)
from codeloop.events import Event, SystemEvent, Terminal, TerminalReason, UserEvent
from codeloop.messages import Message, new_uuid, user_message
from codeloop.session.options import RunOptions
from codeloop.session.structured import StructuredEvent, run_structured
from codeloop.tools.base import PermissionBehavior, PermissionDecision

_EOF = object()
_WAKE = object()   # a scheduled prompt came due
_STDIO = "stdio"
_CLEAR = frozenset({"/clear", "/reset", "/new"})


class StreamJsonSession:
    """One stream-json session. Made before its Conversation: the session's permission prompts
    (`--permission-prompt-tool stdio`) and side events are this object's to answer and print."""

    def __init__(self, options: RunOptions, out: TextIO, lines: AsyncIterator[str]) -> None:
        self.options, self.out, self.lines = options, out, lines
        self.conv: Any = None
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.abort: AbortController | None = None
        self.hooks = control.HookRegistry()
        self.stdin_closed = False
        self.last_error = False
        self.signal: int | None = None
        self.printer: Printer | None = None     # the running query's
        self.forward_subagent_text = False      # initialize's forwardSubagentText
        schema = options.limits.json_schema
        self.schema = dict(schema) if schema is not None else None
        budget = options.limits.max_budget_usd
        self.budget = BudgetGuard(budget) if budget is not None else None

    def host(self) -> Any:
        """What this session lends the assembly: the SDK answers permission prompts (stdio)."""
        from codeloop.session.assembly import SessionHost

        ask = self.ask_sdk if self.options.permissions.prompt_tool == _STDIO else None
        return SessionHost(ask_user=ask, listeners=[self.side_event])

    def attach(self, conv: Any) -> None:
        from codeloop.cli.headless.sdk_glue import SdkGlue

        self.conv = conv
        self.glue = SdkGlue(self, mirror=self.options.output.session_mirror)
        conv.queue.subscribe(self._queue_changed)

    def _queue_changed(self) -> None:
        # A scheduled prompt came due (CronCreate, ScheduleWakeup): wake the idle loop to run it.
        if _scheduled(self.conv.queue):
            self.inbox.put_nowait(_WAKE)

    def side_event(self, ev: Event) -> None:
        """Subagent messages and task events go out with the running query's printer."""
        if self.printer is not None:
            self.printer.side_event(ev, forward_text=self.forward_subagent_text)

    # -- stdin -------------------------------------------------------------------------------------
    async def read(self) -> None:
        try:
            async for line in self.lines:
                if line.strip():
                    self.dispatch(line)
        finally:
            self.stdin_closed = True
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(EOFError("stdin closed before the SDK answered"))
            self.inbox.put_nowait(_EOF)

    def dispatch(self, line: str) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            sys.stderr.write(f"codeloop: skipped a stream-json input line that is not JSON: {line[:120]!r}\n")
            return
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "control_response":
            resp = msg.get("response") or {}
            fut = self.pending.pop(resp.get("request_id", ""), None)
            if fut is not None and not fut.done():
                fut.set_result(resp)
        elif kind == "control_request":
            self.on_control(msg.get("request_id"), msg.get("request") or {})
        elif kind == "user":
            self.inbox.put_nowait(msg)
        elif kind in ("keep_alive", "control_cancel_request", "update_environment_variables"):
            pass
        else:
            sys.stderr.write(f"codeloop: ignored a stream-json input line of type {kind!r}\n")

    def on_control(self, rid: Any, req: dict[str, Any]) -> None:
        subtype = req.get("subtype")
        try:
            if subtype == ControlSubtype.INITIALIZE.value:
                response = self.glue.initialize(req)  # hooks, agents, SDK MCP servers
            elif subtype == ControlSubtype.INTERRUPT.value:
                # as Esc in Claude Code: the user stopped the turn (the transcript says so)
                if self.abort is not None:
                    self.abort.abort(AbortReason.USER)
                response = {}
            else:
                response = control.handle_simple(self.conv, req)
        except ControlError as exc:
            emit(self.out, control.error(rid, str(exc)))
            return
        emit(self.out, control.success(rid, response))
        if subtype == ControlSubtype.SET_PERMISSION_MODE.value:   # Claude Code announces the new mode
            emit(self.out, status_line(self.conv.session_id, None, permissionMode=self.conv.config.policy.mode.value))

    async def ask(self, subtype: ControlSubtype, **fields: Any) -> dict[str, Any]:
        """Send an outbound request; the SDK's answer, or raise (error answer, EOF, abort)."""
        if self.stdin_closed:
            raise EOFError("stdin is closed: the SDK cannot answer")
        rid, req = control.request(subtype, **fields)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        emit(self.out, req)
        try:
            resp = await fut
        finally:
            self.pending.pop(rid, None)
        if resp.get("subtype") == "error":
            raise ControlError(str(resp.get("error") or "the SDK answered with an error"))
        return resp.get("response") or {}

    # -- permissions and hooks ---------------------------------------------------------------------
    async def ask_sdk(self, tool: Any, inp: Any, block: dict[str, Any]) -> PermissionDecision:
        try:
            answer = await self.ask(ControlSubtype.CAN_USE_TOOL, tool_name=tool.name, input=block.get("input") or {},
                                    permission_suggestions=[], blocked_path=None, tool_use_id=block.get("id"))
        except (ControlError, EOFError) as exc:
            return PermissionDecision(PermissionBehavior.DENY, f"Permission to use {tool.name} was not granted: {exc}")
        decision, interrupt = control.permission_decision(tool.name, answer)
        if interrupt and self.abort is not None:
            self.abort.abort(AbortReason.USER)
        return decision

    # -- queries -----------------------------------------------------------------------------------
    async def run(self) -> int:
        reader = asyncio.ensure_future(self.read())
        try:
            while (msg := await self.inbox.get()) is not _EOF:
                if msg is _WAKE:
                    await self.run_scheduled()
                else:
                    await self.query(msg)
                if self.signal is not None:
                    break
        finally:
            reader.cancel()
            try:
                await reader
            except (asyncio.CancelledError, Exception):
                pass
        if self.signal is not None:
            return EXIT_SIGINT if self.signal == signal.SIGINT else EXIT_SIGTERM
        return EXIT_ERROR if self.last_error else EXIT_OK

    async def run_scheduled(self) -> None:
        """Each due scheduled prompt runs as a turn of its own, between the SDK's messages."""
        due = _scheduled(self.conv.queue)
        self.conv.queue.remove(due)
        for cmd in due:
            await self.query({"type": "user", "message": {"role": "user", "content": cmd.value}})

    def _prompt_message(self, msg: dict[str, Any]) -> Message | None:
        raw = msg.get("message")
        body = raw if isinstance(raw, dict) else {}
        content = body.get("content")
        if isinstance(content, str) and content.strip():
            blocks: Any = content
        elif isinstance(content, list) and content:
            blocks = [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
        else:
            return None
        extra = {"uuid": msg["uuid"]} if isinstance(msg.get("uuid"), str) and msg["uuid"] else {}
        return user_message(blocks, sent_as_text=isinstance(blocks, str), **extra)

    def _expanded(self, prompt: Message) -> Message:
        from codeloop.input.custom_commands import expanded_prompt
        from codeloop.session.store import config_dir

        found = expanded_prompt(prompt.text, self.options.cwd, config_dir(), self.options.plugins)
        return prompt if found is None else user_message(found[0], sent_as_text=True, uuid=prompt.uuid)

    async def query(self, msg: dict[str, Any]) -> None:
        conv, started = self.conv, time.monotonic()
        prompt = self._prompt_message(msg)
        if prompt is None:
            emit(self.out, error_result(conv.session_id, ["A stream-json user message needs non-empty "
                                                           "message.content (a string or content blocks)"]))
            self.last_error = True
            return
        if self.budget is not None and self.budget.check(conv):
            self._result(error_result(conv.session_id, [self.budget.error_text(conv)],
                                      subtype="error_max_budget_usd"), msg)
            return
        await self.glue.ready()
        command, _, focus = prompt.text.strip().partition(" ")
        from codeloop.input.commands import slash_commands_enabled
        if command in _CLEAR and len(prompt.content) == 1 and slash_commands_enabled():
            await self.clear(started, msg)
            return
        if command.startswith("/mcp__") and len(prompt.content) == 1 and conv.mcp is not None:
            from codeloop.input.mcp_input import expand_message
            try:   # a connected MCP server's prompt: what the server returns is what is sent
                prompt = await expand_message(conv, prompt)
            except ValueError as exc:
                self._result(error_result(conv.session_id, [str(exc)]), msg)
                return
        printer = self.printer = Printer(self.options.output, self.out, conv)
        printer.init()  # Claude Code sends system/init at the start of every turn
        printer.prompt_uuid = prompt.uuid
        if self.options.output.replay_user_messages:
            emit(self.out, {**message_line(prompt, conv.session_id), "isReplay": True})
        self.abort = abort = AbortController()
        conv.last_terminal = None
        structured: dict[str, Any] = {}
        if command.startswith("/") and command != "/compact" and len(prompt.content) == 1 \
                and slash_commands_enabled():   # a custom or plugin command expands into its prompt
            prompt = self._expanded(prompt)
        if command == "/compact" and len(prompt.content) == 1 and slash_commands_enabled():
            emit(self.out, status_line(conv.session_id, "compacting"))
            events = conv.compact(focus.strip())
        elif self.schema is not None:
            events = run_structured(conv, prompt, self.schema, STRUCTURED_RETRY_LIMIT, abort=abort)
        else:
            events = conv.submit(prompt, abort=abort)

        def auto_started(trigger: str) -> None:    # automatic compactions, said as Claude Code says them
            if trigger == "auto":
                emit(self.out, status_line(conv.session_id, "compacting"))

        def auto_ended(trigger: str, ok: bool) -> None:
            if trigger == "auto":
                emit(self.out, status_line(conv.session_id, None, compact_result="success" if ok else "failed"))
        conv.compactor.on_start.append(auto_started)
        conv.compactor.on_end.append(auto_ended)
        try:
            async for ev in events:
                if isinstance(ev, SystemEvent) and ev.subtype in (StructuredEvent.OUTPUT.value,
                                                                  StructuredEvent.FAILED.value):
                    structured[ev.subtype] = ev.data
                    continue
                if isinstance(ev, UserEvent) and ev.message.uuid == prompt.uuid:
                    continue
                printer.event(ev)
        except Exception as exc:  # one broken query must not end the session
            self._result(error_result(conv.session_id, [f"{type(exc).__name__}: {exc}"],
                                      duration_ms=(time.monotonic() - started) * 1000), msg)
            return
        finally:
            conv.compactor.on_start.remove(auto_started)
            conv.compactor.on_end.remove(auto_ended)
            self.abort = None
            self.printer = None
            conv.sync()
            self.glue.mirror(lambda frame: emit(self.out, frame))
        if command == "/compact" and len(prompt.content) == 1 and slash_commands_enabled():
            ok = conv.last_terminal is None or conv.last_terminal.reason is TerminalReason.COMPLETED
            emit(self.out, status_line(conv.session_id, None, compact_result="success" if ok else "failed"))
        result = build_result(conv, conv.last_terminal, started=started, final_text=printer.final_text,
                              stop_reason=printer.stop_reason)
        apply_structured(result, structured, printer.final_text)
        if self.budget is not None and not result["is_error"] and self.budget.check(conv):
            result.update(subtype="error_max_budget_usd", is_error=True, errors=[self.budget.error_text(conv)])
            result.pop("result", None)
        self._result(result, msg)

    async def clear(self, started: float, msg: dict[str, Any]) -> None:
        """`/clear` (`/reset`, `/new`): a fresh session on the same connection. Claude Code says so
        with a `conversation_reset` line stamped with the outgoing session's id; the result and
        everything after carry the new one."""
        from codeloop.session.assembly import successor

        old = self.conv
        self.conv = new = successor(old)
        new.start_source = "clear"
        await old.aclose("clear")
        emit(self.out, {"type": "conversation_reset", "new_conversation_id": new_uuid(), "uuid": new_uuid(),
                        "session_id": old.session_id})
        result = build_result(new, Terminal(TerminalReason.COMPLETED), started=started, final_text="",
                              stop_reason=None)
        self._result(result, msg)

    def _result(self, result: dict[str, Any], msg: dict[str, Any] | None = None) -> None:
        """Write the turn's result; the host's `origin` stamp and the prompt's uuid go back on it."""
        if msg is not None:
            if isinstance(msg.get("origin"), dict):
                result["origin"] = msg["origin"]
            if isinstance(msg.get("uuid"), str) and msg["uuid"]:
                result.update(user_message_uuid=msg["uuid"], user_message_uuids=[msg["uuid"]])
        self.last_error = bool(result.get("is_error"))
        emit(self.out, result)

    def on_signal(self, signum: int) -> None:
        self.signal = signum
        if self.abort is not None:
            self.abort.abort(AbortReason.USER if signum == signal.SIGINT else AbortReason.SIGNAL)
        self.inbox.put_nowait(_EOF)


def _scheduled(queue: Any) -> list[Any]:
    from codeloop.loop.queue import Priority, QueueMode

    return [c for c in queue.peek_all()
            if c.mode is QueueMode.PROMPT and c.priority is Priority.LATER and c.agent_id is None]


async def run_stream_json(options: RunOptions, out: TextIO, lines: AsyncIterator[str] | None = None) -> int:
    """Serve one stream-json session for `options`; the exit status. Closes the conversation."""
    from codeloop.cli.lifecycle import install_daemon_executor
    from codeloop.cli.startup.local_offer import show_progress
    from codeloop.session.assembly import open_session
    from codeloop.session.options import SetupError

    install_daemon_executor(asyncio.get_running_loop())   # a stuck tool thread never holds the process at exit
    from codeloop.cli.headless.stdin_reader import stdin_lines

    session = StreamJsonSession(options, out, lines if lines is not None else stdin_lines())
    host = session.host()
    finish = show_progress(options, host)   # the embedded model's one-time assembly, on stderr
    try:
        conv, warnings = await open_session(options, host)
    except SetupError as exc:
        emit(out, error_result(options.history.requested_id, [str(exc)]))
        return EXIT_ERROR
    finally:
        finish()
    for w in warnings:
        sys.stderr.write(f"codeloop: warning: {w}\n")
    from codeloop.cli.startup import collector
    collector.startup_done()   # the session is built: collect again (start-up's objects frozen)
    return await serve(session, conv)


async def serve(session: StreamJsonSession, conv: Any) -> int:
    """Run `session` on `conv` (built with `session.host()`) until stdin ends; closes the conversation."""
    session.attach(conv)
    give_back_signals = None
    try:
        if threading.current_thread() is threading.main_thread():
            give_back_signals = loop_signals.handle(session.on_signal)
        return await session.run()
    finally:
        if give_back_signals is not None:
            give_back_signals()
        await conv.aclose()
        closer = getattr(conv.provider, "aclose", None)
        if closer is not None:
            await closer()


def run_stream_json_mode(options: RunOptions) -> int:
    """The headless entry for `--input-format stream-json`."""
    try:
        return loop_signals.run(run_stream_json(options, sys.stdout))
    except KeyboardInterrupt:
        return EXIT_SIGINT
