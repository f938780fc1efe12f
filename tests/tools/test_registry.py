from __future__ import annotations

import pytest

from codeloop.tools.base import ToolError
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input, select_tools

# issue 16 added ExitPlanMode, NotebookEdit, WebFetch, WebSearch, AskUserQuestion, Skill, TaskOutput and TaskStop
# issue 26 added the task list (TaskCreate…TaskUpdate) and the scheduling tools (Cron*, ScheduleWakeup)
NAMES = ["Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "Write", "NotebookEdit", "WebFetch", "TodoWrite",
         "WebSearch", "AskUserQuestion", "Skill", "TaskOutput", "TaskStop", "ToolSearch", "TaskCreate", "TaskGet",
         "TaskList", "TaskUpdate", "CronCreate", "CronDelete", "CronList", "ScheduleWakeup", "EnterWorktree",
         "ExitWorktree", "SendMessage", "EndConversation"]


def names(tools):
    return [t.name for t in tools]


def test_builtin_order():
    assert names(builtin_tools()) == NAMES


def test_select_all_none_and_subset():
    tools = builtin_tools()
    assert names(select_tools(tools)) == NAMES
    assert select_tools(tools, allowed=[]) == []
    assert names(select_tools(tools, allowed=["Write", "Read"])) == ["Read", "Write"]


def test_disallowed_bare_names_remove_but_rules_do_not():
    tools = builtin_tools()
    kept = select_tools(tools, disallowed=["Bash(git:*)", "Edit", "Read(./secret)"])
    assert names(kept) == [n for n in NAMES if n != "Edit"]
    assert names(select_tools(tools, allowed=["Bash", "Grep"], disallowed=["Grep"])) == ["Bash"]


def test_find_tool_exact_name():
    tools = builtin_tools()
    assert find_tool(tools, "Grep").name == "Grep"
    assert find_tool(tools, "grep") is None


def test_every_schema_is_closed_and_described():
    for tool in builtin_tools():
        schema = tool.api_schema()
        assert schema["name"] == tool.name and len(schema["description"]) > 100
        inp = schema["input_schema"]
        assert inp["type"] == "object" and inp["additionalProperties"] is False
        for prop in inp["properties"].values():
            assert prop.get("description"), (tool.name, prop)
            assert "title" not in prop


def test_grep_schema_uses_claude_code_names():
    grep = find_tool(builtin_tools(), "Grep")
    props = grep.input_schema()["properties"]
    assert set(props) == {
        "pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C",
        "head_limit", "multiline",
    }
    assert props["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert grep.input_schema()["required"] == ["pattern"]
    inp = parse_tool_input(grep, {"pattern": "x", "-i": True, "-C": 2})
    assert inp.case_insensitive is True and inp.context == 2


@pytest.mark.parametrize(
    "tool,raw,expected",
    [
        ("Read", {}, "The required parameter `file_path` is missing"),
        ("Read", {"file_path": "/x", "limit": "ten"},
         "The parameter `limit` type is expected as `integer` but provided as `string`"),
        ("Read", {"file_path": "/x", "bogus": 1}, "An unexpected parameter `bogus` was provided"),
        ("Edit", {"file_path": "/x", "old_string": "a", "new_string": 3},
         "The parameter `new_string` type is expected as `string` but provided as `integer`"),
        ("Grep", {"pattern": "x", "-i": "perhaps"},
         "The parameter `-i` type is expected as `boolean` but provided as `string`"),
        ("Grep", {"pattern": "x", "output_mode": "lines"}, "The parameter `output_mode` is invalid"),
        ("Bash", {"command": "ls", "timeout": -5}, "The parameter `timeout` is invalid"),
    ],
)
def test_parse_errors_name_the_field(tool, raw, expected):
    t = find_tool(builtin_tools(), tool)
    with pytest.raises(ToolError) as ei:
        parse_tool_input(t, raw)
    msg = str(ei.value)
    assert msg.startswith(f"InputValidationError: {tool} failed due to the following issue")
    assert expected in msg


def test_parse_reports_every_failing_field():
    read = find_tool(builtin_tools(), "Read")
    with pytest.raises(ToolError) as ei:
        parse_tool_input(read, {"offset": "x", "extra": True})
    msg = str(ei.value)
    assert "following issues" in msg
    assert "`file_path` is missing" in msg and "`offset`" in msg and "`extra`" in msg


def test_parse_accepts_valid_input_and_nulls_for_optionals():
    read = find_tool(builtin_tools(), "Read")
    inp = parse_tool_input(read, {"file_path": "/x", "offset": None, "limit": 10})
    assert inp.file_path == "/x" and inp.offset is None and inp.limit == 10


def test_null_for_a_defaulted_parameter_means_omitted():
    edit = find_tool(builtin_tools(), "Edit")
    raw = {"file_path": "/x", "old_string": "a", "new_string": "b", "replace_all": None}
    inp = parse_tool_input(edit, raw)
    assert inp.replace_all is False
    grep = find_tool(builtin_tools(), "Grep")
    inp = parse_tool_input(grep, {"pattern": "x", "-i": None, "output_mode": None})
    assert inp.output_mode == "files_with_matches"
    expected = "`file_path` type is expected as `string` but provided as `null`"
    with pytest.raises(ToolError, match=expected):
        parse_tool_input(edit, {"file_path": None, "old_string": "a", "new_string": "b"})
