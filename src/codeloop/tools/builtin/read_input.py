"""The Read tool's input model, apart from the tool so that the tool imports no pydantic
(`tools.plain_input` checks plain inputs without it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt
from pydantic.json_schema import SkipJsonSchema


class ReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file_path: str = Field(description="The absolute path to the file to read")
    offset: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        description="The line number to start reading from (1-based). Only provide if the file is "
        "too large to read at once",
    )
    limit: PositiveInt | SkipJsonSchema[None] = Field(
        None,
        description="The number of lines to read. Only provide if the file is too large to read at once.",
    )
    pages: str | SkipJsonSchema[None] = Field(
        None, description="Page range for PDF files (e.g., \"1-5\", \"3\", \"10-20\"). Only applicable to PDF "
        "files. Maximum 20 pages per request.")
