"""What the print front ends write: result lines, exit codes and the event printer.

Shared by print mode (`-p`, one prompt) and the stream-json session (`--input-format
stream-json`, many turns), so every line both write has Claude Code's shape and neither front
end imports the other. Owns: exit statuses, `error_result` / `build_result` (the closing result
object), `apply_structured` (folding `--json-schema` outcomes into it), `message_line` (an
assistant/user line) and `Printer`, which writes events in text | json | stream-json.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, TextIO

from codeloop.events import (ApiCallEvent, AssistantEvent, CompactBoundary, Event, StreamEvent, SystemEvent, Terminal,
                             TerminalReason, Tombstone, UserEvent)
from codeloop.messages import new_uuid
from codeloop.session.options import OutputFormat, OutputOptions

EXIT_OK, EXIT_ERROR, EXIT_SIGINT, EXIT_SIGTERM = 0, 1, 130, 143
_SUBAGENT_PROSE = frozenset({"text", "thinking", "redacted_thinking"})
STRUCTURED_RETRY_LIMIT = 2


def emit(out: TextIO, obj: dict[str, Any]) -> None:
    """One JSON line, flushed at once (a reader may be waiting on it)."""
    from codeloop.messages import dumps_marked

    out.write(dumps_marked(obj) + "\n")   # bytes that are not UTF-8 show as \\xNN, never break a line
    out.flush()


def error_result(session_id: str, errors: list[str], *, subtype: str = "error_during_execution",
                 duration_ms: float = 0) -> dict[str, Any]:
    return {"type": "result", "subtype": subtype, "is_error": True, "duration_ms": int(duration_ms),
            "duration_api_ms": 0, "num_turns": 0, "stop_reason": None, "session_id": session_id,
            "total_cost_usd": 0, "usage": {}, "modelUsage": {}, "permission_denials": [],
            "errors": errors, "uuid": new_uuid()}


def report_setup_error(message: str, fmt: OutputFormat, session_id: str) -> None:
    """A session that could not start, said the way its result would have been: a line on stderr
    in text mode, a JSON error result otherwise (what a script or an SDK reads)."""
    if fmt is OutputFormat.TEXT:
        sys.stderr.write(f"Error: {message}\n")
    else:
        emit(sys.stdout, error_result(session_id, [message]))


def build_result(conv, terminal: Terminal | None, *, started: float, final_text: str,
                 stop_reason: str | None) -> dict[str, Any]:
    from codeloop.providers.models import model_info
    from codeloop.providers.pricing import cost_usd

    reason = terminal.reason if terminal else TerminalReason.ABORTED_STREAMING
    subtype = {TerminalReason.COMPLETED: "success", TerminalReason.MAX_TURNS: "error_max_turns",
               TerminalReason.BUDGET_EXCEEDED: "error_max_budget_usd"}.get(reason, "error_during_execution")
    usage = conv.usage.to_dict()
    usage["server_tool_use"] = {"web_search_requests": conv.usage.web_search_requests, "web_fetch_requests": 0}
    usage["service_tier"] = "standard"
    result: dict[str, Any] = {
        "type": "result", "subtype": subtype, "is_error": subtype != "success",
        "duration_ms": int((time.monotonic() - started) * 1000), "duration_api_ms": int(conv.api_duration_ms),
        "num_turns": terminal.turn_count if terminal else 0, "stop_reason": stop_reason,
        "session_id": conv.session_id, "total_cost_usd": round(conv.cost_usd, 8), "usage": usage,
        "modelUsage": {m: {"inputTokens": u.input_tokens, "outputTokens": u.output_tokens,
                           "cacheReadInputTokens": u.cache_read_input_tokens,
                           "cacheCreationInputTokens": u.cache_creation_input_tokens,
                           "webSearchRequests": u.web_search_requests, "costUSD": round(cost_usd(u, m), 8),
                           "contextWindow": model_info(m).context_window,
                           "maxOutputTokens": model_info(m).max_output_tokens}
                       for m, u in conv.usage_by_model.items()},
        "permission_denials": list(conv.permission_denials),
        "terminal_reason": reason.value, "uuid": new_uuid()}
    if reason in API_ERROR_REASONS:
        # Claude Code's shape for a run that ended on a failed API call: the loop itself
        # completed, so `subtype` is "success", `is_error` is true and `result` holds the
        # "API Error: 400 …" prose (what `jq .result` scripts print), with the HTTP status
        # beside it, and `errors` empty: the SDK's ResultError then quotes `result` as the cause.
        error = terminal.error if terminal and terminal.error else _reason_text(reason)
        text, status = api_error_text(error)
        result.update(subtype="success", is_error=True, result=text, errors=[])
        if status is not None:
            result["api_error_status"] = status
    elif subtype == "success":
        result["result"] = final_text
    elif reason is TerminalReason.MAX_TURNS:
        result["errors"] = [f"Reached maximum number of turns ({conv.config.max_turns})"]
    elif reason is TerminalReason.BUDGET_EXCEEDED:
        result["errors"] = [f"Reached the maximum budget (${conv.config.max_budget_usd}); "
                            f"spent ${conv.cost_usd:.4f}"]
    else:
        result["errors"] = [terminal.error if terminal and terminal.error else _reason_text(reason)]
    return result


API_ERROR_REASONS = frozenset({TerminalReason.API_ERROR, TerminalReason.PROMPT_TOO_LONG,
                               TerminalReason.IMAGE_ERROR})
_API_ERROR_STATUS = r"API Error \((\d{3})\): "   # compiled on first use


def api_error_text(error: str) -> tuple[str, int | None]:
    """("API Error: 400 <message>", 400) from the provider's "API Error (400): <message>" text;
    an error without a status (a dropped connection) keeps its words and gets None."""
    m = re.match(_API_ERROR_STATUS, error)
    if m is not None:
        return f"API Error: {m.group(1)} {error[m.end():]}", int(m.group(1))
    return (error if error.startswith("API Error") else f"API Error: {error}"), None


ENDED_MESSAGE = ("The model ended this conversation (EndConversation). It cannot be continued; "
                 "start a new session.")


def apply_structured(result: dict[str, Any], structured: dict[str, Any], final_text: str = "") -> dict[str, Any]:
    """Fold the structured-output outcome (`--json-schema`) into a result line: `structured_output`
    holds the value, and `result` is never left empty — the model's closing words, else the value
    as JSON text (what `jq -r .result` scripts print)."""
    import json

    from codeloop.session.structured import StructuredEvent

    if StructuredEvent.OUTPUT.value in structured:
        value = structured[StructuredEvent.OUTPUT.value]["structured_output"]
        result["structured_output"] = value
        if not result["is_error"]:
            result["result"] = final_text.strip() or json.dumps(value, ensure_ascii=False)
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


class Printer:
    """Writes events in the chosen format; tracks what the final result needs."""

    def __init__(self, output: OutputOptions, out: TextIO, conv: Any = None) -> None:
        self.fmt, self.partial, self.conv, self.out = output.format.value, output.include_partial_messages, conv, out
        self.final_text = ""
        self.stop_reason: str | None = None
        self._final_parts: list[tuple[str, str]] = []   # (uuid, text) of the final response so far
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
        emit(self.out, {"type": "system", "subtype": "init", "cwd": str(c.config.cwd), "session_id": c.session_id,
                         "tools": tools, "mcp_servers": mcp_servers, "model": c.config.model,
                         "permissionMode": c.config.policy.mode.value, "slash_commands": [],
                         "apiKeySource": c.api_key_source, "claude_code_version": _version(),
                         "output_style": c.output_style, "agents": agents,
                         "skills": _skills(c, tools), "plugins": _plugins(c),
                         "uuid": new_uuid()})

    def event(self, ev: Event) -> None:
        sid = self.conv.session_id
        if isinstance(ev, AssistantEvent):
            msg = ev.message
            if not msg.is_api_error:
                if msg.id != self._last_id:  # the result is the final response's text only
                    self._final_parts = []
                self._final_parts.append((msg.uuid, msg.text))
                self.final_text = "".join(text for _, text in self._final_parts)
                self._last_id = msg.id
            if self.fmt == "stream-json":
                emit(self.out, message_line(msg, sid))
        elif isinstance(ev, Tombstone):
            self._retract(ev.message)
        elif isinstance(ev, ApiCallEvent):
            self.stop_reason = ev.stop_reason
        elif isinstance(ev, UserEvent):
            if self.fmt == "stream-json" and ev.message.uuid != self.prompt_uuid:
                emit(self.out, message_line(ev.message, sid))
        elif isinstance(ev, SystemEvent):
            if ev.subtype == "compact_skipped":
                self.final_text = ev.text
            if self.fmt == "stream-json":
                line = {"type": "system", "subtype": ev.subtype, **ev.data, "session_id": sid, "uuid": new_uuid()}
                if ev.text and "message" not in line:
                    line["message"] = ev.text   # e.g. "Switched to X due to high demand for Y"
                emit(self.out, line)
                if (patch := task_patch(ev)) is not None:
                    emit(self.out, {"type": "system", "subtype": "task_updated", "task_id": ev.data.get("task_id"),
                                    "patch": patch, "session_id": sid, "uuid": new_uuid()})
            elif ev.level != "info":  # text mode: retries too, so a wait is never silent
                sys.stderr.write(f"codeloop: {ev.text}\n")
                sys.stderr.flush()
        elif isinstance(ev, CompactBoundary):
            if ev.trigger == "manual":
                self.final_text = f"Conversation compacted (about {ev.pre_tokens:,} tokens summarised)."
            if self.fmt == "stream-json":
                emit(self.out, {"type": "system", "subtype": "compact_boundary", "session_id": sid,
                                 "compact_metadata": {"trigger": ev.trigger, "pre_tokens": ev.pre_tokens},
                                 "uuid": new_uuid()})
        elif isinstance(ev, StreamEvent):
            if self.fmt == "stream-json" and self.partial:
                emit(self.out, {"type": "stream_event", "event": ev.raw, "parent_tool_use_id": None,
                                 "session_id": sid, "uuid": new_uuid()})

    def _retract(self, msg: Any) -> None:
        """A message the loop took back (a retried or cut response, a result of a discarded tool).

        Its text leaves the final result; in stream-json a `tombstone` line in Claude Code's
        shape (`{"type": "tombstone", "message": <the line retracted>, "uuid", "session_id"}`)
        tells the reader to drop the earlier line with that message's uuid. The SDKs skip
        message types they do not model, so older readers are not disturbed.
        """
        if any(uuid == msg.uuid for uuid, _ in self._final_parts):
            self._final_parts = [(uuid, text) for uuid, text in self._final_parts if uuid != msg.uuid]
            self.final_text = "".join(text for _, text in self._final_parts)
        if self.fmt == "stream-json":
            sid = self.conv.session_id
            emit(self.out, {"type": "tombstone", "message": message_line(msg, sid), "uuid": new_uuid(),
                            "session_id": sid})

    def side_event(self, ev: Event, *, forward_text: bool = False) -> None:
        """A subagent's messages (with their parent_tool_use_id), retractions and task events, in stream-json.

        As in Claude Code, a subagent's text and thinking stay unsent unless the SDK asked for
        them (`forwardSubagentText` in `initialize`): by default its tool calls and results go out."""
        if self.fmt != "stream-json":
            return
        if isinstance(ev, SystemEvent) and ev.subtype.startswith("task_"):
            self.event(ev)
        elif isinstance(ev, (AssistantEvent, UserEvent)):
            line = message_line(ev.message, self.conv.session_id)
            if isinstance(ev, AssistantEvent) and not forward_text:
                content = line["message"].get("content")
                kept = [b for b in content if b.get("type") not in _SUBAGENT_PROSE] if isinstance(content, list) else []
                if not kept:
                    return
                line["message"] = {**line["message"], "content": kept}
            emit(self.out, line)
        elif isinstance(ev, Tombstone):
            self._retract(ev.message)

    def result(self, result: dict[str, Any]) -> None:
        if self.fmt == "text":
            if result["is_error"]:
                why = result.get("errors") or [result.get("result") or "unknown error"]   # an API error: `result`
                sys.stderr.write(f"Error: {'; '.join(why)}\n")
            else:
                self.out.write(result.get("result", "") + ("\n" if not result.get("result", "").endswith("\n") else ""))
                self.out.flush()
        else:
            emit(self.out, result)


# task_notification's status → the raw lifecycle status task_updated reports (Claude Code keeps `killed`).
_TASK_STATUS = {"completed": "completed", "failed": "failed", "stopped": "killed"}


def task_patch(ev: SystemEvent) -> dict[str, Any] | None:
    """The `task_updated` patch that follows a task's start or end (None for other events): the
    SDK's TaskUpdatedMessage, which is how a consumer tracks a task that ends without a notification."""
    if ev.subtype == "task_started":
        return {"status": "running"}
    if ev.subtype == "task_notification":
        status = _TASK_STATUS.get(str(ev.data.get("status")), "failed")
        return {"status": status, "end_time": int(time.time() * 1000)}
    return None


def status_line(session_id: str, status: str | None, **extra: Any) -> dict[str, Any]:
    """A `system/status` line, Claude Code's: `status` is "compacting" while a compaction runs and
    null otherwise; a permission-mode change carries `permissionMode`, a compaction's end `compact_result`."""
    return {"type": "system", "subtype": "status", "status": status, **extra, "session_id": session_id,
            "uuid": new_uuid()}


def _version() -> str:
    from codeloop.version import __version__

    return __version__


class BudgetGuard:
    """`--max-budget-usd` across a stream-json session: is the dollar budget spent? Checked
    between turns (refusing the next one) and after each (marking its result); within a turn
    the Conversation itself aborts once the budget is spent."""

    def __init__(self, max_usd: float) -> None:
        if isinstance(max_usd, bool) or not isinstance(max_usd, (int, float)) or not max_usd > 0:
            raise ValueError("--max-budget-usd must be a positive number of dollars")
        self.max_usd = float(max_usd)

    def check(self, conv: Any) -> bool:
        return float(conv.cost_usd) >= self.max_usd

    def error_text(self, conv: Any) -> str:
        return f"Reached maximum budget (${self.max_usd:g}); spent ${float(conv.cost_usd):.4f}"


def _plugins(conv) -> list[dict[str, str]]:
    """The session's plugins for system/init, as Claude Code lists them: name and folder."""
    options = conv.parts.options
    return [{"name": p.name, "path": str(p.root)} for p in (options.plugins if options is not None else ())]


def _skills(conv, tools: list[str]) -> list[str]:
    """The skills the Skill tool can load (issue 16), for system/init."""
    if "Skill" not in tools:
        return []
    from codeloop.tools.skills import session_skills

    return [s.name for s in session_skills(conv.tool_context)]
