"""The AskUserQuestion tool: multiple-choice questions for the user, answered through the permission path.

As in Claude Code, the question form *is* the permission prompt: the tool always asks
(`requires_user_interaction`, so no mode or allow rule skips it), and whoever answers the prompt
fills `answers` ({question text: chosen label(s), comma-joined for multiSelect}) into the input it
approves — the REPL's selector, an SDK's `can_use_tool` callback (`updatedInput`), or a
`--permission-prompt-tool`. Print mode without one denies it. `call` only reports the answers.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

DESCRIPTION = """\
Use this tool when you need to ask the user questions during execution. This allows you to:
1. Gather user preferences or requirements
2. Clarify ambiguous instructions
3. Get decisions on implementation choices as you work
4. Offer choices to the user about what direction to take.

Usage notes:
- Users will always be able to select "Other" to provide custom text input
- Use multiSelect: true to allow multiple answers to be selected for a question
- If you recommend a specific option, make that the first option in the list and add "(Recommended)" at the \
end of the label

Plan mode note: In plan mode, use this tool to clarify requirements or choose between approaches BEFORE \
finalizing your plan. Do NOT use this tool to ask "Is my plan ready?" or "Should I proceed?" - use ExitPlanMode \
for plan approval."""


class QuestionOption(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="The display text for this option that the user will see and select. Should be "
                                   "concise (1-5 words) and clearly describe the choice.")
    description: str = Field(description="Explanation of what this option means or what will happen if chosen. "
                                         "Useful for providing context about trade-offs or implications.")
    preview: str | SkipJsonSchema[None] = Field(
        None, description="Optional preview content rendered when this option is focused (mockups, code "
                          "snippets). Single-select questions only.")


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The complete question to ask the user. Should be clear, specific, and end "
                                      "with a question mark. Example: \"Which library should we use for date "
                                      "formatting?\" If multiSelect is true, phrase it accordingly, e.g. \"Which "
                                      "features do you want to enable?\"")
    header: str = Field(description="Very short label displayed as a chip/tag (max 12 chars). Examples: "
                                    "\"Auth method\", \"Library\", \"Approach\".")
    options: list[QuestionOption] = Field(
        min_length=2, max_length=4,
        description="The available choices for this question. Must have 2-4 options. Each option should be a "
                    "distinct, mutually exclusive choice (unless multiSelect is enabled). There should be no "
                    "'Other' option, that will be provided automatically.")
    multiSelect: bool = Field(False, description="Set to true to allow the user to select multiple options "  # noqa: N815
                                                 "instead of just one. Use when choices are not mutually exclusive.")


class Annotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    preview: str | SkipJsonSchema[None] = Field(None, description="The preview content of the selected option.")
    notes: str | SkipJsonSchema[None] = Field(None, description="Free-text notes the user added to their selection.")


class QuestionMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str | SkipJsonSchema[None] = Field(None, description="Optional identifier for the source of this "
                                                                 "question. Used for analytics tracking.")


class AskUserQuestionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: list[Question] = Field(min_length=1, max_length=4, description="Questions to ask the user "
                                                                              "(1-4 questions)")
    answers: dict[str, str] | SkipJsonSchema[None] = Field(
        None, description="User answers collected by the permission component")
    annotations: dict[str, Annotation] | SkipJsonSchema[None] = Field(
        None, description="Optional per-question annotations from the user (e.g., notes on preview selections). "
                          "Keyed by question text.")
    metadata: QuestionMetadata | SkipJsonSchema[None] = Field(
        None, description="Optional metadata for tracking and analytics purposes. Not displayed to user.")


def answer_text(answers: dict[str, str], annotations: dict[str, Annotation] | None = None) -> str:
    parts = []
    for q, a in answers.items():
        note = (annotations or {}).get(q)
        extra = f" user notes: {note.notes}" if note is not None and note.notes else ""
        parts.append(f'"{q}"="{a}"{extra}')
    return (f"User has answered your questions: {', '.join(parts)}. "
            "You can now continue with the user's answers in mind.")


class AskUserQuestionTool(Tool):
    name: ClassVar[str] = "AskUserQuestion"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = AskUserQuestionInput
    # The prompt is the feature: bypass modes and allow rules never answer for the user.
    requires_user_interaction: ClassVar[bool] = True

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return False  # one form at a time

    def is_enabled(self, ctx: ToolContext) -> bool:
        return ctx.agent_id is None

    async def check_permissions(self, inp: AskUserQuestionInput, ctx: ToolContext) -> PermissionDecision:
        return PermissionDecision(PermissionBehavior.ASK, "the questions need someone to answer them: the REPL, an "
                                                          "SDK's can_use_tool or --permission-prompt-tool")

    async def call(self, inp: AskUserQuestionInput, ctx: ToolContext) -> ToolResult:
        texts = [q.question for q in inp.questions]
        if len(set(texts)) != len(texts):
            raise ToolError("Question texts must be unique: answers are keyed by them.")
        answers = {k: v for k, v in (inp.answers or {}).items() if k in texts}
        if not answers:
            raise ToolError("The user did not answer the questions.")
        data: dict[str, Any] = {"questions": [q.model_dump(exclude_none=True) for q in inp.questions],
                                "answers": answers}
        if inp.annotations:
            data["annotations"] = {k: v.model_dump(exclude_none=True) for k, v in inp.annotations.items()}
        return ToolResult(answer_text(answers, inp.annotations), data=data)
