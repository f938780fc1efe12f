"""TaskCreate / TaskGet / TaskList / TaskUpdate: through the real loop with the fake model, and
through the CLI (-p, stream-json) with the list surviving --resume."""

from __future__ import annotations

import json

import pytest
from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, run, terminal

from codeloop.tools.base import ToolContext, ToolError
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input
from codeloop.tools.task_board import TaskBoard


def results(api, i):
    """The tool_result blocks the request `i` carried (the answers to the turn before it)."""
    return [b for b in api.requests[i].messages[-1]["content"] if b.get("type") == "tool_result"]


def content(block):
    c = block["content"]
    return c if isinstance(c, str) else "".join(x.get("text", "") for x in c)


def test_schemas_match_claude_code():
    tools = builtin_tools()
    create = find_tool(tools, "TaskCreate").input_schema()
    assert set(create["properties"]) == {"subject", "description", "activeForm", "metadata"}
    assert sorted(create["required"]) == ["description", "subject"]
    update = find_tool(tools, "TaskUpdate").input_schema()
    assert set(update["properties"]) == {"taskId", "subject", "description", "activeForm", "status", "addBlocks",
                                         "addBlockedBy", "owner", "metadata"}
    assert update["required"] == ["taskId"]
    assert find_tool(tools, "TaskGet").input_schema()["required"] == ["taskId"]
    assert find_tool(tools, "TaskList").input_schema()["properties"] == {}
    for name in ("TaskCreate", "TaskGet", "TaskList", "TaskUpdate"):
        assert find_tool(tools, name).should_defer is True   # deferred, as in Claude Code
    with pytest.raises(ToolError, match="`status`"):
        parse_tool_input(find_tool(tools, "TaskUpdate"), {"taskId": "1", "status": "done"})


async def test_create_link_update_list_through_the_loop(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("TaskCreate", {"subject": "Write tests", "description": "cover the parser"}, id="c1"),
            tool_use("TaskCreate", {"subject": "Fix parser", "description": "make tests pass",
                                    "activeForm": "Fixing parser"}, id="c2"), stop="tool_use"),
        sse(tool_use("TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"], "owner": "me"}, id="u1"), stop="tool_use"),
        sse(tool_use("TaskList", {}, id="l1"), tool_use("TaskGet", {"taskId": "2"}, id="g1"), stop="tool_use"),
        sse(tool_use("TaskUpdate", {"taskId": "1", "status": "completed"}, id="u2"), stop="tool_use"),
        sse(tool_use("TaskList", {}, id="l2"), tool_use("TaskGet", {"taskId": "9"}, id="g2"), stop="tool_use"),
        sse(tool_use("TaskUpdate", {"taskId": "2", "status": "deleted"}, id="d1"), stop="tool_use"),
        sse(text("done")))
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "sess")
    ctx.task_board = TaskBoard(ctx.session_dir)
    events = await run(make_params(api, tmp_path, tool_context=ctx))
    assert terminal(events).reason.value == "completed"
    created = [content(b) for b in results(api, 1)]
    assert created == ["Task #1 created successfully: Write tests", "Task #2 created successfully: Fix parser"]
    assert content(results(api, 2)[0]) == "Updated task #2 owner, blockedBy"
    listing, got = (content(b) for b in results(api, 3))
    assert listing == "#1 [pending] Write tests\n#2 [pending] Fix parser (me) [blocked by #1]"
    assert got.splitlines() == ["Task #2: Fix parser", "Status: pending", "Description: make tests pass",
                                "Blocked by: #1"]
    assert content(results(api, 4)[0]) == "Updated task #1 status"
    listing, missing = (content(b) for b in results(api, 5))
    # a completed blocker no longer blocks
    assert listing == "#1 [completed] Write tests\n#2 [pending] Fix parser (me)"
    assert missing == "Task not found"
    assert content(results(api, 6)[0]) == "Updated task #2 deleted"
    saved = json.loads((tmp_path / "sess" / "tasks.json").read_text())
    assert [t["id"] for t in saved["tasks"]] == ["1"] and saved["tasks"][0]["blocks"] == []
    assert saved["nextId"] == 3   # ids are never reused after a delete


async def test_blank_subject_is_an_error_the_model_sees(tmp_path):
    api = ScriptedAPI(sse(tool_use("TaskCreate", {"subject": "  ", "description": "x"}), stop="tool_use"),
                      sse(text("ok")))
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    await run(make_params(api, tmp_path, tool_context=ctx))
    block = results(api, 1)[0]
    assert block["is_error"] is True and "subject is blank" in content(block)
    assert ctx.task_board is None   # refused before the list was even made


def test_damaged_file_starts_empty_and_ids_continue(tmp_path):
    (tmp_path / "tasks.json").write_text("{not json")
    b = TaskBoard(tmp_path)
    assert b.all() == []
    (tmp_path / "tasks.json").write_text(json.dumps({"tasks": [{"id": "7", "subject": "s", "status": "bogus"}]}))
    b = TaskBoard(tmp_path)
    assert b.all()[0].status == "pending"
    assert b.create("n", "d", None, None).id == "8"
