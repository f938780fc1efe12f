"""What the model is told about the session's tools beyond their schemas, recomputed each turn:
the skills it can load (when the Skill tool is in the pool) and, while plan mode is on, what plan
mode means. The Conversation appends these to the system prompt next to the deferred-tools hint;
they change only when the mode or the skill set does, so the prompt cache mostly holds.
"""

from __future__ import annotations

from codeloop.tools.base import ToolContext

PLAN_MODE_NOTE = """\
Plan mode is active. The user indicated that they do not want you to execute yet -- you MUST NOT make any \
edits, run any non-readonly tools (including changing configs or making commits), or otherwise make any \
changes to the system. Only read-only tools run in plan mode. Instead, research with read-only tools, ask \
clarifying questions with AskUserQuestion if needed, and when your plan is ready present it by calling the \
ExitPlanMode tool with the plan. Do not write the plan to a file."""


def session_notes(ctx: ToolContext) -> list[str]:
    notes: list[str] = []
    names = {t.name for t in ctx.tool_pool}
    if "Skill" in names and ctx.agent_id is None:
        from codeloop.tools.skills import listing, session_skills

        text = listing(session_skills(ctx))
        if text:
            notes.append(text)
    if ctx.policy is not None and ctx.policy.mode.value == "plan" and "ExitPlanMode" in names:
        notes.append(PLAN_MODE_NOTE)
    return notes
