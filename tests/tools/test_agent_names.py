"""The subagent tool is `Agent` (Claude Code's current name); `Task` still works everywhere a user
or an old session may write it: tool lookup, `--tools`/`--disallowedTools`, permission rules."""

from codeloop.permissions.rules import parse_rule
from codeloop.tools.builtin.task import TaskTool
from codeloop.tools.registry import builtin_tools, canonical_name, find_tool, select_tools


def names(tools):
    return [t.name for t in tools]


def test_agent_is_the_name_and_task_an_alias():
    tools = builtin_tools(agent_definitions={})
    assert "Agent" in names(tools) and "Task" not in names(tools)
    assert find_tool(tools, "Task") is find_tool(tools, "Agent")
    assert TaskTool().api_schema()["name"] == "Agent"
    props = TaskTool().input_schema()["properties"]
    assert {"description", "prompt", "subagent_type", "model", "run_in_background"} <= set(props)
    assert canonical_name("Task") == "Agent" and canonical_name("Read") == "Read"


def test_tool_selection_and_rules_accept_the_old_name():
    tools = builtin_tools(agent_definitions={})
    assert names(select_tools(tools, allowed=["Task", "Read"])) == ["Read", "Agent"]
    assert "Agent" not in names(select_tools(tools, disallowed=["Task"]))
    assert "TaskOutput" in names(select_tools(tools, allowed=["BashOutput"]))
    rule = parse_rule("Task(reviewer)")
    assert rule.tool == "Agent" and rule.specifier == "reviewer"
    assert parse_rule("KillShell").tool == "TaskStop" and parse_rule("Bash(ls)").tool == "Bash"


def test_lazy_registry_offers_agent_too(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    tools = builtin_tools(lazy=True, agent_definitions={})
    agent = find_tool(tools, "Task")
    assert agent.name == "Agent" and agent.api_schema()["name"] == "Agent"
    assert find_tool(tools, "BashOutput").name == "TaskOutput"
