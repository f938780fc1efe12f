"""The StructuredOutput tool: `--json-schema`'s answer channel, as Claude Code offers it.

Its input schema *is* the user's schema, so the model sees the shape it must produce in the first
request and answers by calling the tool — no failed answer and retry. A call whose input does not
validate is an error result the model can correct in the same turn; a valid one is kept in
`ctx.structured_output` for the structured-output driver (session layer) to report, and ends the
turn (no request after it, as Claude Code's `endsTurn`; the loop runs the Stop hooks first).
Each invalid call spends one of the run's `Attempts` (shared with the driver's text answers):
the call that spends the last one ends the turn too, without an answer. Validation is a
capability passed in (the session owns the validator), so this layer imports nothing above it.
A schema whose top level is not an object (the API wants object input schemas) is offered wrapped
as `{"value": <schema>}` and unwrapped on the way out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn

from pydantic import BaseModel, ConfigDict

from codeloop.tools.base import (PermissionBehavior, PermissionDecision, StructuredAnswer, Tool, ToolContext, ToolError,
                                 ToolResult)

NAME = "StructuredOutput"
RESULT_TEXT = "Structured output provided successfully"
_WRAP = "value"

DESCRIPTION = """\
Use this tool to return your final response in the requested structured format. You MUST call \
this tool exactly once, at the end of your work, with input that matches its schema exactly; that \
input is your answer. If the call reports a validation error, fix the input and call it again."""

Validator = Callable[[Any, dict[str, Any]], list[str]]


@dataclass
class Attempts:
    """The answers one structured run may give: `allowed` = retry limit + 1, spent by each invalid
    answer, whether a StructuredOutput call or a final text."""
    allowed: int
    used: int = 0
    errors: list[str] = field(default_factory=list)   # why the latest invalid answer was refused

    def spend(self, errors: list[str]) -> None:
        self.used += 1
        self.errors = list(errors)

    @property
    def exhausted(self) -> bool:
        return self.used >= self.allowed


class StructuredOutputInput(BaseModel):
    """Any object: the user's schema, not pydantic, decides what is valid."""
    model_config = ConfigDict(extra="allow")


class StructuredOutputTool(Tool):
    name: ClassVar[str] = NAME
    description: ClassVar[str] = DESCRIPTION
    input_model = StructuredOutputInput

    def __init__(self, schema: dict[str, Any], validate: Validator, attempts: Attempts | None = None) -> None:
        self.schema = schema
        self.validate = validate
        self.attempts = attempts   # None: invalid calls are not limited (the model may retry freely)
        # an object schema that leaves out "type" (only properties/required) is still an object schema
        as_object = schema.get("type") == "object" or ("type" not in schema and "properties" in schema)
        self.wrapped = not as_object
        self._input_schema = ({"type": "object", "properties": {_WRAP: schema}, "required": [_WRAP],
                               "additionalProperties": False} if self.wrapped else {"type": "object", **schema})

    def input_schema(self) -> dict[str, Any]:
        return self._input_schema

    def is_read_only(self, inp: BaseModel) -> bool:
        return True   # it only records the answer

    async def check_permissions(self, inp: BaseModel, ctx: ToolContext) -> PermissionDecision:
        return PermissionDecision(PermissionBehavior.ALLOW)

    def value_of(self, inp: Any) -> Any:
        raw = inp.model_dump() if isinstance(inp, BaseModel) else dict(inp or {})
        return raw.get(_WRAP) if self.wrapped else raw

    async def call(self, inp: Any, ctx: ToolContext) -> ToolResult:
        value = self.value_of(inp)
        if self.wrapped and _WRAP not in (inp.model_dump() if isinstance(inp, BaseModel) else dict(inp or {})):
            self._refuse([f"'{_WRAP}' is a required property"], ctx)
        errors = self.validate(value, self.schema)
        if errors:
            self._refuse(errors, ctx)
        ctx.structured_output = StructuredAnswer(value)
        ctx.ends_turn = True   # the answer is given: no further request this turn
        return ToolResult(RESULT_TEXT, data={"structured_output": value})

    def _refuse(self, errors: list[str], ctx: ToolContext) -> NoReturn:
        listed = "\n".join(f"- {e}" for e in errors)
        text = f"Output does not match the required schema:\n{listed}"
        if self.attempts is not None:
            self.attempts.spend(errors)
            if self.attempts.exhausted:
                ctx.ends_turn = True   # no attempt left: the turn ends without an answer
                text += (f"\n\nNo attempts left ({self.attempts.used} of {self.attempts.allowed} used): "
                         "the run ends here.")
        raise ToolError(text)
