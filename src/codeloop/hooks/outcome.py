"""What hooks said: one process's exit code and output, read with Claude Code's semantics, and the
aggregate over all hooks that ran for one event.

Exit codes: 0 — success; stdout is parsed as JSON when it is a JSON object, otherwise it is
context for UserPromptSubmit/SessionStart (and display-only output elsewhere). 2 — a blocking
error: stdout (and any JSON in it) is ignored and stderr is the reason; for events that cannot
block (Notification, PreCompact, SessionStart, SessionEnd) it is shown to the user. Anything else
— a non-blocking error shown to the user; the action goes on.

Aggregation over parallel hooks: deny beats ask beats allow; any `continue: false` wins (the first
stopReason is kept); block reasons, context, system messages and errors are concatenated in
configuration order; the *last* `updatedInput` in configuration order wins (not the last to
finish, so the result is deterministic).

In-process callbacks (the SDK's) answer with the JSON object directly (`add_callback`); one that
raised is a non-blocking error, or a block when its matcher says `onFailure: block`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from codeloop.hooks.events import HookCallback, HookCommand, HookEvent, OnFailure

BLOCKING_EXIT_CODE = 2

# Events where exit 2 / decision "block" actually blocks something (PostToolBatch: stops the loop;
# Task*: the task is not created/completed; ConfigChange: the change is not applied; Elicitation*:
# declined; WorktreeCreate: creation failed).
CAN_BLOCK = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.USER_PROMPT_SUBMIT,
                       HookEvent.STOP, HookEvent.SUBAGENT_STOP, HookEvent.POST_TOOL_USE_FAILURE,
                       HookEvent.PERMISSION_REQUEST, HookEvent.POST_TOOL_BATCH, HookEvent.USER_PROMPT_EXPANSION,
                       HookEvent.TEAMMATE_IDLE, HookEvent.TASK_CREATED, HookEvent.TASK_COMPLETED,
                       HookEvent.ELICITATION, HookEvent.ELICITATION_RESULT, HookEvent.CONFIG_CHANGE,
                       HookEvent.WORKTREE_CREATE})
# Events whose plain (non-JSON) stdout on exit 0 becomes context for the model.
STDOUT_IS_CONTEXT = frozenset({HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START,
                               HookEvent.USER_PROMPT_EXPANSION})
# Events whose hookSpecificOutput may carry `watchPaths` (files for the FileChanged watcher).
_WATCH_EVENTS = frozenset({HookEvent.SESSION_START, HookEvent.CWD_CHANGED, HookEvent.FILE_CHANGED})
_ELICITATION_ACTIONS = ("accept", "decline", "cancel")


class HookPermissionDecision(str, Enum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


_RANK = {HookPermissionDecision.ALLOW: 0, HookPermissionDecision.ASK: 1, HookPermissionDecision.DENY: 2}
# Pre-hookSpecificOutput PreToolUse hooks answered with a top-level decision.
_LEGACY_PRE_TOOL = {"approve": HookPermissionDecision.ALLOW, "block": HookPermissionDecision.DENY}


@dataclass
class HookProcessResult:
    """How one hook process ended: exit code, output and any timeout or start error."""
    hook: HookCommand
    exit_code: int | None          # None when the hook was killed at its timeout or failed to start
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    start_error: str | None = None


@dataclass
class HookOutcome:
    """What the hooks of one event decided, merged: blocks, permission, input and context."""
    blocked: bool = False
    block_reasons: list[str] = field(default_factory=list)
    prevent_continuation: bool = False
    stop_reason: str | None = None
    permission_decision: str | None = None       # "allow" | "ask" | "deny" (PreToolUse)
    permission_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    # PermissionRequest: {"behavior": "allow"|"deny", "updatedInput"?, "message"?, "interrupt"?}
    permission_request: dict[str, Any] | None = None
    additional_context: list[str] = field(default_factory=list)
    system_messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)       # non-blocking, shown to the user
    suppress_output: bool = False
    # Plain stdout of successful hooks that was not consumed as JSON or context: display-only
    # (Claude Code shows it in transcript mode unless suppressOutput).
    output: list[str] = field(default_factory=list)
    hooks_run: int = 0
    retry: bool = False                          # PermissionDenied: the model may try the call again
    display_content: str | None = None           # MessageDisplay: shown instead of the text
    watch_paths: list[str] = field(default_factory=list)   # SessionStart/CwdChanged/FileChanged
    # Elicitation/ElicitationResult: {"action": "accept"|"decline"|"cancel", "content"?: {...}}
    elicitation: dict[str, Any] | None = None
    worktree_path: str | None = None             # WorktreeCreate (else its plain stdout)


@dataclass
class _Decision:
    """A permission decision from one hook and its reason."""
    value: HookPermissionDecision
    reason: str | None


def _label(event: HookEvent, hook: HookCommand) -> str:
    return f"{event.value} hook `{hook.command}`"


def _as_json_object(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


class _Aggregate:
    def __init__(self, event: HookEvent) -> None:
        self.event = event
        self.out = HookOutcome()
        self.decisions: list[_Decision] = []

    def block(self, reason: str) -> None:
        self.out.blocked = True
        self.out.block_reasons.append(reason)
        if self.event is HookEvent.PRE_TOOL_USE:
            # A blocked tool call is a denied one: the lead need only read permission_decision.
            self.decisions.append(_Decision(HookPermissionDecision.DENY, reason))

    def add(self, r: HookProcessResult) -> None:
        self.out.hooks_run += 1
        label = _label(self.event, r.hook)
        if r.start_error is not None:
            self.out.errors.append(f"{label} could not start: {r.start_error}")
        elif r.timed_out:
            self.out.errors.append(f"{label} timed out after {r.hook.timeout:g}s and was killed")
        elif r.exit_code == 0:
            self._success(r)
        elif r.exit_code == BLOCKING_EXIT_CODE:
            reason = r.stderr.strip() or f"{label} exited with code 2"
            if self.event in CAN_BLOCK:
                self.block(reason)
            else:
                self.out.errors.append(f"{label}: {reason}")
        else:
            detail = r.stderr.strip() or r.stdout.strip()
            self.out.errors.append(f"{label} failed with exit code {r.exit_code}"
                                   + (f": {detail}" if detail else ""))

    def add_callback(self, cb: HookCallback, output: dict[str, Any] | None, error: str | None) -> None:
        """An in-process hook's answer (`output`), or the error it failed with."""
        self.out.hooks_run += 1
        label = f"{self.event.value} hook {cb.label}"
        if error is not None:
            if cb.on_failure is OnFailure.BLOCK and self.event in CAN_BLOCK:
                self.block(f"{label} failed: {error}")
            else:
                self.out.errors.append(f"{label} failed: {error}")
            return
        self._json(output or {}, label)

    def _success(self, r: HookProcessResult) -> None:
        data = _as_json_object(r.stdout)
        if data is None:
            text = r.stdout.strip()
            if text and self.event in STDOUT_IS_CONTEXT:
                self.out.additional_context.append(text)
            elif text:
                self.out.output.append(text)
            return
        self._json(data, _label(self.event, r.hook))

    def _json(self, data: dict[str, Any], label: str) -> None:
        out = self.out
        if data.get("continue") is False:
            out.prevent_continuation = True
            if out.stop_reason is None and isinstance(data.get("stopReason"), str):
                out.stop_reason = data["stopReason"]
        if data.get("suppressOutput") is True:
            out.suppress_output = True
        if isinstance(data.get("systemMessage"), str) and data["systemMessage"]:
            out.system_messages.append(data["systemMessage"])
        decision, reason = data.get("decision"), data.get("reason")
        reason = reason if isinstance(reason, str) and reason.strip() else None
        if self.event is HookEvent.PRE_TOOL_USE and decision in _LEGACY_PRE_TOOL:
            legacy = _LEGACY_PRE_TOOL[decision]
            if legacy is HookPermissionDecision.DENY:
                self.block(reason or f"{label} blocked the tool call")
            else:
                self.decisions.append(_Decision(legacy, reason))
        elif decision == "block" and self.event in CAN_BLOCK:
            self.block(reason or f"{label} blocked with no reason given")
        self._specific(data.get("hookSpecificOutput"), label)

    def _specific(self, spec: Any, label: str) -> None:
        if spec is None:
            return
        if not isinstance(spec, dict):
            self.out.errors.append(f"{label}: hookSpecificOutput must be an object; ignored")
            return
        name = spec.get("hookEventName")
        if name is not None and name != self.event.value:
            self.out.errors.append(f"{label}: hookSpecificOutput is for {name!r}, not {self.event.value!r}; ignored")
            return
        ctx = spec.get("additionalContext")
        if isinstance(ctx, str) and ctx.strip():
            self.out.additional_context.append(ctx)
        self._event_fields(spec, label)
        if self.event is HookEvent.PERMISSION_REQUEST:
            verdict = spec.get("decision")
            if isinstance(verdict, dict) and verdict.get("behavior") in ("allow", "deny"):
                if self.out.permission_request is None or verdict["behavior"] == "deny":  # deny wins
                    self.out.permission_request = verdict
            elif verdict is not None:
                self.out.errors.append(f"{label}: decision must be {{\"behavior\": \"allow\"|\"deny\"}}; ignored")
            return
        if self.event is not HookEvent.PRE_TOOL_USE:
            return
        raw = spec.get("permissionDecision")
        if raw is not None and raw != "defer":  # "defer": no opinion, the normal check decides
            try:
                value = HookPermissionDecision(raw)
            except ValueError:
                self.out.errors.append(f"{label}: unknown permissionDecision {raw!r}; ignored")
            else:
                why = spec.get("permissionDecisionReason")
                self.decisions.append(_Decision(value, why if isinstance(why, str) and why else None))
        updated = spec.get("updatedInput")
        if isinstance(updated, dict):
            self.out.updated_input = updated
        elif updated is not None:
            self.out.errors.append(f"{label}: updatedInput must be an object; ignored")

    def _event_fields(self, spec: dict[str, Any], label: str) -> None:
        """The hookSpecificOutput fields of the events that answer with more than context."""
        out, event = self.out, self.event
        if event is HookEvent.PERMISSION_DENIED and spec.get("retry") is True:
            out.retry = True
        elif event is HookEvent.MESSAGE_DISPLAY and isinstance(spec.get("displayContent"), str):
            out.display_content = spec["displayContent"]   # the last hook in configuration order wins
        elif event is HookEvent.WORKTREE_CREATE and isinstance(spec.get("worktreePath"), str):
            out.worktree_path = spec["worktreePath"]
        elif event in (HookEvent.ELICITATION, HookEvent.ELICITATION_RESULT) and "action" in spec:
            if spec["action"] not in _ELICITATION_ACTIONS:
                out.errors.append(f"{label}: action must be accept, decline or cancel; ignored")
            elif out.elicitation is None or spec["action"] != "accept":   # a refusal wins
                content = spec.get("content")
                out.elicitation = {"action": spec["action"], **({"content": content}
                                                                if isinstance(content, dict) else {})}
        paths = spec.get("watchPaths")
        if event in _WATCH_EVENTS and isinstance(paths, list):
            out.watch_paths += [p for p in paths if isinstance(p, str) and p]

    def result(self) -> HookOutcome:
        if self.decisions:
            top = max(_RANK[d.value] for d in self.decisions)
            winners = [d for d in self.decisions if _RANK[d.value] == top]
            self.out.permission_decision = winners[0].value.value
            reasons = [d.reason for d in winners if d.reason]
            self.out.permission_reason = "\n".join(reasons) if reasons else None
        return self.out


def aggregate(event: HookEvent, results: list[HookProcessResult],
              callbacks: Sequence[tuple[HookCallback, dict[str, Any] | None, str | None]] = ()) -> HookOutcome:
    """Commands' results first, then callbacks', each in configuration order."""
    agg = _Aggregate(event)
    for r in results:
        agg.add(r)
    for cb, output, error in callbacks:
        agg.add_callback(cb, output, error)
    return agg.result()
