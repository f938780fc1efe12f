"""The Write tool's input model, apart from the tool so that the tool imports no pydantic
(`tools.plain_input` checks plain inputs without it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class WriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file_path: str = Field(
        description="The absolute path to the file to write (must be absolute, not relative)"
    )
    content: str = Field(description="The content to write to the file")
