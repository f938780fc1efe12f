from __future__ import annotations

import json

import pytest

from codeloop.tools.base import ToolError
from codeloop.tools.builtin.todo import RESULT_TEXT, TodoWriteTool
from codeloop.tools.registry import parse_tool_input

todo = TodoWriteTool()
ITEMS = [
    {"content": "Write tests", "status": "completed", "activeForm": "Writing tests"},
    {"content": "Fix bug", "status": "in_progress", "activeForm": "Fixing bug"},
    {"content": "Ship", "status": "pending", "activeForm": "Shipping"},
]


async def test_replaces_ctx_todos(ctx, run):
    ctx.todos = [{"content": "old", "status": "pending", "activeForm": "Old"}]
    r = await run(todo, ctx, todos=ITEMS)
    assert r.content == RESULT_TEXT
    assert r.content.startswith("Todos have been modified successfully.")
    assert ctx.todos == ITEMS
    assert r.data["oldTodos"][0]["content"] == "old" and r.data["newTodos"] == ITEMS


async def test_writes_todos_json_in_session_dir(ctx, run, tmp_path):
    ctx.session_dir = tmp_path / "session"
    await run(todo, ctx, todos=ITEMS)
    assert json.loads((ctx.session_dir / "todos.json").read_text()) == ITEMS
    await run(todo, ctx, todos=[])
    assert json.loads((ctx.session_dir / "todos.json").read_text()) == []
    assert ctx.todos == []


async def test_no_session_dir_writes_nothing(ctx, run, tmp_path):
    await run(todo, ctx, todos=ITEMS)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "item,fragment",
    [
        ({"content": "", "status": "pending", "activeForm": "x"}, "`todos[0].content`"),
        ({"content": "a", "status": "done", "activeForm": "x"}, "`todos[0].status`"),
        ({"content": "a", "status": "pending"}, "required parameter `todos[0].activeForm` is missing"),
        (
            {"content": "a", "status": "pending", "activeForm": "x", "id": "1"},
            "unexpected parameter `todos[0].id`",
        ),
    ],
)
def test_item_validation_names_the_field(item, fragment):
    with pytest.raises(ToolError) as ei:
        parse_tool_input(todo, {"todos": [item]})
    assert fragment in str(ei.value)


def test_schema_is_inlined_without_refs():
    schema = todo.input_schema()
    assert "$defs" not in schema and "$ref" not in json.dumps(schema)
    item = schema["properties"]["todos"]["items"]
    assert set(item["required"]) == {"content", "status", "activeForm"}
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert item["additionalProperties"] is False


def test_not_read_only_nor_concurrency_safe():
    inp = parse_tool_input(todo, {"todos": []})
    assert todo.is_read_only(inp) is False and todo.is_concurrency_safe(inp) is False
