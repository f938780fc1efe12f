"""The Grep tool's input model, apart from the tool so that the tool imports no pydantic
(`tools.plain_input` checks plain inputs without it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.builtin.grep import OutputMode


class GrepInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(description="The regular expression pattern to search for in file contents")
    path: str | SkipJsonSchema[None] = Field(
        None, description="File or directory to search in. Defaults to the current working directory."
    )
    glob: str | SkipJsonSchema[None] = Field(
        None,
        description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}"); several may be '
        "separated by spaces or commas, and a leading ! excludes",
    )
    type: str | SkipJsonSchema[None] = Field(
        None,
        description="File type to search (rg --type), e.g. js, py, rust, go, java. More efficient "
        "than glob for standard file types.",
    )
    output_mode: OutputMode = Field(
        "files_with_matches",
        description='Output mode: "content" shows matching lines (supports -A/-B/-C context, -n '
        'line numbers, head_limit), "files_with_matches" shows file paths (supports head_limit), '
        '"count" shows match counts (supports head_limit). Defaults to "files_with_matches".',
    )
    case_insensitive: bool | SkipJsonSchema[None] = Field(
        None, alias="-i", description="Case insensitive search (rg -i)"
    )
    line_numbers: bool | SkipJsonSchema[None] = Field(
        None,
        alias="-n",
        description='Show line numbers in output (rg -n). Requires output_mode: "content". '
        "Defaults to true.",
    )
    after: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        alias="-A",
        description='Number of lines to show after each match (rg -A). Requires output_mode: "content".',
    )
    before: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        alias="-B",
        description='Number of lines to show before each match (rg -B). Requires output_mode: "content".',
    )
    context: NonNegativeInt | SkipJsonSchema[None] = Field(
        None,
        alias="-C",
        description="Number of lines to show before and after each match (rg -C). Requires "
        'output_mode: "content".',
    )
    head_limit: PositiveInt | SkipJsonSchema[None] = Field(
        None,
        description="Limit output to the first N lines/entries, like `| head -N`. Applies to every "
        "output mode. Defaults to no limit.",
    )
    multiline: bool | SkipJsonSchema[None] = Field(
        None,
        description="Enable multiline mode where . matches newlines and patterns can span lines "
        "(rg -U --multiline-dotall). Default: false.",
    )
