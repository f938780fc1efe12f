"""How a Conversation's own parts are wired at construction: transcript writer, the tools' typed
context, the context pipeline with its compactor, nested memory and file checkpoints.

For the main thread these are the session's own; for a subagent (`conv.sidechain`) the transcript
is a sidechain file beside the parent's, and the tool context shares the parent's background
tasks, checkpoints, live output and usage totals — but gets its own history, pipeline and
compactor, so a long subagent run compacts and recovers exactly as the main thread does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.events import ApiCallEvent
from codeloop.tools.base import Tool, ToolContext

if TYPE_CHECKING:
    from codeloop.session.conversation import Conversation


def subagent_transcript_path(session_dir: Path, agent_id: str) -> Path:
    return session_dir / "subagents" / f"agent-{agent_id}.jsonl"


def make_writer(conv: Conversation) -> tuple[Path, Any]:
    """(transcript path, writer or None)."""
    from codeloop.session import store
    from codeloop.session.transcript import TranscriptWriter

    side = conv.sidechain
    if side is not None:
        parent_dir = side.parent.session_dir
        path = subagent_transcript_path(parent_dir, side.agent_id) if parent_dir is not None else None
        if path is None or not conv.config.persist:
            return path or Path(), None
        return path, TranscriptWriter(path, conv.session_id, str(conv.config.cwd),
                                      tags={"isSidechain": True, "agentId": side.agent_id})
    path = store.session_path(conv.config.cwd, conv.session_id)
    if not conv.config.persist:
        return path, None
    writer = TranscriptWriter(path, conv.session_id, str(conv.config.cwd))
    writer.claude_records = conv.parts.claude_records   # Claude Code's (and the SDK's) session readers
    writer.pending_records.extend(conv.parts.records)
    return path, writer


def make_context(conv: Conversation) -> ToolContext:
    """The tools' typed capabilities for this conversation."""
    from codeloop.session import store

    cfg, side = conv.config, conv.sidechain
    policy = cfg.policy
    ctx = ToolContext(
        cwd=cfg.cwd, project_dir=cfg.cwd, non_interactive=not cfg.interactive, session_id=conv.session_id,
        model=cfg.model, main_model=cfg.model, entrypoint=cfg.entrypoint, ended_by_model=conv.ended_by_model,
        messages=lambda: conv.messages, append_entry=conv._write_entry, emit=conv._on_side_event,
        post_tool_use=conv.hooks.post_tool,  # a no-op without hooks; SDK hooks may arrive later
        path_guard=policy.guard_path, denied_inodes=policy.denied_inodes, feature_flags=dict(cfg.feature_flags),
        policy=policy, sandbox=policy.sandbox, project_trusted=conv.trusted)
    if side is None:
        ctx.session_dir = store.session_dir(cfg.cwd, conv.session_id)
        if any(t.name == "Agent" for t in cfg.tools):
            ctx.spawn_subagent = conv._spawn_subagent
        from codeloop.session.background import wire_background
        wire_background(ctx, conv.queue)  # each background shell or agent that ends is announced
    else:
        parent = side.parent
        ctx.cwd, ctx.project_dir = parent.cwd, parent.project_dir
        ctx.session_dir = parent.session_dir / "subagents" / f"agent-{side.agent_id}" if parent.session_dir else None
        ctx.agent_id, ctx.agent_type, ctx.abort = side.agent_id, side.agent_type, side.abort
        ctx.non_interactive, ctx.entrypoint = parent.non_interactive, parent.entrypoint
        ctx.read_denied, ctx.background, ctx.live_output = parent.read_denied, parent.background, parent.live_output
        ctx.project_trusted = parent.project_trusted
    ctx.tool_pool = conv.tool_pool()
    return ctx


def setup_context(conv: Conversation, entries: list[dict[str, Any]]) -> None:
    """The five-stage pipeline (spec 004 §8) and its compactor, with state that survives resume;
    nested memory and file checkpoints."""
    from codeloop.context.collapse import ContextCollapse
    from codeloop.context.compact import Compactor
    from codeloop.context.memory import NestedMemory
    from codeloop.context.pipeline import ContentReplacementState, ContextPipeline
    from codeloop.providers.metered import MeteredProvider

    side = conv.sidechain

    def metered(model: str, usage: Any, ms: float) -> None:
        ev = ApiCallEvent(model, usage, ms, None)
        conv._record_api_call(ev)
        if side is not None:
            side.record_usage(ev)   # summaries and side calls count in the parent's totals too

    conv.collapse = ContextCollapse()
    # summaries and labels are paid for too: their usage joins the session's totals
    conv.side_provider = conv.tool_context.side_provider = MeteredProvider(conv.provider, metered)
    conv.compactor = Compactor(conv.side_provider, conv.config.model, context=conv.compact_context,
                               before_compact=conv.hooks.pre_compact, after_compact=conv.hooks.post_compact)
    conv.pipeline = ContextPipeline(
        compactor=conv.compactor, session_dir=conv.tool_context.session_dir,
        exempt_tools=ContextPipeline.exempt_from_tools(conv.config.tools), collapse=conv.collapse,
        replacement_state=ContentReplacementState.from_entries(entries), count_tokens=lambda m: count_tokens(conv, m))
    conv.nested_memory = NestedMemory(conv.config.cwd)   # nested CLAUDE.md: attached as folders are touched
    if conv.parts.memory_file_names is not None:
        conv.nested_memory.file_names = conv.parts.memory_file_names
    if side is not None:
        conv.file_history = side.file_history
    elif conv.parts.file_history is not None:   # the old checkpoints stay valid for the kept prompts
        conv.file_history = conv.parts.file_history
        conv.file_history.append_entry = conv._write_entry if conv.writer is not None else None
    else:
        from codeloop.session import store
        from codeloop.session.checkpoints import FileHistory

        conv.file_history = FileHistory(store.config_dir() / "file-history" / conv.session_id,
                                        conv._write_entry if conv.writer is not None else None)
    conv.tool_context.before_write = conv.file_history.before_write if conv.file_history is not None else None


async def count_tokens(conv: Conversation, messages: list[Any]) -> int | None:
    """The provider's token count for these messages with the session's prompt, on the model in use."""
    counter = getattr(conv.provider, "count_tokens", None)
    if counter is None:
        return None
    from codeloop.loop.request import build_request

    return await counter(build_request(model=conv.model, messages=messages, system_prompt=conv.config.system_prompt,
                                       user_context=conv.config.user_context, tools=conv.config.tools))


def mcp_tools(conv: Conversation) -> list[Tool]:
    """The tools of the connected MCP servers (shared with subagents), as the session may use them."""
    tools = list(conv.mcp.tools()) if conv.mcp is not None else []
    side = conv.sidechain
    if side is None or not tools:
        return tools
    from codeloop.tools.registry import canonical_name

    keep = None if side.allowed_tools is None else {canonical_name(t) for t in side.allowed_tools}
    return [t for t in tools if (keep is None or t.name in keep) and t.name not in side.disallowed_tools]
