"""The Bash tool's input model, apart from the tool so that running a command needs no pydantic
when the input is plain (`tools.plain_input`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveInt
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.builtin.bash import MAX_TIMEOUT_MS


class BashInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    command: str = Field(min_length=1, description="The command to execute")
    timeout: PositiveInt | SkipJsonSchema[None] = Field(
        None,
        description=f"Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})",
    )
    description: str | SkipJsonSchema[None] = Field(
        None,
        description="Clear, concise description of what this command does in 5-10 words, in "
        "active voice. Examples: 'Lists files in current directory', 'Shows working tree status'",
    )
    run_in_background: bool | SkipJsonSchema[None] = Field(
        None,
        description="Set to true to run this command in the background. Use TaskOutput to read the output later.",
    )
    # Claude Code's parameter: the call runs outside the sandbox, so it goes through the ordinary
    # permission flow (it asks unless an allow rule covers it) and never the sandbox's auto-allow.
    dangerouslyDisableSandbox: bool | SkipJsonSchema[None] = Field(
        None,
        description="Set this to true to dangerously override sandbox mode and run commands without sandboxing.",
    )
