"""The Glob tool's input model, apart from the tool so that the tool imports no pydantic
(`tools.plain_input` checks plain inputs without it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema


class GlobInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(description="The glob pattern to match files against")
    path: str | SkipJsonSchema[None] = Field(
        None,
        description="The directory to search in. If not specified, the current working directory "
        "will be used. IMPORTANT: Omit this field to use the default directory. DO NOT enter "
        '"undefined" or "null" - simply omit it for the default behavior. Must be a valid '
        "directory path if provided.",
    )
