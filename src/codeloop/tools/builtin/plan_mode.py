"""The ExitPlanMode tool: the model presents its plan and the user approves it or keeps planning.

In plan mode the permission policy lets only read-only tools run (`policy.decide`). When the plan
is ready the model calls ExitPlanMode with it; the call is a permission prompt (it always asks):
the REPL shows the plan and offers "yes, auto-accept edits" / "yes, approve edits manually" /
"no, keep planning", an SDK answers through `can_use_tool`, print mode denies it (there is no one
to approve a plan; the plan is in the transcript and the result). Approval switches the mode —
to what the approver chose, or to `default` when it chose nothing — so the next tool calls run.

The session's permission policy reaches the tool as `ctx.policy` (a capability set by
the Conversation), so the tool can tell whether plan mode is on and leave it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolResult

PLAN_MODE = "plan"

DESCRIPTION = """\
Use this tool when you are in plan mode and have finished presenting your plan and are ready to code. This will \
prompt the user to exit plan mode. Put the plan itself in the `plan` parameter (markdown, concise): the user \
reviews it there and approves it or asks you to keep planning.
IMPORTANT: Only use this tool when the task requires planning the implementation steps of a task that requires \
writing code. For research tasks where you're gathering information, searching files, reading files or in \
general trying to understand the codebase - do NOT use this tool.

Before using this tool, ensure your plan is complete and unambiguous: if you have unresolved questions about \
requirements or approach, use AskUserQuestion first. Do NOT use AskUserQuestion to ask "Is this plan okay?" - \
that's exactly what THIS tool does.

Eg.
1. Initial task: "Search for and understand the implementation of vim mode in the codebase" - Do not use the \
exit plan mode tool because you are not planning the implementation steps of a task.
2. Initial task: "Help me implement yank mode for vim" - Use the exit plan mode tool after you have finished \
planning the implementation steps of the task."""

class AllowedPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: Literal["Bash"] = Field(description="The tool this prompt applies to")
    prompt: str = Field(description="Semantic description of the action, e.g. \"run tests\", "
                                    "\"install dependencies\"")


class ExitPlanModeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan: str | SkipJsonSchema[None] = Field(
        None, description="The plan you came up with, that you want to run by the user for approval. Supports "
                          "markdown. The plan should be pretty concise.")
    allowedPrompts: list[AllowedPrompt] | SkipJsonSchema[None] = Field(  # noqa: N815
        None, description="Prompt-based permissions needed to implement the plan. These describe categories of "
                          "actions rather than specific commands.")


def current_mode(ctx: ToolContext) -> str | None:
    return None if ctx.policy is None else ctx.policy.mode.value


def leave_plan_mode(ctx: ToolContext, to: str = "default") -> None:
    policy = ctx.policy
    if policy is None or current_mode(ctx) != PLAN_MODE:
        return  # the approver already chose a mode (the REPL sets it before the call runs)
    mode_type = type(policy.mode)
    policy.set_mode(mode_type(to))


class ExitPlanModeTool(Tool):
    name: ClassVar[str] = "ExitPlanMode"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = ExitPlanModeInput
    requires_user_interaction: ClassVar[bool] = True

    def is_read_only(self, inp: BaseModel) -> bool:
        return True  # it changes no file; plan mode must let it through to its prompt

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return False

    def is_enabled(self, ctx: ToolContext) -> bool:
        return ctx.agent_id is None

    async def check_permissions(self, inp: ExitPlanModeInput, ctx: ToolContext) -> PermissionDecision:
        mode = current_mode(ctx)
        if mode is not None and mode != PLAN_MODE:
            return PermissionDecision(PermissionBehavior.DENY, "You are not in plan mode. ExitPlanMode is only for "
                                                               "presenting a plan while plan mode is on; go ahead "
                                                               "with the task.")
        return PermissionDecision(PermissionBehavior.ASK, "the plan needs the user's approval")

    async def call(self, inp: ExitPlanModeInput, ctx: ToolContext) -> ToolResult:
        leave_plan_mode(ctx)
        plan = (inp.plan or "").strip()
        # The system prompt of this turn still carries the plan-mode note; say it no longer holds.
        text = ("User has approved your plan. Plan mode is now off: the plan-mode instructions no longer apply. "
                "You can now start coding. Start with updating your todo list if applicable")
        if plan:
            text += f"\n\n## Approved Plan:\n{plan}"
        return ToolResult(text, data={"plan": plan, "isAgent": ctx.agent_id is not None,
                                      "mode": current_mode(ctx)})
