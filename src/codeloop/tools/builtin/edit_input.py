"""The Edit tool's input model, apart from the tool so that the tool imports no pydantic
(`tools.plain_input` checks plain inputs without it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EditInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file_path: str = Field(description="The absolute path to the file to modify")
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(
        description="The text to replace it with (must be different from old_string)"
    )
    replace_all: bool = Field(
        False, description="Replace all occurrences of old_string (default false)"
    )
