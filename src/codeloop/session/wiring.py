"""How a Conversation's own parts are wired (a base class of `session.conversation.Conversation`):
its transcript writer, the tools' typed context, the context pipeline with its compactor, nested
memory and file checkpoints; and each submitted prompt's query parameters.

For the main thread these are the session's own; for a subagent (`sidechain` set) the transcript
is a sidechain file beside the parent's, and the tool context shares the parent's background
tasks, checkpoints, live output and usage totals — but gets its own history, pipeline and
compactor, so a long subagent run compacts and recovers exactly as the main thread does.

`_turn_params` gathers what the loop needs for a query — the same for the main thread and a
subagent: the tool pool as it is now (MCP servers come and go), the system prompt with the
deferred-tools hint and session notes, the context pipeline and its compactor (autocompact,
collapse-drain and reactive compaction), fallback models, the queue, nested memory and the Stop
(or SubagentStop) hooks.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.events import ApiCallEvent, Event, SystemEvent, Terminal
from codeloop.loop.state import TerminalReason
from codeloop.messages import Message
from codeloop.tools.base import Tool, ToolContext
from codeloop.tools.made_on_use import make_on_use

if TYPE_CHECKING:
    from codeloop.loop.query import QueryParams
    from codeloop.loop.recovery import StopHooks
    from codeloop.session.parts import SessionParts, Sidechain


def subagent_transcript_path(session_dir: Path, agent_id: str) -> Path:
    return session_dir / "subagents" / f"agent-{agent_id}.jsonl"


class SessionWiring:
    """The construction-time wiring and per-query parameters of a Conversation."""
    config: Any                                 # session.conversation.ConversationConfig
    provider: Any
    session_id: str
    parts: SessionParts
    sidechain: Sidechain | None
    messages: list[Message]
    mcp: Any
    trusted: bool
    ended_by_model: bool
    hooks: Any
    queue: Any
    tool_context: ToolContext
    collapse: Any
    compactor: Any
    pipeline: Any
    nested_memory: Any
    side_provider: Any
    file_history: Any
    request_prefix: Any = None                  # context.compact.RequestPrefix of the latest request
    auto_reviewer: Any = None                   # permissions.auto_mode.AutoReviewer, made on first use

    if TYPE_CHECKING:  # Conversation defines these; declared here for the type checker only
        @property
        def writer(self) -> Any: ...
        @property
        def model(self) -> str: ...
        @property
        def budget_exhausted(self) -> bool: ...
        def _write_entry(self, entry: dict[str, Any]) -> None: ...
        def _on_side_event(self, ev: Event) -> None: ...
        def _record_api_call(self, ev: ApiCallEvent) -> None: ...
        def compact_context(self) -> dict[str, Any]: ...
        async def can_use_tool(self, tool: Tool, inp: Any, block: dict[str, Any], ctx: ToolContext) -> Any: ...

    def tool_pool(self) -> list[Tool]:
        """Built-in tools plus the tools of connected MCP servers (which can come and go)."""
        return [*self.config.tools, *self._mcp_tools()]

    def _mcp_tools(self) -> list[Tool]:
        """The tools of the connected MCP servers (shared with subagents), as this session may use them."""
        tools = list(self.mcp.tools()) if self.mcp is not None else []
        side = self.sidechain
        if side is None or not tools:
            return tools
        from codeloop.tools.registry import canonical_name

        keep = None if side.allowed_tools is None else {canonical_name(t) for t in side.allowed_tools}
        return [t for t in tools if (keep is None or t.name in keep) and t.name not in side.disallowed_tools]

    def _make_writer(self) -> tuple[Path, Any]:
        """(transcript path, writer or None)."""
        from codeloop.session import store
        from codeloop.session.transcript import TranscriptWriter

        side, cfg = self.sidechain, self.config
        if side is not None:
            parent_dir = side.parent.session_dir
            path = subagent_transcript_path(parent_dir, side.agent_id) if parent_dir is not None else None
            if path is None or not cfg.persist:
                return path or Path(), None
            return path, TranscriptWriter(path, self.session_id, str(cfg.cwd),
                                          tags={"isSidechain": True, "agentId": side.agent_id})
        path = store.session_path(cfg.cwd, self.session_id)
        if not cfg.persist:
            return path, None
        writer = TranscriptWriter(path, self.session_id, str(cfg.cwd))
        writer.claude_records = self.parts.claude_records   # Claude Code's (and the SDK's) session readers
        writer.pending_records.extend(self.parts.records)
        return path, writer

    def _make_context(self) -> ToolContext:
        """The tools' typed capabilities for this conversation."""
        from codeloop.session import store

        cfg, side = self.config, self.sidechain
        policy = cfg.policy
        ctx = ToolContext(
            cwd=cfg.cwd, project_dir=cfg.cwd, non_interactive=not cfg.interactive, session_id=self.session_id,
            model=cfg.model, main_model=cfg.model, entrypoint=cfg.entrypoint, ended_by_model=self.ended_by_model,
            messages=lambda: self.messages, append_entry=self._write_entry, emit=self._on_side_event,
            post_tool_use=self.hooks.post_tool,  # a no-op without hooks; SDK hooks may arrive later
            lifecycle_hooks=self.hooks.lifecycle_if_hooked(),
            path_guard=policy.guard_path, denied_inodes=policy.denied_inodes, feature_flags=dict(cfg.feature_flags),
            policy=policy, sandbox=policy.sandbox, project_trusted=self.trusted, env_pass=tuple(cfg.env_pass),
            project_files=self.parts.project_files,
            plugins=self.parts.options.plugins if self.parts.options is not None else ())
        if side is None:
            ctx.session_dir = store.session_dir(cfg.cwd, self.session_id)
            # the task board, scheduler and background registry are made when first read (most
            # sessions use none of them): tools.made_on_use
            make_on_use(ctx, "task_board", partial(self._task_board, ctx.session_dir if cfg.persist else None))
            make_on_use(ctx, "scheduler", self._scheduler)
            if self.parts.spawn is not None and any(t.name == "Agent" for t in cfg.tools):
                ctx.spawn_subagent = partial(self.parts.spawn, self)
            from codeloop.session.background import background_on_use
            # a /rewind's registry: its tasks go on (None: one made afresh); each background shell
            # or agent that ends is announced in this session's queue
            background_on_use(ctx, self.queue, self.parts.background)
        else:
            parent = side.parent
            ctx.cwd, ctx.project_dir = parent.cwd, parent.project_dir
            ctx.session_dir = (parent.session_dir / "subagents" / f"agent-{side.agent_id}"
                               if parent.session_dir else None)
            ctx.agent_id, ctx.agent_type, ctx.abort = side.agent_id, side.agent_type, side.abort
            ctx.non_interactive, ctx.entrypoint = parent.non_interactive, parent.entrypoint
            ctx.read_denied, ctx.live_output = parent.read_denied, parent.live_output
            ctx.foreground = parent.foreground   # Ctrl+B moves a subagent's commands too
            make_on_use(ctx, "background", lambda: parent.background)   # the parent's, when first read
            ctx.project_trusted, ctx.plugins = parent.project_trusted, parent.plugins
            # one task list per session, as in Claude Code (the parent's, when first read)
            make_on_use(ctx, "task_board", lambda: parent.task_board)
        ctx.tool_pool = self.tool_pool()
        if self.writer is not None:   # calls that only read need not be fsynced before they run
            from codeloop.tools.registry import only_reads

            self.writer.only_reads = lambda blocks: only_reads(ctx.tool_pool, blocks)
        return ctx

    @staticmethod
    def _task_board(folder: Path | None) -> Any:
        from codeloop.tools.task_board import TaskBoard

        return TaskBoard(folder)

    def _scheduler(self) -> Any:
        from codeloop.loop.queue import Priority, QueuedCommand
        from codeloop.tools.scheduler import PromptScheduler

        # a due scheduled prompt waits in the queue (LATER: never mid-turn) for the front end to run
        return PromptScheduler(lambda text: self.queue.enqueue(QueuedCommand(text, priority=Priority.LATER)))

    def _setup_context(self, entries: list[dict[str, Any]]) -> None:
        """The five-stage pipeline (spec 004 §8) and its compactor, with state that survives resume;
        nested memory and file checkpoints."""
        from codeloop.context.collapse import ContextCollapse
        from codeloop.context.compact import Compactor
        from codeloop.context.memory import NestedMemory
        from codeloop.context.pipeline import ContentReplacementState, ContextPipeline
        from codeloop.providers.metered import MeteredProvider

        side = self.sidechain

        def metered(model: str, usage: Any, ms: float) -> None:
            ev = ApiCallEvent(model, usage, ms, None)
            self._record_api_call(ev)
            if side is not None:
                side.record_usage(ev)   # summaries and side calls count in the parent's totals too

        self.collapse = ContextCollapse()
        # summaries and labels are paid for too: their usage joins the session's totals
        self.side_provider = self.tool_context.side_provider = MeteredProvider(self.provider, metered)
        self.compactor = Compactor(self.side_provider, self.config.model, context=self.compact_context,
                                   before_compact=self.hooks.pre_compact, after_compact=self.hooks.post_compact,
                                   prefix=lambda: self.request_prefix)
        self.pipeline = ContextPipeline(
            compactor=self.compactor, session_dir=self.tool_context.session_dir,
            exempt_tools=ContextPipeline.exempt_from_tools(self.config.tools), collapse=self.collapse,
            replacement_state=ContentReplacementState.from_entries(entries), count_tokens=self.count_tokens)
        # nested CLAUDE.md: attached as folders are touched
        self.nested_memory = NestedMemory(self.config.cwd, self.parts.project_files)
        if self.parts.memory_file_names is not None:
            self.nested_memory.file_names = self.parts.memory_file_names
        if side is not None:
            self.file_history = side.file_history
        elif self.parts.file_history is not None:   # the old checkpoints stay valid for the kept prompts
            self.file_history = self.parts.file_history
            self.file_history.append_entry = self._write_entry if self.writer is not None else None
        else:
            from codeloop.session import store
            from codeloop.session.checkpoints import FileHistory

            self.file_history = FileHistory(store.config_dir() / "file-history" / self.session_id,
                                            self._write_entry if self.writer is not None else None)
        self.tool_context.before_write = self.file_history.before_write if self.file_history is not None else None

    async def count_tokens(self, messages: list[Any]) -> int | None:
        """The provider's token count for these messages with the session's prompt, on the model in use."""
        counter = getattr(self.provider, "count_tokens", None)
        if counter is None:
            return None
        from codeloop.loop.request import build_request

        return await counter(build_request(model=self.model, messages=messages, system_prompt=self.config.system_prompt,
                                           user_context=self.config.user_context, tools=self.config.tools))

    # -- a submitted prompt ------------------------------------------------------------------------
    def _refusal(self) -> list[Event] | None:
        """The events that answer a prompt the session cannot take (ended by the model, budget spent)."""
        if self.ended_by_model:
            return [SystemEvent("session_ended", "The model ended this conversation. Start a new session (or "
                                "/clear).", "error"),
                    Terminal(TerminalReason.ENDED_BY_MODEL, 0, "the session was ended by the model")]
        if self.budget_exhausted:
            return [SystemEvent("budget_exceeded", f"The session's budget of ${self.config.max_budget_usd} is "
                                "spent.", "error"),
                    Terminal(TerminalReason.BUDGET_EXCEEDED, 0, "max budget reached")]
        return None

    def _turn_params(self, msg: Message) -> QueryParams:
        from codeloop.context.compact import RequestPrefix
        from codeloop.loop.budget import parse_token_budget
        from codeloop.loop.query import QueryParams
        from codeloop.tools.deferred import hint_for, request_tools
        from codeloop.tools.session_notes import session_notes

        ctx = self.tool_context
        ctx.tool_pool = pool = self.tool_pool()
        hint = "\n\n".join(filter(None, [hint_for(pool, ctx), *session_notes(ctx)]))  # + skills, plan mode

        side, cfg = self.sidechain, self.config
        system_prompt = [*cfg.system_prompt, *([hint] if hint else [])]

        def refresh() -> list[Tool]:
            # a server that connected (or died) since the last turn changes what the model is offered
            ctx.tool_pool = fresh = self.tool_pool()
            tools = request_tools(fresh, ctx)
            self.request_prefix = RequestPrefix(system_prompt, cfg.user_context, tools, cfg.thinking)
            return tools

        tools = request_tools(pool, ctx)
        # what compaction's request starts with, so that it reads this conversation's prompt cache
        self.request_prefix = RequestPrefix(system_prompt, cfg.user_context, tools, cfg.thinking)
        stop_hooks: StopHooks | None = side.stop_hooks if side is not None else self.hooks.stop_hooks()
        return QueryParams(messages=list(self.messages), system_prompt=system_prompt,
                           user_context=cfg.user_context, tools=tools, refresh_tools=refresh,
                           provider=self.provider, model=cfg.model, tool_context=ctx, can_use_tool=self.can_use_tool,
                           max_turns=cfg.max_turns, max_output_tokens=cfg.max_output_tokens,
                           fallback_models=list(cfg.fallback_models), queue=self.queue,
                           token_budget=parse_token_budget(msg.text) or cfg.token_budget, task_budget=cfg.task_budget,
                           reactive_compact=self.compactor, context_pipeline=self.pipeline,
                           context_collapse=self.collapse, compact_context=self.compact_context,
                           stop_hooks=stop_hooks, thinking=cfg.thinking, memory=self.nested_memory.start,
                           post_tool_batch=self.hooks.batch_hooks(ctx),
                           stop_failure=(lh.stop_failure if (lh := self.hooks.lifecycle_if_hooked()) else None))
