"""The Skill tool: loads a skill's SKILL.md instructions into the conversation on demand.

Skills are discovered by `codeloop.tools.skills` and listed to the model by name and description
(the session notes in the system prompt); this tool returns the chosen skill's body, with its
base directory (so relative paths in it resolve) and `$ARGUMENTS` replaced by `args`.

Permissions, as Claude Code: a skill that only adds instructions loads without a question; one
whose front matter grants `allowed-tools` asks first (or is allowed by a `Skill(name)` rule).
Once loaded, those tools are allowed for the rest of the session — for user skills always, for a
project's skills only when the folder is trusted (`ctx.project_trusted`), so an untrusted
checkout cannot grant itself Bash.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

DESCRIPTION = """\
Execute a skill within the main conversation

When users ask you to perform tasks, check if any of the available skills match. Skills provide specialized \
capabilities and domain knowledge.

How to invoke:
- Use this tool with the skill name and optional arguments
- Examples:
  - `skill: "pdf"` - invoke the pdf skill
  - `skill: "commit", args: "-m 'Fix bug'"` - invoke with arguments

Important:
- Available skills are listed in the system prompt
- When a skill matches the user's request, invoke the Skill tool BEFORE generating any other response about \
the task
- NEVER mention a skill without actually calling this tool
- Do not invoke a skill that is already loaded in this conversation
- Do not use this tool for built-in CLI commands (like /help, /clear, etc.)"""


class SkillInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skill: str = Field(description="The skill name. E.g., \"commit\", \"review-pr\", or \"pdf\"")
    args: str | SkipJsonSchema[None] = Field(None, description="Optional arguments for the skill")


def _grant(ctx: ToolContext, skill: Any) -> list[str]:
    """Allow the skill's tools for the rest of the session, where the skill may be trusted."""
    from codeloop.tools.skills import SkillSource

    policy = ctx.policy
    if not skill.allowed_tools or policy is None:
        return []
    if skill.source is SkillSource.PROJECT and not ctx.project_trusted:
        return []
    return policy.allow_rules(list(skill.allowed_tools))


class SkillTool(Tool):
    name: ClassVar[str] = "Skill"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = SkillInput

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return False

    def is_enabled(self, ctx: ToolContext) -> bool:
        from codeloop.tools.skills import session_skills

        return ctx.agent_id is None and bool(session_skills(ctx))

    async def check_permissions(self, inp: SkillInput, ctx: ToolContext) -> PermissionDecision:
        from codeloop.tools.skills import find_skill

        skill = find_skill(ctx, inp.skill)
        if skill is None or not skill.allowed_tools:
            return PermissionDecision(PermissionBehavior.ALLOW)  # unknown: call() says so; plain: only text
        return PermissionDecision(PermissionBehavior.ASK, f"Skill {skill.name} would allow "
                                                          f"{', '.join(skill.allowed_tools)}.")

    async def call(self, inp: SkillInput, ctx: ToolContext) -> ToolResult:
        from codeloop.tools.skills import find_skill, session_skills

        skill = find_skill(ctx, inp.skill)
        if skill is None:
            known = ", ".join(s.name for s in session_skills(ctx)) or "none"
            raise ToolError(f"Unknown skill: {inp.skill}. Available skills: {known}")
        try:
            body = skill.body()
        except OSError as exc:
            raise ToolError(f"Skill {skill.name} could not be read: {exc}") from None
        args = (inp.args or "").strip()
        body = body.replace("$ARGUMENTS", args) if "$ARGUMENTS" in body else (
            body + (f"\n\nARGUMENTS: {args}" if args else ""))
        granted = _grant(ctx, skill)
        text = f"Launching skill: {skill.name}\n\nBase directory for this skill: {skill.base_dir}\n\n{body.strip()}"
        if skill.allowed_tools and not granted and skill.source.value == "project" \
                and not ctx.project_trusted:
            text += ("\n\n(This project's skill lists allowed-tools, but the folder is not trusted, so they "
                     "still ask for permission.)")
        return ToolResult(text, data={"success": True, "commandName": skill.name, "allowedTools":
                                      list(skill.allowed_tools), "granted": granted})
