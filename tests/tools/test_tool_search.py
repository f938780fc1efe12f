"""Deferred tools and ToolSearch: schema residency changes, the gates never do."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, run, terminal
from codeloop.tools.base import Tool, ToolContext, ToolResult
from codeloop.tools.builtin.end_conversation import EndConversationTool
from codeloop.tools.builtin.read import ReadTool
from codeloop.tools.builtin.tool_search import ToolSearchTool
from codeloop.tools.deferred import (deferred_hint, hint_for, loaded_deferred, partition_deferred, render_functions,
                                     request_tools)
from codeloop.tools.registry import parse_tool_input


class NotebookInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cell: int


class NotebookEditTool(Tool):
    name: ClassVar[str] = "NotebookEdit"
    description: ClassVar[str] = "Replace the contents of a Jupyter notebook cell."
    input_model: ClassVar[type[BaseModel]] = NotebookInput
    should_defer: ClassVar[bool] = True

    async def call(self, inp, ctx):
        return ToolResult(f"edited cell {inp.cell}")


class SlackSendTool(NotebookEditTool):
    name: ClassVar[str] = "mcp__slack__send_message"
    description: ClassVar[str] = "Send a message to a Slack channel."


@pytest.fixture(autouse=True)
def _no_flag_env(monkeypatch):
    monkeypatch.delenv("CODELOOP_FEATURE_END_CONVERSATION", raising=False)


def gated_ctx(tmp_path: Path, *, on: bool = True, model: str = "claude-opus-4-8") -> ToolContext:
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, model=model, entrypoint="cli")
    ctx.feature_flags = {"end_conversation": on}
    return ctx


def pool() -> list[Tool]:
    return [ReadTool(), EndConversationTool(), NotebookEditTool(), SlackSendTool(), ToolSearchTool()]


def names(tools) -> list[str]:
    return [t.name for t in tools]


async def search(ctx: ToolContext, **raw) -> ToolResult:
    tool = ToolSearchTool()
    return await tool.call(parse_tool_input(tool, raw), ctx)


def listed(result: ToolResult) -> list[dict]:
    return [json.loads(m) for m in re.findall(r"<function>(.*?)</function>", result.content)]


def test_partition_hides_deferred_tools_until_loaded():
    tools = pool()
    visible, deferred = partition_deferred(tools, set())
    assert names(visible) == ["Read", "ToolSearch"]
    assert deferred == ["EndConversation", "NotebookEdit", "mcp__slack__send_message"]
    visible, deferred = partition_deferred(tools, {"NotebookEdit"})
    assert names(visible) == ["Read", "NotebookEdit", "ToolSearch"]
    assert deferred == ["EndConversation", "mcp__slack__send_message"]


def test_partition_with_ctx_drops_gated_off_tools_everywhere(tmp_path):
    ctx = gated_ctx(tmp_path, on=False)
    visible, deferred = partition_deferred(pool(), {"EndConversation"}, ctx)
    assert "EndConversation" not in names(visible) and "EndConversation" not in deferred
    visible, deferred = partition_deferred(pool(), set(), gated_ctx(tmp_path, model="claude-opus-4-7"))
    assert "EndConversation" not in deferred


def test_deferred_hint_names_each_tool_and_says_to_load_it():
    hint = deferred_hint(["EndConversation", "NotebookEdit"])
    assert "ToolSearch" in hint and "must load" in hint
    assert hint.splitlines()[-2:] == ["EndConversation (deferred tool)", "NotebookEdit (deferred tool)"]
    assert deferred_hint([]) == ""


def test_hint_for_lists_enabled_deferred_tools_only(tmp_path):
    assert "EndConversation (deferred tool)" in hint_for(pool(), gated_ctx(tmp_path))
    assert "EndConversation" not in hint_for(pool(), gated_ctx(tmp_path, on=False))


async def test_select_returns_full_schema_and_marks_loaded(tmp_path):
    ctx = gated_ctx(tmp_path)
    ctx.tool_pool = pool()
    assert "EndConversation" not in names(request_tools(ctx.tool_pool, ctx))
    result = await search(ctx, query="select:EndConversation,NotebookEdit")
    entries = listed(result)
    assert [e["name"] for e in entries] == ["EndConversation", "NotebookEdit"]
    end = entries[0]
    assert end["input_schema"] == {"type": "object", "properties": {}, "additionalProperties": False}
    assert "self-harm" in end["description"] and "abusive" in end["description"]
    assert result.content.startswith("<functions>") and result.content.endswith("</functions>")
    assert loaded_deferred(ctx) == {"EndConversation", "NotebookEdit"}
    assert names(request_tools(ctx.tool_pool, ctx)) == ["Read", "EndConversation", "NotebookEdit",
                                                                 "ToolSearch"]


async def test_select_reports_unknown_names_and_is_case_tolerant(tmp_path):
    ctx = gated_ctx(tmp_path)
    ctx.tool_pool = pool()
    result = await search(ctx, query="select:notebookedit,Nope")
    assert [e["name"] for e in listed(result)] == ["NotebookEdit"]
    assert result.data["not_found"] == ["Nope"] and "Not found: Nope" in result.content


async def test_keyword_search_ranks_name_parts_and_descriptions(tmp_path):
    ctx = gated_ctx(tmp_path)
    ctx.tool_pool = pool()
    assert [e["name"] for e in listed(await search(ctx, query="slack"))] == ["mcp__slack__send_message"]
    assert [e["name"] for e in listed(await search(ctx, query="jupyter cell"))] == ["NotebookEdit"]
    assert [e["name"] for e in listed(await search(ctx, query="note"))] == ["NotebookEdit"]  # name-part prefix
    assert listed(await search(ctx, query="end conversation"))[0]["name"] == "EndConversation"
    both = await search(ctx, query="send notebook", max_results=1)
    assert len(listed(both)) == 1
    assert [e["name"] for e in listed(await search(ctx, query="+slack message"))] == ["mcp__slack__send_message"]
    assert loaded_deferred(ctx) == {"mcp__slack__send_message", "NotebookEdit", "EndConversation"}


async def test_no_match_loads_nothing_and_lists_what_exists(tmp_path):
    ctx = gated_ctx(tmp_path)
    ctx.tool_pool = pool()
    result = await search(ctx, query="kubernetes")
    assert not result.is_error and listed(result) == []
    assert "NotebookEdit" in result.content and loaded_deferred(ctx) == set()


async def test_a_gated_off_tool_is_not_searchable(tmp_path):
    ctx = gated_ctx(tmp_path, on=False)
    ctx.tool_pool = pool()
    result = await search(ctx, query="select:EndConversation")
    assert listed(result) == [] and result.data["not_found"] == ["EndConversation"]
    assert "EndConversation" not in loaded_deferred(ctx)
    found = [e["name"] for e in listed(await search(ctx, query="end conversation"))]
    assert "EndConversation" not in found
    assert "EndConversation" not in names(request_tools(ctx.tool_pool, ctx))


async def test_non_deferred_tools_are_not_search_results(tmp_path):
    ctx = gated_ctx(tmp_path)
    ctx.tool_pool = pool()
    assert listed(await search(ctx, query="select:Read")) == []


def test_tool_search_is_dropped_when_nothing_is_deferred(tmp_path):
    ctx = gated_ctx(tmp_path)
    assert names(request_tools([ReadTool(), ToolSearchTool()], ctx)) == ["Read"]


def test_render_functions_is_one_json_object_per_tool():
    out = render_functions([NotebookEditTool()])
    (entry,) = [json.loads(m) for m in re.findall(r"<function>(.*?)</function>", out)]
    assert set(entry) == {"name", "description", "input_schema"}
    assert entry["input_schema"]["required"] == ["cell"]


async def test_loop_sends_a_deferred_schema_only_after_tool_search(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("ToolSearch", {"query": "select:NotebookEdit"})),
        sse(tool_use("NotebookEdit", {"cell": 3})),
        sse(text("done")),
    )
    ctx = gated_ctx(tmp_path)
    tools = pool()
    ctx.tool_pool = tools
    params = make_params(api, tmp_path, tools=request_tools(tools, ctx), tool_context=ctx,
                         refresh_tools=lambda: request_tools(tools, ctx),
                         system_prompt=["You are a test.", hint_for(tools, ctx)])
    events = await run(params)
    assert terminal(events).reason.value == "completed"
    first, second, third = api.requests
    assert "NotebookEdit" not in first.tool_names and "ToolSearch" in first.tool_names
    assert "NotebookEdit (deferred tool)" in first.system_text
    assert "NotebookEdit" in second.tool_names
    result = third.messages[-1]["content"][0]
    assert result["type"] == "tool_result" and result["content"] == "edited cell 3"


async def test_loop_refuses_a_deferred_tool_that_was_never_loaded(tmp_path):
    api = ScriptedAPI(sse(tool_use("NotebookEdit", {"cell": 1})), sse(text("ok")))
    ctx = gated_ctx(tmp_path)
    tools = pool()
    ctx.tool_pool = tools
    params = make_params(api, tmp_path, tools=request_tools(tools, ctx), tool_context=ctx,
                         refresh_tools=lambda: request_tools(tools, ctx))
    await run(params)
    result = api.requests[1].messages[-1]["content"][0]
    assert result.get("is_error") and "No such tool available: NotebookEdit" in str(result["content"])
