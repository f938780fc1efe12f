"""Where a conversation meets the user's hooks (Claude Code's protocol, run by `codeloop.hooks`).

Owns the translation between hook outcomes and conversation behaviour: UserPromptSubmit can
block (erase) a prompt or add context; SessionStart adds context; PreToolUse can deny, ask,
allow or rewrite a tool call (deny rules still win over a hook's allow); PostToolUse feedback is
shown to the model and `continue: false` stops the turn; PostToolUseFailure feedback likewise;
PermissionRequest answers a permission prompt before anyone is asked; Stop hooks drive the loop's
stop_hook_blocking transition; PostCompact runs after a compaction, followed by SessionStart with
source `compact` (whose context joins the compacted history); PreCompact, Notification and
SessionEnd are told what happens. `SubagentLifecycle` is the Task tool's seam: SubagentStart and
SubagentStop hooks, and the `task_started` / `task_progress` / `task_notification` events.
Tool-lifecycle payloads carry `agent_id`/`agent_type` inside a subagent, and `duration_ms`.
The newer events go through `lifecycle` (hooks.lifecycle) and `watch` (hooks.watch): Setup before
SessionStart, InstructionsLoaded, MessageDisplay on what front ends show (`after_event`), and the
loop's after-batch step (CwdChanged, FileChanged, then PostToolBatch: `batch_hooks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codeloop.events import Event, SystemEvent
from codeloop.messages import Message, user_message
from codeloop.tools.base import PermissionBehavior, PermissionDecision

if TYPE_CHECKING:
    from codeloop.hooks.lifecycle import BatchVerdict, LifecycleHooks
    from codeloop.hooks.watch import WorkspaceWatch


@dataclass
class PostToolFeedback:
    """What the PostToolUse hooks said about a tool call."""
    feedback: str | None
    prevent_continuation: bool = False
    stop_reason: str | None = None


@dataclass
class PromptVerdict:
    """What the UserPromptSubmit hooks decided about a prompt."""
    blocked: bool
    events: list[Event]
    context: list[Message]
    stop_reason: str | None = None


def _notices(outcome: Any) -> list[Event]:
    events: list[Event] = [SystemEvent("hook_warning", m, "warning") for m in outcome.system_messages]
    events += [SystemEvent("hook_error", e, "warning") for e in outcome.errors]
    return events


def _context_message(texts: list[str], source: str) -> list[Message]:
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        return []
    body = "\n".join(texts)
    return [user_message(f"<system-reminder>\n{source} hook additional context:\n{body}\n</system-reminder>",
                         is_meta=True)]


class ConversationHooks:
    def __init__(self, runner: Any | None) -> None:
        # A hooks.runner.HookRunner, or None without hooks: every use asks has() first, which
        # mypy cannot follow, hence Any rather than Any | None.
        self.runner: Any = runner
        self.pending_notices: list[Event] = []
        self._lifecycle: LifecycleHooks | None = None
        self._watch: WorkspaceWatch | None = None

    # Built on first use: a session without hooks never loads the event vocabulary (start-up time).
    @property
    def lifecycle(self) -> LifecycleHooks:
        """The other events (PostToolBatch, PermissionDenied, MessageDisplay…); they read the
        runner late, as an SDK may install it after the session started."""
        if self._lifecycle is None:
            from codeloop.hooks.lifecycle import LifecycleHooks

            self._lifecycle = LifecycleHooks(lambda: self.runner, self.pending_notices.extend)
        return self._lifecycle

    @property
    def watch(self) -> WorkspaceWatch:
        """CwdChanged and FileChanged."""
        if self._watch is None:
            from codeloop.hooks.watch import WorkspaceWatch

            self._watch = WorkspaceWatch(self.lifecycle, lambda: self.runner)
        return self._watch

    def lifecycle_if_hooked(self) -> LifecycleHooks | None:
        """The lifecycle events for a tool or the loop, None while there are no hooks at all."""
        return self.lifecycle if self.runner is not None else None

    async def check_workspace(self, cwd: Any) -> None:
        """CwdChanged, FileChanged since the last look (nothing to look at without hooks)."""
        if self.runner is not None:
            await self.watch.check(cwd)

    def has(self, event: str, match: str | None = None) -> bool:
        return self.runner is not None and self.runner.has_hooks(event, match)

    async def user_prompt(self, prompt: str, prompt_id: str | None = None) -> PromptVerdict:
        if self.runner is not None and prompt_id:
            self.runner.prompt_id = prompt_id
        if not self.has("UserPromptSubmit"):
            return PromptVerdict(False, [], [])
        out = await self.runner.run("UserPromptSubmit", {"prompt": prompt})
        events = _notices(out)
        if out.blocked or out.prevent_continuation:
            why = "; ".join(out.block_reasons) or out.stop_reason or "blocked by a UserPromptSubmit hook"
            events.append(SystemEvent("hook_blocked", f"Prompt blocked by a hook: {why}", "error"))
            return PromptVerdict(True, events, [], why)
        return PromptVerdict(False, events, _context_message(out.additional_context + out.output, "UserPromptSubmit"))

    async def setup(self, trigger: str) -> list[Message]:
        """Setup hooks (--init: init, --maintenance: maintenance); their additionalContext goes to the model."""
        if not self.has("Setup", trigger):
            return []
        out = await self.runner.run("Setup", {"trigger": trigger}, match_value=trigger)
        self.pending_notices += _notices(out)
        return _context_message(out.additional_context, "Setup")

    async def session_start(self, source: str) -> list[Message]:
        if not self.has("SessionStart", source):
            return []
        out = await self.runner.run("SessionStart", {"source": source}, match_value=source)
        self.pending_notices += _notices(out)
        self.watch.add(out.watch_paths)
        return _context_message(out.additional_context + out.output, "SessionStart")

    async def pre_tool(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str,
                       agent: dict[str, Any] | None = None) -> Any | None:
        if not self.has("PreToolUse", tool_name):
            return None
        out = await self.runner.run("PreToolUse", {"tool_name": tool_name, "tool_input": tool_input,
                                                   "tool_use_id": tool_use_id, **(agent or {})}, match_value=tool_name)
        self.pending_notices += _notices(out)
        return out

    async def post_tool(self, tool_name: str, tool_input: dict[str, Any], response: Any, tool_use_id: str, *,
                        error: str | None = None, duration_ms: int | None = None, is_interrupt: bool = False,
                        agent: dict[str, Any] | None = None) -> PostToolFeedback | None:
        """PostToolUse after a tool succeeded; PostToolUseFailure (with `error`) after it failed."""
        event = "PostToolUse" if error is None else "PostToolUseFailure"
        if not self.has(event, tool_name):
            return None
        payload: dict[str, Any] = {"tool_name": tool_name, "tool_input": tool_input, "tool_use_id": tool_use_id,
                                   **(agent or {})}
        if error is None:
            payload["tool_response"] = response
        else:
            payload.update(error=error, is_interrupt=is_interrupt)
        if duration_ms is not None:
            payload["duration_ms"] = int(duration_ms)
        out = await self.runner.run(event, payload, match_value=tool_name)
        self.pending_notices += _notices(out)
        parts = [f"{event} hook feedback:\n{r}" for r in out.block_reasons]
        parts += list(out.additional_context)
        return PostToolFeedback("\n".join(parts) or None, out.prevent_continuation, out.stop_reason)

    async def permission_request(self, tool_name: str, tool_input: dict[str, Any],
                                 agent: dict[str, Any] | None = None) -> PermissionDecision | None:
        """PermissionRequest hooks answer a prompt before anyone is asked: allow, deny, or None (ask)."""
        if not self.has("PermissionRequest", tool_name):
            return None
        out = await self.runner.run("PermissionRequest", {"tool_name": tool_name, "tool_input": tool_input,
                                                          "permission_suggestions": [], **(agent or {})},
                                    match_value=tool_name)
        self.pending_notices += _notices(out)
        verdict = out.permission_request or {}
        if out.blocked or verdict.get("behavior") == "deny":
            why = verdict.get("message") or "; ".join(out.block_reasons) or "denied by a PermissionRequest hook"
            return PermissionDecision(PermissionBehavior.DENY, f"Permission to use {tool_name} was denied: {why}")
        if verdict.get("behavior") == "allow":
            updated = verdict.get("updatedInput")
            return PermissionDecision(PermissionBehavior.ALLOW, updated_input=updated if isinstance(updated, dict)
                                      else None)
        return None

    def batch_hooks(self, ctx: Any) -> Any:
        """The loop's post_tool_batch: the main thread's working folder and watched files first
        (CwdChanged, FileChanged), then the PostToolBatch hooks. None without hooks (built per prompt,
        so hooks an SDK installs before a prompt are heard)."""
        if self.runner is None:
            return None

        async def after_batch(tool_calls: list[dict[str, Any]], agent: dict[str, Any] | None) -> BatchVerdict:
            if agent is None:
                await self.watch.check(ctx.cwd)
            return await self.lifecycle.post_tool_batch(tool_calls, agent)
        return after_batch

    def stop_hooks(self, event: str = "Stop") -> Any | None:
        """Stop hooks for the main loop, or SubagentStop hooks (`event="SubagentStop"`) for subagents."""
        if not self.has(event):
            return None
        from codeloop.hooks.events import HookEvent
        from codeloop.hooks.stop import StopHookAdapter

        return StopHookAdapter(self.runner, event=HookEvent(event))

    async def pre_compact(self, trigger: str, focus: str | None) -> None:
        if self.has("PreCompact", trigger):
            out = await self.runner.run("PreCompact", {"trigger": trigger, "custom_instructions": focus or ""},
                                        match_value=trigger)
            self.pending_notices += _notices(out)

    async def post_compact(self, trigger: str, summary: str) -> list[Message]:
        """After a compaction: PostCompact, then SessionStart(compact), whose context joins the new history."""
        if self.has("PostCompact", trigger):
            out = await self.runner.run("PostCompact", {"trigger": trigger, "compact_summary": summary},
                                        match_value=trigger)
            self.pending_notices += _notices(out)
        return await self.session_start("compact")

    async def notify(self, message: str, notification_type: str = "permission_prompt") -> None:
        if self.has("Notification", notification_type):
            out = await self.runner.run("Notification", {"message": message, "notification_type": notification_type},
                                        match_value=notification_type)
            self.pending_notices += _notices(out)

    async def session_end(self, reason: str) -> None:
        if self.has("SessionEnd"):
            await self.runner.run("SessionEnd", {"reason": reason})

    async def instructions_loaded(self, user_context: dict[str, str], reason: str) -> None:
        """InstructionsLoaded for each CLAUDE.md file in the user context (`reason`: session_start |
        compact)."""
        if not self.has("InstructionsLoaded", reason):
            return
        from codeloop.context.prompt import loaded_instruction_files

        for path, memory_type in loaded_instruction_files(user_context.get("claudeMd", "")):
            await self.lifecycle.instructions_loaded(path, memory_type, reason)

    async def after_event(self, ev: Event, user_context: dict[str, str]) -> Event:
        """The hooks a main-thread event fires, and what a front end shows of it: a nested CLAUDE.md
        attached fires InstructionsLoaded (nested_traversal), a compaction InstructionsLoaded
        (compact), an assistant text MessageDisplay (`display`)."""
        from codeloop.events import AttachmentEvent, CompactBoundary

        if self.runner is None:
            return ev
        if isinstance(ev, AttachmentEvent) and ev.attachment.get("type") == "nested_memory":
            path = str(ev.attachment.get("path", ""))
            local = path.endswith("CLAUDE.local.md")
            await self.lifecycle.instructions_loaded(path, "Local" if local else "Project", "nested_traversal")
        elif isinstance(ev, CompactBoundary):
            await self.instructions_loaded(user_context, "compact")
        return await self.display(ev)

    async def display(self, ev: Event) -> Event:
        """MessageDisplay: the event a front end shows for an assistant text (a copy whose text is
        the hooks' displayContent). The history and what the model sees keep the original."""
        from codeloop.events import AssistantEvent

        if not isinstance(ev, AssistantEvent) or ev.message.is_api_error or not self.lifecycle.displays():
            return ev
        msg = ev.message
        text = "".join(b.get("text", "") for b in msg.content if b.get("type") == "text")
        shown = await self.lifecycle.message_display(text, turn_id=self.runner.prompt_id or "", message_id=msg.uuid)
        if shown == text:
            return ev
        import dataclasses

        blocks, placed = [], False
        for b in msg.content:   # the text goes where the first text block was; other blocks stay
            if b.get("type") != "text":
                blocks.append(b)
            elif not placed:
                blocks.append({**b, "text": shown})
                placed = True
        return AssistantEvent(dataclasses.replace(msg, content=blocks))

    def drain_notices(self) -> list[Event]:
        notices, self.pending_notices = self.pending_notices, []
        return notices


class SubagentLifecycle:
    """The Task tool's seam: hooks and task events around one subagent run.

    `emit` is the parent's side channel (`ToolContext.emit`): the events reach the front end, never
    the history. task_type is `local_agent`, as Claude Code reports foreground subagents."""

    def __init__(self, hooks: ConversationHooks) -> None:
        self.hooks = hooks

    async def start(self, emit: Any, *, agent_id: str, agent_type: str, description: str, prompt: str,
                    tool_use_id: str | None) -> list[Message]:
        """task_started, then SubagentStart hooks; their additionalContext goes to the subagent."""
        if emit is not None:
            emit(SystemEvent("task_started", data={"task_id": agent_id, "tool_use_id": tool_use_id,
                                                   "description": description, "task_type": "local_agent",
                                                   "prompt": prompt}))
        if not self.hooks.has("SubagentStart", agent_type):
            return []
        out = await self.hooks.runner.run("SubagentStart", {"agent_id": agent_id, "agent_type": agent_type},
                                          match_value=agent_type)
        self.hooks.pending_notices += _notices(out)
        return _context_message(out.additional_context, "SubagentStart")

    def stop_hooks(self, *, agent_id: str, agent_type: str, transcript_path: str) -> Any | None:
        base = self.hooks.stop_hooks("SubagentStop")
        if base is None:
            return None
        return base.bind(agent_id=agent_id, agent_type=agent_type, agent_transcript_path=transcript_path)

    @staticmethod
    def progress(emit: Any, *, agent_id: str, tool_use_id: str | None, description: str, last_tool_name: str,
                 total_tokens: int, tool_uses: int, duration_ms: int) -> None:
        """task_progress: the subagent called a tool (running totals)."""
        if emit is not None:
            emit(SystemEvent("task_progress", data={
                "task_id": agent_id, "tool_use_id": tool_use_id, "description": description,
                "last_tool_name": last_tool_name, "usage": {"total_tokens": total_tokens, "tool_uses": tool_uses,
                                                            "duration_ms": duration_ms}}))

    @staticmethod
    def end(emit: Any, *, agent_id: str, tool_use_id: str | None, status: str, summary: str, output_file: str,
            total_tokens: int, tool_uses: int, duration_ms: int) -> None:
        """task_notification: completed | failed | stopped, with the usage the SDK reports."""
        if emit is not None:
            emit(SystemEvent("task_notification", data={
                "task_id": agent_id, "tool_use_id": tool_use_id, "status": status, "output_file": output_file,
                "summary": summary, "usage": {"total_tokens": total_tokens, "tool_uses": tool_uses,
                                              "duration_ms": duration_ms}}))
