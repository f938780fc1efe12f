"""Headless print mode (-p): one prompt in, text | json | stream-json out, exit status out.

Output shapes follow Claude Code's, so scripts written against `claude -p` keep working.
SIGINT/SIGTERM abort the query cleanly: tools get their tool_results, the transcript is
synced, and a result line is still printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any, TextIO

from codeloop.abort import AbortController, AbortReason
from codeloop.events import ApiCallEvent, AssistantEvent, CompactBoundary, Event, StreamEvent, SystemEvent, Terminal, UserEvent
from codeloop.loop.state import TerminalReason
from codeloop.messages import new_uuid

EXIT_OK, EXIT_ERROR, EXIT_SIGINT, EXIT_SIGTERM = 0, 1, 130, 143
STRUCTURED_RETRY_LIMIT = 2


def _emit(out: TextIO, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


def _read_prompt(args: argparse.Namespace) -> str:
    if args.prompt is not None:
        return args.prompt
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.read()


def error_result(session_id: str, errors: list[str], *, subtype: str = "error_during_execution",
                 duration_ms: float = 0) -> dict[str, Any]:
    return {"type": "result", "subtype": subtype, "is_error": True, "duration_ms": int(duration_ms),
            "duration_api_ms": 0, "num_turns": 0, "stop_reason": None, "session_id": session_id,
            "total_cost_usd": 0, "usage": {}, "modelUsage": {}, "permission_denials": [],
            "errors": errors, "uuid": new_uuid()}


def build_result(conv, terminal: Terminal | None, *, started: float, final_text: str,
                 stop_reason: str | None) -> dict[str, Any]:
    from codeloop.providers.models import model_info

    reason = terminal.reason if terminal else TerminalReason.ABORTED_STREAMING
    subtype = {TerminalReason.COMPLETED: "success", TerminalReason.MAX_TURNS: "error_max_turns",
               TerminalReason.BUDGET_EXCEEDED: "error_max_budget_usd"}.get(reason, "error_during_execution")
    usage = conv.usage.to_dict()
    usage["server_tool_use"] = {"web_search_requests": 0, "web_fetch_requests": 0}
    usage["service_tier"] = "standard"
    result: dict[str, Any] = {
        "type": "result", "subtype": subtype, "is_error": subtype != "success",
        "duration_ms": int((time.monotonic() - started) * 1000), "duration_api_ms": int(conv.api_duration_ms),
        "num_turns": terminal.turn_count if terminal else 0, "stop_reason": stop_reason,
        "session_id": conv.session_id, "total_cost_usd": round(conv.cost_usd, 8), "usage": usage,
        "modelUsage": {m: {"inputTokens": u.input_tokens, "outputTokens": u.output_tokens,
                           "cacheReadInputTokens": u.cache_read_input_tokens,
                           "cacheCreationInputTokens": u.cache_creation_input_tokens,
                           "webSearchRequests": 0, "costUSD": round(u.cost_usd(m), 8),
                           "contextWindow": model_info(m).context_window,
                           "maxOutputTokens": model_info(m).max_output_tokens}
                       for m, u in conv.usage_by_model.items()},
        "permission_denials": list(conv.permission_denials),
        "terminal_reason": reason.value, "uuid": new_uuid()}
    if subtype == "success":
        result["result"] = final_text
    elif reason is TerminalReason.MAX_TURNS:
        result["errors"] = [f"Reached maximum number of turns ({conv.config.max_turns})"]
    elif reason is TerminalReason.BUDGET_EXCEEDED:
        result["errors"] = [f"Reached the maximum budget (${conv.config.max_budget_usd}); "
                            f"spent ${conv.cost_usd:.4f}"]
    else:
        result["errors"] = [terminal.error if terminal and terminal.error else _reason_text(reason)]
    return result


ENDED_MESSAGE = ("The model ended this conversation (EndConversation). It cannot be continued; "
                 "start a new session.")


def apply_structured(result: dict[str, Any], structured: dict[str, Any]) -> dict[str, Any]:
    """Fold the structured-output outcome (`--json-schema`) into a result line."""
    from codeloop.loop.structured import StructuredEvent

    if StructuredEvent.OUTPUT.value in structured:
        result["structured_output"] = structured[StructuredEvent.OUTPUT.value]["structured_output"]
    elif StructuredEvent.FAILED.value in structured and not result["is_error"]:
        result.update(subtype="error_max_structured_output_retries", is_error=True,
                      errors=structured[StructuredEvent.FAILED.value]["errors"])
        result.pop("result", None)
    return result


def _reason_text(reason: TerminalReason) -> str:
    return {TerminalReason.ABORTED_STREAMING: "Interrupted while the model was responding",
            TerminalReason.ABORTED_TOOLS: "Interrupted while tools were running",
            TerminalReason.ENDED_BY_MODEL: ENDED_MESSAGE}.get(
        reason, f"Query ended: {reason.value}")


def message_line(msg, session_id: str) -> dict[str, Any]:
    """An `assistant` or `user` stream-json line, in Claude Code's shape."""
    obj: dict[str, Any] = {"type": msg.role, "message": msg.api_message(),
                           "parent_tool_use_id": msg.parent_tool_use_id, "session_id": session_id, "uuid": msg.uuid}
    if msg.is_api_error:
        obj["error"] = "unknown"
    if msg.role == "user" and msg.tool_use_result is not None:
        obj["tool_use_result"] = msg.tool_use_result
    return obj


class _Printer:
    """Writes events in the chosen format; tracks what the final result needs."""

    def __init__(self, args: argparse.Namespace, conv, out: TextIO) -> None:
        self.fmt, self.partial, self.conv, self.out = args.output_format, args.include_partial_messages, conv, out
        self.final_text, self.stop_reason = "", None
        self.prompt_uuid: str | None = None
        self._last_id: str | None = None

    def init(self) -> None:
        if self.fmt != "stream-json":
            return
        from codeloop.tools.deferred import enabled_tools

        c = self.conv
        tools = [t.name for t in enabled_tools(c.tool_pool(), c.tool_context)]
        mcp_servers = c.mcp.statuses() if c.mcp is not None else []
        agents = sorted(c.config.agent_definitions) or ["general-purpose"]
        _emit(self.out, {"type": "system", "subtype": "init", "cwd": str(c.config.cwd), "session_id": c.session_id,
                         "tools": tools, "mcp_servers": mcp_servers, "model": c.config.model,
                         "permissionMode": c.config.policy.mode.value, "slash_commands": [],
                         "apiKeySource": getattr(c, "api_key_source", "none"), "claude_code_version": _version(),
                         "output_style": "default", "agents": agents, "skills": [], "plugins": [],
                         "uuid": new_uuid()})

    def event(self, ev: Event) -> None:
        sid = self.conv.session_id
        if isinstance(ev, AssistantEvent):
            msg = ev.message
            if not msg.is_api_error:
                text = msg.text
                if msg.id != self._last_id:  # the result is the final response's text only
                    self.final_text = ""
                self.final_text += text
                self._last_id = msg.id
            if self.fmt == "stream-json":
                _emit(self.out, message_line(msg, sid))
        elif isinstance(ev, ApiCallEvent):
            self.stop_reason = ev.stop_reason
        elif isinstance(ev, UserEvent):
            if self.fmt == "stream-json" and ev.message.uuid != self.prompt_uuid:
                _emit(self.out, message_line(ev.message, sid))
        elif isinstance(ev, SystemEvent):
            if ev.subtype == "compact_skipped":
                self.final_text = ev.text
            if self.fmt == "stream-json":
                line = {"type": "system", "subtype": ev.subtype, **ev.data, "session_id": sid, "uuid": new_uuid()}
                if ev.text and "message" not in line:
                    line["message"] = ev.text   # e.g. "Switched to X due to high demand for Y"
                _emit(self.out, line)
            elif ev.level != "info" and ev.subtype != "api_retry":  # text mode: one error line, not a retry log
                sys.stderr.write(f"codeloop: {ev.text}\n")
        elif isinstance(ev, CompactBoundary):
            if ev.trigger == "manual":
                self.final_text = f"Conversation compacted (about {ev.pre_tokens:,} tokens summarised)."
            if self.fmt == "stream-json":
                _emit(self.out, {"type": "system", "subtype": "compact_boundary", "session_id": sid,
                                 "compact_metadata": {"trigger": ev.trigger, "pre_tokens": ev.pre_tokens},
                                 "uuid": new_uuid()})
        elif isinstance(ev, StreamEvent):
            if self.fmt == "stream-json" and self.partial:
                _emit(self.out, {"type": "stream_event", "event": ev.raw, "parent_tool_use_id": None,
                                 "session_id": sid, "uuid": new_uuid()})

    def side_event(self, ev: Event) -> None:
        """A subagent's messages: shown in stream-json with their parent_tool_use_id, nothing else."""
        if self.fmt != "stream-json" or not isinstance(ev, (AssistantEvent, UserEvent)):
            return
        _emit(self.out, message_line(ev.message, self.conv.session_id))

    def result(self, result: dict[str, Any]) -> None:
        if self.fmt == "text":
            if result["is_error"]:
                sys.stderr.write(f"Error: {'; '.join(result.get('errors') or ['unknown error'])}\n")
            else:
                self.out.write(result.get("result", "") + ("\n" if not result.get("result", "").endswith("\n") else ""))
                self.out.flush()
        else:
            _emit(self.out, result)


def _version() -> str:
    from codeloop import __version__
    return __version__


async def _run(args: argparse.Namespace, prompt: str, out: TextIO) -> int:
    from codeloop.cli.setup import SetupError, attach_mcp, build_conversation, use_permission_prompt_tool

    started = time.monotonic()
    try:
        conv, warnings = build_conversation(args, interactive=False)
        warnings += await attach_mcp(conv, args)
        use_permission_prompt_tool(conv, args)
    except SetupError as exc:
        if args.output_format == "text":
            sys.stderr.write(f"Error: {exc}\n")
        else:
            _emit(out, error_result(args.resume or args.session_id or "", [str(exc)]))
        return EXIT_ERROR
    for w in warnings:
        sys.stderr.write(f"codeloop: warning: {w}\n")
    if conv.ended_by_model:
        message = (f"Session {conv.session_id} was ended by the model and cannot be resumed. "
                   "Start a new session.")
        if args.output_format == "text":
            sys.stderr.write(f"Error: {message}\n")
        else:
            _emit(out, {**error_result(conv.session_id, [message]), "terminal_reason": "ended_by_model"})
        await conv.provider.aclose()
        return EXIT_ERROR

    abort = AbortController()
    got_signal: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        got_signal.append(signum)
        abort.abort(AbortReason.USER if signum == signal.SIGINT else AbortReason.SIGNAL)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)

    printer = _Printer(args, conv, out)
    printer.init()
    conv.side_listeners.append(printer.side_event)
    command, _, focus = prompt.strip().partition(" ")
    structured: dict[str, Any] = {}
    if command == "/compact":
        events = conv.compact(focus.strip())
    elif args.json_schema:
        from codeloop.loop.structured import parse_schema, run_structured
        events = run_structured(conv, prompt, parse_schema(args.json_schema), STRUCTURED_RETRY_LIMIT, abort=abort)
    else:
        events = conv.submit(prompt, abort=abort)
    try:
        async for ev in events:
            if isinstance(ev, UserEvent) and printer.prompt_uuid is None:
                printer.prompt_uuid = ev.message.uuid
            if isinstance(ev, SystemEvent) and ev.subtype.startswith("structured_output"):
                structured[ev.subtype] = ev.data
                continue
            printer.event(ev)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await conv.aclose()
        await conv.provider.aclose()
    result = apply_structured(build_result(conv, conv.last_terminal, started=started, final_text=printer.final_text,
                                           stop_reason=printer.stop_reason), structured)
    printer.result(result)
    if got_signal:
        return EXIT_SIGINT if got_signal[0] == signal.SIGINT else EXIT_SIGTERM
    return EXIT_ERROR if result["is_error"] else EXIT_OK


def run_print_mode(args: argparse.Namespace) -> int:
    if args.output_format == "stream-json" and not args.verbose:
        sys.stderr.write("Error: When using --print, --output-format=stream-json requires --verbose\n")
        return EXIT_ERROR
    if getattr(args, "input_format", "text") == "stream-json":  # multi-turn JSONL session (SDKs)
        from codeloop.cli.stream_json import run_stream_json_mode
        return run_stream_json_mode(args)
    prompt = _read_prompt(args)
    if not prompt.strip():
        sys.stderr.write("Error: Input must be provided either through stdin or as a prompt argument "
                         "when using --print\n")
        return EXIT_ERROR
    try:
        return asyncio.run(_run(args, prompt, sys.stdout))
    except KeyboardInterrupt:
        return EXIT_SIGINT
