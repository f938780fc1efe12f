"""Firing the hook events that answer with more (or less) than a permission: one function each.

`LifecycleHooks` is the public seam the loop, the session, the front ends and the tools call at
each event's firing point (the README's hook table says which fire where). It reads the runner
through a getter, since an Agent SDK may install its callbacks after the session started, and
hands what the hooks said to the user (`systemMessage`, non-blocking errors) to `notify`.
Without hooks for an event every function returns at once, with nothing to do.

What the answers mean, per event (Claude Code's semantics):
PostToolBatch — additionalContext joins the next request once; exit 2 / `continue: false` stop the
loop. PermissionDenied — `retry: true` tells the model it may make the call again. StopFailure —
fire and forget: output and exit codes are ignored. InstructionsLoaded — observability only.
MessageDisplay — `displayContent` replaces the text on screen, never in the history. TaskCreated /
TaskCompleted — exit 2 refuses the change, with stderr for the model. WorktreeCreate — the hook
creates the worktree and prints its path; WorktreeRemove removes it. CwdChanged / FileChanged —
`watchPaths` add files to watch. UserPromptExpansion — exit 2 blocks the expansion; stdout and
additionalContext are context for the model.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codeloop.events import Event, SystemEvent
from codeloop.hooks.events import HookEvent

if TYPE_CHECKING:
    from codeloop.hooks.outcome import HookOutcome
    from codeloop.hooks.runner import HookRunner

# Claude Code's StopFailure matcher values (the error types of an API failure that ended a turn).
STOP_FAILURE_ERRORS = ("rate_limit", "overloaded", "authentication_failed", "billing_error", "invalid_request",
                       "model_not_found", "server_error", "max_output_tokens", "unknown")


def stop_failure_error(error: Any) -> str:
    """The StopFailure error type of a provider error (read by shape: hooks import no provider)."""
    status = getattr(error, "status", None)
    kind = str(getattr(error, "error_type", "") or "")
    name = type(error).__name__
    if status == 429 or kind == "rate_limit_error":
        return "rate_limit"
    if status == 529 or kind == "overloaded_error":
        return "overloaded"
    if status in (401, 403) or kind in ("authentication_error", "permission_error") or name == "AuthenticationError":
        return "authentication_failed"
    if status == 402 or kind == "billing_error":
        return "billing_error"
    if status == 404 or kind == "not_found_error":
        return "model_not_found"
    if status in (400, 413) or kind in ("invalid_request_error", "request_too_large") \
            or name == "ContextOverflowError":
        return "invalid_request"
    if (isinstance(status, int) and status >= 500) or kind == "api_error":
        return "server_error"
    return "unknown"


def notices(outcome: HookOutcome) -> list[Event]:
    """What a hook said to the user: its system messages and its non-blocking errors."""
    events: list[Event] = [SystemEvent("hook_warning", m, "warning") for m in outcome.system_messages]
    return events + [SystemEvent("hook_error", e, "warning") for e in outcome.errors]


@dataclass
class BatchVerdict:
    """What the PostToolBatch hooks said: context for the next request, or a stop."""
    context: list[str] = field(default_factory=list)
    stop_reason: str | None = None


@dataclass
class Refusal:
    """A TaskCreated/TaskCompleted/UserPromptExpansion answer: refused (with the reason) or not."""
    refused: bool = False
    reason: str = ""
    context: list[str] = field(default_factory=list)


@dataclass
class WorktreeAnswer:
    """What WorktreeCreate hooks did: the worktree's path, or why creating it failed."""
    path: str | None = None
    error: str | None = None
    configured: bool = True   # False: no WorktreeCreate hook, so git makes the worktree


class LifecycleHooks:
    """`runner()` is the session's HookRunner (None without hooks); `notify` shows notices."""

    def __init__(self, runner: Callable[[], HookRunner | None], notify: Callable[[list[Event]], None]) -> None:
        self._runner, self._notify = runner, notify

    def has(self, event: HookEvent, match: str | None = None) -> bool:
        runner = self._runner()
        return runner is not None and runner.has_hooks(event, match)

    async def _run(self, event: HookEvent, payload: dict[str, Any], *, show: bool = True) -> HookOutcome | None:
        runner = self._runner()
        if runner is None:
            return None
        from codeloop.hooks.events import match_value

        if not runner.has_hooks(event, match_value(event, payload)):
            return None
        out = await runner.run(event, payload)
        if show:
            self._notify(notices(out))
        return out

    # -- the loop -------------------------------------------------------------------------------
    async def post_tool_batch(self, tool_calls: list[dict[str, Any]],
                              agent: dict[str, Any] | None = None) -> BatchVerdict:
        """Once after every tool call of a batch resolved, before the next model request."""
        out = await self._run(HookEvent.POST_TOOL_BATCH, {"tool_calls": tool_calls, **(agent or {})})
        if out is None:
            return BatchVerdict()
        if out.blocked or out.prevent_continuation:
            why = "; ".join(out.block_reasons) or out.stop_reason or "a PostToolBatch hook stopped the turn"
            return BatchVerdict(stop_reason=why)
        return BatchVerdict(context=[c for c in out.additional_context if c.strip()])

    async def stop_failure(self, error: Any, last_assistant_message: str = "",
                           agent: dict[str, Any] | None = None) -> None:
        """Instead of Stop, when an API error ended the turn. Output and exit codes are ignored."""
        kind = error if isinstance(error, str) and error in STOP_FAILURE_ERRORS else stop_failure_error(error)
        await self._run(HookEvent.STOP_FAILURE, {"error": kind, "error_details": str(error),
                                                 "last_assistant_message": last_assistant_message, **(agent or {})},
                        show=False)

    # -- permissions ----------------------------------------------------------------------------
    async def permission_denied(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str, reason: str,
                                agent: dict[str, Any] | None = None) -> bool:
        """After the permission system denied a call without asking anyone. True: the model may retry."""
        out = await self._run(HookEvent.PERMISSION_DENIED, {"tool_name": tool_name, "tool_input": tool_input,
                                                            "tool_use_id": tool_use_id, "reason": reason,
                                                            **(agent or {})})
        return bool(out is not None and out.retry)

    # -- context --------------------------------------------------------------------------------
    async def instructions_loaded(self, file_path: str, memory_type: str, load_reason: str, *,
                                  globs: list[str] | None = None, trigger_file_path: str | None = None,
                                  parent_file_path: str | None = None) -> None:
        """An instruction file (CLAUDE.md, a rule) was loaded. Observability only: nothing blocks."""
        await self._run(HookEvent.INSTRUCTIONS_LOADED, {
            "file_path": file_path, "memory_type": memory_type, "load_reason": load_reason, "globs": globs,
            "trigger_file_path": trigger_file_path, "parent_file_path": parent_file_path})

    async def user_prompt_expansion(self, command_name: str, command_args: str, command_source: str,
                                    prompt: str) -> Refusal:
        """A user-typed slash command expands into a prompt: exit 2 blocks it; stdout is context."""
        out = await self._run(HookEvent.USER_PROMPT_EXPANSION, {
            "expansion_type": "slash_command", "command_name": command_name, "command_args": command_args,
            "command_source": command_source, "prompt": prompt})
        if out is None:
            return Refusal()
        if out.blocked or out.prevent_continuation:
            return Refusal(True, "; ".join(out.block_reasons) or out.stop_reason or "blocked by a hook")
        return Refusal(context=[t for t in [*out.additional_context, *out.output] if t.strip()])

    # -- display --------------------------------------------------------------------------------
    def displays(self) -> bool:
        return self.has(HookEvent.MESSAGE_DISPLAY)

    async def message_display(self, text: str, *, turn_id: str, message_id: str, index: int = 0,
                              final: bool = True) -> str:
        """The text to show for `text` (display only: the history keeps the original)."""
        if not text:
            return text
        out = await self._run(HookEvent.MESSAGE_DISPLAY, {"turn_id": turn_id, "message_id": message_id,
                                                          "index": index, "final": final, "delta": text})
        return out.display_content if out is not None and out.display_content is not None else text

    # -- the workspace --------------------------------------------------------------------------
    async def cwd_changed(self, old_cwd: str, new_cwd: str) -> list[str]:
        """After the working directory changed; the answer is the files to watch."""
        out = await self._run(HookEvent.CWD_CHANGED, {"old_cwd": old_cwd, "new_cwd": new_cwd})
        return list(out.watch_paths) if out is not None else []

    async def file_changed(self, file_path: str, event: str) -> list[str]:
        """A watched file changed (`event`: change | add | unlink); the answer adds files to watch."""
        out = await self._run(HookEvent.FILE_CHANGED, {"file_path": file_path, "event": event})
        return list(out.watch_paths) if out is not None else []

    # -- tasks and worktrees (the TaskCreate/TaskUpdate and EnterWorktree/ExitWorktree tools) ------
    async def task_created(self, task_id: str, subject: str, description: str = "",
                           agent: dict[str, Any] | None = None) -> Refusal:
        return await self._task(HookEvent.TASK_CREATED, task_id, subject, description, agent)

    async def task_completed(self, task_id: str, subject: str, description: str = "",
                             agent: dict[str, Any] | None = None) -> Refusal:
        return await self._task(HookEvent.TASK_COMPLETED, task_id, subject, description, agent)

    async def _task(self, event: HookEvent, task_id: str, subject: str, description: str,
                    agent: dict[str, Any] | None) -> Refusal:
        out = await self._run(event, {"task_id": task_id, "task_subject": subject, "task_description": description,
                                      **(agent or {})})
        if out is not None and (out.blocked or out.prevent_continuation):
            verb = "creation" if event is HookEvent.TASK_CREATED else "completion"
            return Refusal(True, "; ".join(out.block_reasons) or out.stop_reason
                           or f"a {event.value} hook refused the task's {verb}")
        return Refusal()

    def creates_worktrees(self) -> bool:
        """A WorktreeCreate hook replaces `git worktree add` (for other version control systems)."""
        return self.has(HookEvent.WORKTREE_CREATE)

    async def worktree_create(self, name: str) -> WorktreeAnswer:
        out = await self._run(HookEvent.WORKTREE_CREATE, {"name": name}, show=False)
        if out is None:
            return WorktreeAnswer(error="no WorktreeCreate hook is configured", configured=False)
        if out.blocked or out.errors:
            return WorktreeAnswer(error="; ".join([*out.block_reasons, *out.errors]))
        path = out.worktree_path or (out.output[-1].strip().splitlines()[-1].strip() if out.output else "")
        if not path:
            return WorktreeAnswer(error="the WorktreeCreate hook printed no worktree path")
        runner = self._runner()
        base = runner.cwd if runner is not None else os.getcwd()
        return WorktreeAnswer(path=os.path.normpath(os.path.join(base, path)))

    async def worktree_remove(self, worktree_path: str) -> list[str]:
        """The errors of the WorktreeRemove hooks (none: removed, or no hook configured)."""
        out = await self._run(HookEvent.WORKTREE_REMOVE, {"worktree_path": worktree_path}, show=False)
        return list(out.errors) if out is not None else []

    # -- for features codeloop lacks yet: MCP elicitation, settings reloaded mid-session ------------
    async def elicitation(self, server: str, message: str, requested_schema: dict[str, Any], *, mode: str = "form",
                          url: str | None = None, elicitation_id: str | None = None) -> dict[str, Any] | None:
        """An MCP server asks the user for input: a hook may answer for them ({"action", "content"?});
        exit 2 declines. None: ask the user."""
        out = await self._run(HookEvent.ELICITATION, {"mcp_server_name": server, "message": message, "mode": mode,
                                                      "url": url, "elicitation_id": elicitation_id,
                                                      "requested_schema": requested_schema})
        if out is not None and out.blocked:
            return {"action": "decline"}
        return out.elicitation if out is not None else None

    async def elicitation_result(self, server: str, action: str, content: dict[str, Any] | None, *,
                                 mode: str = "form", elicitation_id: str | None = None) -> dict[str, Any]:
        """The user answered an elicitation: hooks may override the answer; exit 2 declines it."""
        answer = {"action": action, **({"content": content} if content is not None else {})}
        payload = {"mcp_server_name": server, "elicitation_id": elicitation_id, "mode": mode, "action": action,
                   "content": content or {}}
        out = await self._run(HookEvent.ELICITATION_RESULT, payload)
        if out is not None and out.blocked:
            return {"action": "decline"}
        return out.elicitation if out is not None and out.elicitation is not None else answer

    async def config_change(self, source: str, file_path: str) -> bool:
        """A settings file changed mid-session: True when a hook blocks applying it (never for
        policy settings, which no hook may refuse)."""
        out = await self._run(HookEvent.CONFIG_CHANGE, {"source": source, "file_path": file_path})
        return bool(out is not None and (out.blocked or out.prevent_continuation) and source != "policy_settings")
