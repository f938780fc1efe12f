"""The permission gate of a Conversation: what the loop's `can_use_tool` asks before each tool.

Order: PreToolUse hooks (a block or "deny" ends it; "allow" answers an ask; "ask" turns an allow
into a question; `updatedInput` replaces the input), then the tool's own opinion, the rules and
the mode (`PermissionPolicy.decide`), then — for an ask — PermissionRequest hooks, auto mode's
classifier (permissions.auto_mode: it allows or blocks, with its reason shown; when it cannot
answer, or has paused, the question goes on), then the user, or a denial when nobody can be asked
(print mode). A hook's "allow" never lifts a deny rule. A denial the permission system made
without asking anyone (a rule, the mode, auto mode's classifier, nobody to ask) runs the
PermissionDenied hooks; one answering `retry: true` lets the model know it may make the call again.
"""

from __future__ import annotations

from typing import Any

from codeloop.events import SystemEvent
from codeloop.permissions.policy import PermissionMode, denial_message
from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext


async def decide_tool_use(conv: Any, tool: Tool, inp: Any, block: dict[str, Any],
                          ctx: ToolContext) -> PermissionDecision:
    """`conv` is the session.conversation.Conversation asking."""
    raw = dict(block.get("input") or {})
    agent = {"agent_id": ctx.agent_id, "agent_type": ctx.agent_type} if ctx.agent_id else None
    hook = await conv.hooks.pre_tool(tool.name, raw, block.get("id", ""), agent)
    hook_says = hook.permission_decision if hook is not None else None
    if hook is not None and (hook.blocked or hook_says == "deny" or hook.prevent_continuation):
        reason = ("; ".join(hook.block_reasons) or hook.permission_reason or hook.stop_reason
                  or "denied by a PreToolUse hook")
        return PermissionDecision(PermissionBehavior.DENY, f"PreToolUse hook blocked {tool.name}: {reason}")
    updated = hook.updated_input if hook is not None and hook.updated_input is not None else None
    if updated is not None:
        from codeloop.tools.registry import parse_tool_input
        inp, raw = parse_tool_input(tool, updated), dict(updated)
    opinion = await tool.check_permissions(inp, ctx)
    decision = conv.config.policy.decide(tool, inp, opinion, _as_run(tool.name, raw, ctx, conv.config.policy.cwd))
    if not conv.read_filter_ready:  # rules are parsed on first use, not at start-up
        conv.read_filter_ready = True
        ctx.read_denied = conv.tool_context.read_denied = conv.config.policy.read_filter()
    while conv.config.policy.rule_errors:  # rules are parsed on first use; say what was ignored
        conv.hooks.pending_notices.append(SystemEvent("settings_warning", conv.config.policy.rule_errors.pop(0),
                                                      "warning"))
    # A hook's "allow" answers the question a prompt would ask; it never lifts a deny rule.
    if hook_says == "allow" and decision.behavior is PermissionBehavior.ASK:
        decision = PermissionDecision(PermissionBehavior.ALLOW)
    if hook_says == "ask" and decision.behavior is PermissionBehavior.ALLOW:
        decision = PermissionDecision(PermissionBehavior.ASK, hook.permission_reason or "a PreToolUse hook asks")
    if decision.behavior is PermissionBehavior.DENY:
        return await _denied(conv, tool, raw, block, decision, agent)
    if decision.behavior is PermissionBehavior.ASK:
        decision = await conv.hooks.permission_request(tool.name, raw, agent) or decision
    if decision.behavior is PermissionBehavior.ASK and not decision.human \
            and conv.config.policy.mode is PermissionMode.AUTO:
        decision = await auto_review(conv, tool.name, raw, decision)
        if decision.behavior is PermissionBehavior.DENY:
            return await _denied(conv, tool, raw, block, decision, agent)
    if decision.behavior is PermissionBehavior.ASK:
        if conv.ask_user is not None:
            await conv.hooks.notify(f"Claude needs your permission to use {tool.name}")
            decision = await conv.ask_user(tool, inp, {**block, "input": raw})  # as a hook rewrote it
        else:
            decision = await _denied(conv, tool, raw, block, PermissionDecision(
                PermissionBehavior.DENY, denial_message(tool.name, decision, interactive=False)), agent)
    if updated is not None and decision.behavior is PermissionBehavior.ALLOW and decision.updated_input is None:
        decision = PermissionDecision(PermissionBehavior.ALLOW, decision.message, updated)
    return decision


async def auto_review(conv: Any, tool_name: str, raw: dict[str, Any], asked: PermissionDecision) -> PermissionDecision:
    """Auto mode: the classifier's verdict on an action that would ask, said to the user as a notice."""
    from codeloop.permissions.auto_mode import AutoReviewer, AutoRules, VerdictKind, reviewer_model

    if conv.auto_reviewer is None:
        rules = conv.config.policy.auto_rules or AutoRules()
        conv.auto_reviewer = AutoReviewer(conv.side_provider, reviewer_model(conv.provider, conv.model), rules)
    verdict = await conv.auto_reviewer.review(tool_name, raw, conv.messages)
    if verdict.kind is VerdictKind.ALLOW:
        conv.hooks.pending_notices.append(SystemEvent("auto_mode_allowed", f"Auto mode allowed {tool_name}: "
                                                      f"{verdict.reason}", "info"))
        return PermissionDecision(PermissionBehavior.ALLOW)
    if verdict.kind is VerdictKind.BLOCK:
        conv.hooks.pending_notices.append(SystemEvent("auto_mode_blocked", f"Auto mode blocked {tool_name}: "
                                                      f"{verdict.reason}", "warning"))
        return PermissionDecision(PermissionBehavior.DENY, (
            f"Permission to use {tool_name} has been denied by auto mode's reviewer: {verdict.reason} "
            "Do not try to reach the same effect another way; if the action is needed, tell the user why, "
            "so they can run it themselves or change the permission mode."))
    conv.hooks.pending_notices.append(SystemEvent("auto_mode_unavailable", f"Auto mode could not decide on "
                                                  f"{tool_name}: {verdict.reason}; asking instead", "warning"))
    if conv.ask_user is not None:
        conv.auto_reviewer.user_decided()
    return PermissionDecision(PermissionBehavior.ASK, f"{asked.message} ({verdict.reason})".strip(), human=True)


def _as_run(tool_name: str, raw: dict[str, Any], ctx: ToolContext, project: Any) -> dict[str, Any]:
    """The Bash input as it will run: the shell keeps the folder an earlier call `cd`-ed into, and the
    policy resolves relative paths from the project, so the command is judged as `cd <there> && …`
    (`cd src` then `echo x > ../.git/config` is a write to the project's .git/config). The physical
    folder, as the kernel resolves `..` from it."""
    import os

    command = raw.get("command")
    # (the same path needs no realpath: two walks of the path at every Bash call otherwise)
    if tool_name != "Bash" or not isinstance(command, str) or str(ctx.cwd) == str(project):
        return raw
    here = os.path.realpath(str(ctx.cwd))
    if here == os.path.realpath(str(project)):
        return raw
    import shlex

    return {**raw, "command": f"cd {shlex.quote(here)} && {command}"}


async def _denied(conv: Any, tool: Tool, raw: dict[str, Any], block: dict[str, Any], decision: PermissionDecision,
                  agent: dict[str, Any] | None) -> PermissionDecision:
    """PermissionDenied hooks see the denial; `retry` adds that the model may try again."""
    reason = decision.message or f"Permission to use {tool.name} was denied."
    if await conv.hooks.lifecycle.permission_denied(tool.name, raw, block.get("id", ""), reason, agent):
        return PermissionDecision(PermissionBehavior.DENY, reason + "\n\nA PermissionDenied hook says you may try "
                                  "this call again if the user asked for it.")
    return decision
