"""Shared fixtures for the built-in tool tests: a ToolContext rooted in tmp_path and a helper
that runs a tool the way the loop does (validate raw input, then call)."""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import codeloop  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pytest

from codeloop.tools.base import Tool, ToolContext, ToolResult
from codeloop.tools.registry import parse_tool_input


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, project_dir=tmp_path)


async def run_tool(tool: Tool, ctx: ToolContext, **raw) -> ToolResult:
    return await tool.call(parse_tool_input(tool, raw), ctx)


@pytest.fixture
def run():
    return run_tool
