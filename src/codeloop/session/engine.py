"""QueryEngine: codeloop's library API (spec 001), driving the real loop and model.

Owns the session-level stop rules on top of a `Conversation`: `max_turns` (a hard stop counted
in submitted prompts, changing no state; compaction never resets the count), the token budget
(input + output tokens, cache reads and writes not counted; a soft stop: the turn that goes past
it is recorded as `max_budget_reached`, later prompts are refused), compaction
every `compact_after_turns` prompts, structured output, the spec's event shapes and
`TurnResult`, and the engine summary file (`<session dir>/engine.json`, written atomically with
a format version) that `from_saved_session` reads back with the transcript. The types it speaks
(config, stop reasons, results) are in `engine_types`.

One implementation, two faces: `astream_submit_message` is the engine; `asubmit_message` drains
it; the sync methods run the async ones with `asyncio.run`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from codeloop.events import AssistantEvent, CompactBoundary, PermissionDenied, SystemEvent, Terminal
from codeloop.fsutil import atomic_write_json
from codeloop.session import store
from codeloop.session.conversation import Conversation
from codeloop.session.engine_types import (ENGINE_FILE, FORMAT_VERSION, TERMINAL_TO_STOP, EngineError, PermissionDenial,
                                           QueryEngineConfig, SlashCommand, StopReason, TurnResult, UsageSummary,
                                           match_commands)
from codeloop.session.structured import StructuredEvent, run_structured
from codeloop.usage import Usage

log = logging.getLogger(__name__)


def _run_sync(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise EngineError("called the synchronous QueryEngine API inside a running event loop; "
                      "use `await engine.asubmit_message(...)` / `engine.astream_submit_message(...)`")


class QueryEngine:
    def __init__(self, config: QueryEngineConfig | None = None, *, provider: Any = None,
                 session_id: str | None = None, conversation: Conversation | None = None) -> None:
        self.config = config or QueryEngineConfig()
        if self.config.max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.conv = conversation or _build_conversation(self.config, provider, session_id)
        self.turn_count = 0              # prompts processed; compaction never touches it
        self.turns_since_compaction = 0
        self.last_result: TurnResult | None = None

    # -- views -----------------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self.conv.session_id

    @property
    def total_usage(self) -> UsageSummary:
        return UsageSummary.of(self.conv)

    @property
    def permission_denials(self) -> list[PermissionDenial]:
        return [PermissionDenial.from_record(r) for r in self.conv.permission_denials]

    @property
    def messages(self) -> list[Any]:
        return list(self.conv.messages)

    def budget_tokens(self) -> int:
        """What `max_budget_tokens` counts (spec 001 §3.2): input plus output tokens, cache reads and
        writes left out."""
        usage = self.total_usage
        return usage.input_tokens + usage.output_tokens

    def budget_exhausted(self) -> bool:
        """Past the budget: `in + out > max_budget_tokens` (a turn that lands exactly on it completes)."""
        limit = self.config.max_budget_tokens
        return limit is not None and self.budget_tokens() > limit

    @property
    def transcript_flushed(self) -> bool:
        """Everything recorded so far is on disk (fsynced): true after each turn and persist_session()."""
        writer = self.conv.writer
        # the writer's own flag (set by each append, cleared by each fsync); its module has no room
        # for a public accessor under the 400-line rule
        return writer is not None and not writer._dirty

    def render_summary(self) -> str:
        """The session's report (spec 001 §6.3) with the workspace manifest beside it."""
        from codeloop.session.engine_summary import render_summary

        return render_summary(self)

    # -- the turn --------------------------------------------------------------------------------
    async def astream_submit_message(self, prompt: str, *, abort: Any = None) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "message_start", "session_id": self.session_id, "prompt": prompt}
        commands = match_commands(prompt)
        if commands:
            yield {"type": "command_match", "commands": commands}
        refusal = self._refusal()
        if refusal is not None:  # hard stops: nothing is recorded, no model call is made
            reason, text = refusal
            yield {"type": "message_delta", "text": text}
            # like spec 001's port, the result still says what this turn asked for (its commands)
            yield self._finish(TurnResult(prompt, text, commands, (), (), self.total_usage, reason.value))
            return
        self.turn_count += 1
        self.turns_since_compaction += 1
        tools, denials, output, reason, value = await self._drive(prompt, commands, abort)
        if tools:
            yield {"type": "tool_match", "tools": tools}
        if denials:
            yield {"type": "permission_denial", "denials": [d.tool_name for d in denials]}
        if reason is StopReason.COMPLETED and self.budget_exhausted():
            reason = StopReason.MAX_BUDGET_REACHED      # recorded, but the last one
        if reason is StopReason.COMPLETED:
            await self._compact_if_due()
        yield {"type": "message_delta", "text": output}
        yield self._finish(TurnResult(prompt, output, commands, tools, denials, self.total_usage,
                                      reason.value, value))

    async def asubmit_message(self, prompt: str, *, abort: Any = None) -> TurnResult:
        async for _ in self.astream_submit_message(prompt, abort=abort):
            pass
        assert self.last_result is not None
        return self.last_result

    def submit_message(self, prompt: str) -> TurnResult:
        return _run_sync(self.asubmit_message(prompt))

    def stream_submit_message(self, prompt: str) -> Iterator[dict[str, Any]]:
        """The event dicts of one turn (collected by running the async stream to its end)."""
        async def collect() -> list[dict[str, Any]]:
            return [ev async for ev in self.astream_submit_message(prompt)]
        return iter(_run_sync(collect()))

    def _refusal(self) -> tuple[StopReason, str] | None:
        if self.turn_count >= self.config.max_turns:
            return StopReason.MAX_TURNS_REACHED, (f"Max turns reached ({self.config.max_turns}) "
                                                  "before processing this prompt.")
        if self.budget_exhausted():
            return StopReason.MAX_BUDGET_REACHED, (f"Token budget exhausted ({self.budget_tokens()} of "
                                                   f"{self.config.max_budget_tokens}) before processing this prompt.")
        if self.conv.ended_by_model:
            return StopReason.ENDED_BY_MODEL, "The model ended this conversation; start a new session."
        return None

    def _finish(self, result: TurnResult) -> dict[str, Any]:
        self.last_result = result
        return {"type": "message_stop", "usage": result.usage.to_dict(), "stop_reason": result.stop_reason,
                "transcript_size": len(self.conv.messages)}

    async def _drive(self, prompt: str, commands: tuple[str, ...], abort: Any):
        """Run one prompt through the conversation: (tools, denials, output, stop reason, structured value)."""
        if SlashCommand.COMPACT.value in commands:
            focus = prompt.strip()[len(SlashCommand.COMPACT.value):].strip()
            events = self.conv.compact(focus or None)
        elif self.config.structured_output:
            events = run_structured(self.conv, prompt, self.config.json_schema or {},
                                    self.config.structured_retry_limit, abort=abort)
        else:
            events = self.conv.submit(prompt, abort=abort)
        tools: list[str] = []
        denials: list[PermissionDenial] = []
        final_id, output, value, failed = None, "", None, False
        terminal: Terminal | None = None
        async for ev in events:
            if isinstance(ev, AssistantEvent):
                msg = ev.message
                tools += [b["name"] for b in msg.tool_uses() if b["name"] not in tools]
                if msg.id != final_id or msg.is_api_error:
                    final_id, output = msg.id, ""
                output += msg.text
            elif isinstance(ev, PermissionDenied):
                denials.append(PermissionDenial(ev.tool_name, ev.tool_use_id, dict(ev.tool_input)))
            elif isinstance(ev, CompactBoundary):
                self.turns_since_compaction = 0
                output = f"Conversation compacted (about {ev.pre_tokens:,} tokens summarised)."
            elif isinstance(ev, SystemEvent) and ev.subtype == StructuredEvent.OUTPUT.value:
                value = ev.data["structured_output"]
            elif isinstance(ev, SystemEvent) and ev.subtype == StructuredEvent.FAILED.value:
                failed = True
            elif isinstance(ev, Terminal):
                terminal = ev
        if terminal is None:
            reason = StopReason.INTERRUPTED
        else:
            reason = TERMINAL_TO_STOP.get(terminal.reason, StopReason.ERROR)
            if terminal.error and reason is StopReason.ERROR and not output:
                output = terminal.error
        if failed and reason is StopReason.COMPLETED:
            reason = StopReason.STRUCTURED_OUTPUT_FAILED
        return tuple(tools), tuple(denials), output, reason, value

    async def _compact_if_due(self) -> None:
        every = self.config.compact_after_turns
        if not every or self.turns_since_compaction < every:
            return
        try:
            async for _ in self.conv.compact():
                pass
        except Exception as exc:  # a failed summary must not fail the turn that already completed
            log.warning("automatic compaction failed (the next prompt tries again): %s", exc)
        else:
            self.turns_since_compaction = 0

    # -- persistence -----------------------------------------------------------------------------
    @property
    def summary_path(self) -> Path:
        return store.session_dir(self.conv.config.cwd, self.session_id) / ENGINE_FILE

    def persist_session(self) -> str:
        """fsync the transcript and write the engine summary atomically; its path."""
        if self.conv.writer is None:
            raise EngineError("this engine was created with persist=False: there is no transcript to save")
        self.conv.writer.sync()
        usage = self.total_usage
        data = {"format_version": FORMAT_VERSION, "session_id": self.session_id, "cwd": str(self.conv.config.cwd),
                "model": self.conv.config.model, "turn_count": self.turn_count,
                "turns_since_compaction": self.turns_since_compaction, "usage": usage.to_dict(),
                "usage_by_model": {m: u.to_dict() for m, u in self.conv.usage_by_model.items()},
                "permission_denials": list(self.conv.permission_denials),
                "transcript": str(self.conv.transcript_path)}
        atomic_write_json(self.summary_path, data, dir_mode=0o700, ensure_ascii=False, indent=2, default=str)
        return str(self.summary_path)

    @classmethod
    def from_saved_session(cls, session_id: str, *, cwd: str | Path | None = None,
                           config: QueryEngineConfig | None = None, provider: Any = None) -> QueryEngine:
        """Messages (from the transcript, after its last compaction), usage, turn count, denials.
        A session another live process is writing is forked (session.claim): `session_id` says which."""
        from codeloop.session.claim import open_stored

        sid = store.validate_session_id(session_id)
        root = Path(cwd if cwd is not None else (config.cwd if config and config.cwd else Path.cwd())).resolve()
        path = store.find_session(sid, root)
        if path is None:
            raise EngineError(f"No conversation found with session ID: {sid}")
        summary = read_summary(path.with_suffix("") / ENGINE_FILE)
        got = open_stored(root, sid, write=config is None or config.persist)
        denials = [{k: e.get(k) for k in ("tool_name", "tool_use_id", "tool_input")}
                   for e in got.entries if e.get("type") == "permission-denial"]
        if not denials and summary:
            denials = list(summary.get("permission_denials") or [])
        config = replace(config or QueryEngineConfig(), cwd=root)
        try:
            conv = _build_conversation(config, provider, got.session_id, messages=got.messages, denials=denials,
                                       entries=got.entries, hold=got.hold)
        except BaseException:
            if got.hold is not None:
                got.hold.release()
            raise
        engine = cls(config, conversation=conv)
        if summary:
            engine.turn_count = int(summary.get("turn_count") or 0)
            engine.turns_since_compaction = int(summary.get("turns_since_compaction") or 0)
            for model, u in (summary.get("usage_by_model") or {}).items():
                conv.usage_by_model[model] = Usage.from_api(u)
            conv.cost_usd = float((summary.get("usage") or {}).get("cost_usd") or 0.0)
        else:  # a session the CLI wrote: count its prompts
            engine.turn_count = engine.turns_since_compaction = _count_prompts(path)
        return engine

    def close(self) -> None:
        self.conv.close()

    async def aclose(self) -> None:
        self.conv.close()
        closer = getattr(self.conv.provider, "aclose", None)
        if closer is not None:
            await closer()


def read_summary(path: Path) -> dict[str, Any] | None:
    """The engine summary at `path`, None if absent; EngineError if unreadable or too new."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise EngineError(f"unreadable engine summary {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("format_version"), int):
        raise EngineError(f"{path} is not an engine summary (no format_version)")
    if data["format_version"] > FORMAT_VERSION:
        raise EngineError(f"{path} has format_version {data['format_version']}; this codeloop reads up to "
                          f"{FORMAT_VERSION}")
    return data


def _count_prompts(path: Path) -> int:
    from codeloop.session.transcript import load_transcript

    def is_prompt(e: dict[str, Any]) -> bool:
        content = (e.get("message") or {}).get("content")
        blocks = content if isinstance(content, list) else []
        return (e.get("type") == "user" and not e.get("isMeta")
                and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks))
    return sum(1 for e in load_transcript(path).entries if is_prompt(e))


def _build_conversation(config: QueryEngineConfig, provider: Any, session_id: str | None, *,
                        messages: list | None = None, denials: list | None = None,
                        entries: list | None = None, hold: Any = None) -> Conversation:
    """The engine's session, through the one assembly (session.assembly): no settings files are
    read — the library's caller configures it — and the engine's cwd is the working directory its
    rules judge paths against (not the process's)."""
    from codeloop.config.settings import LoadedSettings
    from codeloop.permissions.policy import PermissionMode
    from codeloop.providers.aliases import resolve_model
    from codeloop.session.assembly import SessionHost, build_session
    from codeloop.session.assembly_parts import History
    from codeloop.session.options import (HistoryOptions, Limits, ModelOptions, PermissionOptions, PromptOptions,
                                          RunOptions, SetupError)
    from codeloop.tools.registry import BUILTINS

    cwd = Path(config.cwd if config.cwd is not None else Path.cwd()).resolve()
    if provider is None:
        from codeloop.providers.anthropic import AnthropicProvider
        provider = AnthropicProvider()
    session_id = store.validate_session_id(session_id if session_id is not None else store.new_session_id())
    names = {n for n, _, _ in BUILTINS}
    unknown = [n for n in (config.tools or ()) if n not in names]
    if unknown:
        raise ValueError(f"unknown tool(s): {', '.join(unknown)} (known: {', '.join(sorted(names))})")
    model = resolve_model(config.model)
    options = RunOptions(
        cwd=cwd, settings=LoadedSettings(), entrypoint="library",
        permissions=PermissionOptions(mode=PermissionMode(config.permission_mode), allow=tuple(config.allowed_tools),
                                      deny=tuple(config.disallowed_tools)),
        model=ModelOptions(model=model), tools=tuple(config.tools) if config.tools is not None else None,
        prompts=PromptOptions(system_prompt=config.system_prompt, append=config.append_system_prompt),
        limits=Limits(max_turns=config.loop_max_turns), history=HistoryOptions(persist=config.persist))
    history = History(session_id, list(messages or []), list(denials or []), list(entries or []), hold=hold)
    try:
        return build_session(options, SessionHost(), provider=provider, model=model, history=history)
    except SetupError as exc:
        raise ValueError(str(exc)) from None


__all__ = ["ENGINE_FILE", "EngineError", "FORMAT_VERSION", "PermissionDenial", "QueryEngine", "QueryEngineConfig",
           "SlashCommand", "StopReason", "TurnResult", "UsageSummary", "match_commands"]
