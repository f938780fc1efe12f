"""Task: subagent definitions and nested queries against the scripted fake API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, run, terminal
from codeloop.events import ApiCallEvent, AssistantEvent, Terminal, UserEvent
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.tools.agents import (DEFAULT_SUBAGENT_PROMPT, GENERAL_PURPOSE, AgentDefinition, AgentSource,
                                   load_agent_definitions, parse_frontmatter)
from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.end_conversation import EndConversationTool
from codeloop.tools.builtin.read import ReadTool
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.session.parts import SessionParts
from codeloop.session.subagent import spawn_for
from codeloop.session.wiring import subagent_transcript_path
from codeloop.tools.builtin.task import CURRENT_TOOL_USE_ID, ENDED_REFUSAL, TaskTool
from codeloop.tools.builtin.tool_search import ToolSearchTool
from codeloop.tools.registry import parse_tool_input

PARENT_ID = "toolu_task_1"


class ProbeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProbeTool(Tool):
    """Records the ToolContext it was called with."""
    name: ClassVar[str] = "Probe"
    description: ClassVar[str] = "Reports on its context."
    input_model: ClassVar[type[BaseModel]] = ProbeInput
    seen: ClassVar[list[ToolContext]] = []

    def is_read_only(self, inp):
        return True

    async def call(self, inp, ctx):
        ProbeTool.seen.append(ctx)
        return ToolResult("probed")


async def allow_all(tool, inp, block, ctx):
    return PermissionDecision(PermissionBehavior.ALLOW)


def definition(name="reader", tools=("Read", "Probe", "Task"), model=None, max_turns=None,
               prompt="You read files and report.") -> AgentDefinition:
    return AgentDefinition(name=name, description="reads", system_prompt=prompt, tools=tools, model=model,
                           max_turns=max_turns, source=AgentSource.PROJECT)


def setup(tmp_path: Path, api: ScriptedAPI, *defs: AgentDefinition, pool=None, emitted=None):
    """The parent session (a Conversation, as the assembly builds one): its tool context runs subagents."""
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    tools = pool if pool is not None else [ReadTool(), ProbeTool(), TaskTool()]
    config = ConversationConfig(cwd=tmp_path, model="claude-sonnet-4-5", tools=tools, system_prompt=["main"],
                                user_context={"claudeMd": "Be brief."}, agent_definitions={d.name: d for d in defs},
                                policy=PermissionPolicy(mode=PermissionMode.BYPASS, cwd=tmp_path))
    conv = Conversation(config, provider, session_id="11111111-2222-3333-4444-555555555555",
                        parts=SessionParts(listeners=[emitted.append] if emitted is not None else [], spawn=spawn_for))
    return conv.tool_context


async def launch(ctx: ToolContext, subagent_type: str, prompt: str = "Read notes.txt and tell me the number"):
    tool = TaskTool()
    inp = parse_tool_input(tool, {"description": "read notes", "prompt": prompt, "subagent_type": subagent_type})
    token = CURRENT_TOOL_USE_ID.set(PARENT_ID)
    try:
        return await tool.call(inp, ctx)
    finally:
        CURRENT_TOOL_USE_ID.reset(token)


@pytest.fixture(autouse=True)
def _reset_probe(monkeypatch):
    ProbeTool.seen = []
    monkeypatch.delenv("CODELOOP_FEATURE_END_CONVERSATION", raising=False)


# -- the nested query -------------------------------------------------------------------------------

async def test_subagent_reads_a_file_and_answers(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("the number is 42\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(notes)}), tool_use("Probe", {})),
                      sse(text("The number is 42.")))
    emitted: list = []
    ctx = setup(tmp_path, api, definition(), emitted=emitted)
    res = await launch(ctx, "reader")

    assert not res.is_error and res.content == "The number is 42."
    agent_id = res.data["agent_id"]
    assert res.data["terminal_reason"] == "completed" and res.data["num_turns"] == 2
    assert res.data["total_tokens"] > 0

    # the requests: its own prompt, system prompt and tool set; never Task
    first, second = api.requests
    assert first.tool_names == ["Read", "Probe"]
    assert first.system_text.startswith("You read files and report.")
    assert first.body["model"] == "claude-sonnet-4-5"
    assert "Read notes.txt" in json.dumps(first.messages[-1]) and "Be brief." in json.dumps(first.messages)
    assert "the number is 42" in json.dumps(second.messages[-1])

    # the nested ToolContext
    (seen,) = ProbeTool.seen
    assert seen.agent_id == agent_id and seen is not ctx and seen.abort is ctx.abort

    # emitted events carry the Task's tool_use id; no Terminal leaks into the parent's stream
    messages = [e.message for e in emitted if isinstance(e, (AssistantEvent, UserEvent))]
    assert messages and all(m.parent_tool_use_id == PARENT_ID for m in messages)
    assert any(isinstance(e, ApiCallEvent) for e in emitted)
    assert not any(isinstance(e, Terminal) for e in emitted)
    assert messages[-1].text == "The number is 42."

    # its own transcript under <session>/subagents/
    path = subagent_transcript_path(ctx.session_dir, agent_id)
    assert path == ctx.session_dir / "subagents" / f"agent-{agent_id}.jsonl" and path.is_file()
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(e["isSidechain"] is True and e["agentId"] == agent_id for e in entries)
    assert any(b.get("name") == "Read" for e in entries if e["type"] == "assistant" for b in e["message"]["content"])
    assert entries[0]["type"] == "user" and entries[-1]["message"]["content"][0]["text"] == "The number is 42."


async def test_default_tools_are_the_parents_minus_task(tmp_path):
    api = ScriptedAPI(sse(text("done")))
    ctx = setup(tmp_path, api, definition(tools=None))
    assert (await launch(ctx, "reader")).content == "done"
    assert api.requests[0].tool_names == ["Read", "Probe"]


async def test_built_in_general_purpose_agent(tmp_path):
    api = ScriptedAPI(sse(text("found it")))
    ctx = setup(tmp_path, api)  # no definitions given: the built-ins
    res = await launch(ctx, GENERAL_PURPOSE)
    assert res.content == "found it"
    assert api.requests[0].system_text.startswith(DEFAULT_SUBAGENT_PROMPT)


async def test_definition_model_alias_and_inherit(tmp_path):
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    ctx = setup(tmp_path, api, definition(name="fast", model="haiku"), definition(name="same", model=None))
    await launch(ctx, "fast")
    await launch(ctx, "same")
    assert [r.body["model"] for r in api.requests] == ["claude-haiku-4-5", "claude-sonnet-4-5"]


async def test_max_turns_from_the_definition_ends_without_an_answer(tmp_path):
    api = ScriptedAPI(sse(tool_use("Probe", {})), sse(text("too late")))
    ctx = setup(tmp_path, api, definition(max_turns=1))
    res = await launch(ctx, "reader")
    assert res.is_error and res.data["terminal_reason"] == "max_turns"
    assert "without a final answer" in res.content and len(api.requests) == 1


async def test_unknown_agent_type(tmp_path):
    ctx = setup(tmp_path, ScriptedAPI(), definition())
    with pytest.raises(ToolError, match="Agent type 'nope' not found. Available agents: reader"):
        await launch(ctx, "nope")


async def test_an_ended_session_refuses_to_launch(tmp_path):
    api = ScriptedAPI(sse(text("never")))
    ctx = setup(tmp_path, api, definition())
    ctx.ended_by_model = True
    with pytest.raises(ToolError) as exc:
        await launch(ctx, "reader")
    assert str(exc.value) == ENDED_REFUSAL and "(or /clear)" in ENDED_REFUSAL
    assert api.requests == []


async def test_a_parent_abort_stops_the_subagent(tmp_path):
    api = ScriptedAPI(sse(text("never")))
    ctx = setup(tmp_path, api, definition())
    ctx.abort.abort()
    res = await launch(ctx, "reader")
    assert res.is_error and res.data["terminal_reason"].startswith("aborted")


def test_task_is_hidden_inside_subagents_and_without_a_runtime(tmp_path):
    tool = TaskTool()
    ctx = setup(tmp_path, ScriptedAPI())
    assert tool.is_enabled(ctx) is True
    ctx.agent_id = "sub"
    assert tool.is_enabled(ctx) is False
    assert tool.is_enabled(ToolContext(cwd=tmp_path, project_dir=tmp_path)) is False
    inp = parse_tool_input(tool, {"description": "d", "prompt": "p", "subagent_type": "x"})
    assert tool.is_concurrency_safe(inp) is True and tool.is_read_only(inp) is False


def test_task_description_lists_the_agent_types():
    desc = TaskTool({"reader": definition()}).api_schema()["description"]
    assert "- reader: reads (Tools: Read, Probe, Task)" in desc


async def test_end_conversation_inside_a_subagent_ends_nothing(tmp_path):
    api = ScriptedAPI(sse(tool_use("ToolSearch", {"query": "select:EndConversation"})),
                      sse(tool_use("EndConversation", {})),
                      sse(tool_use("EndConversation", {})),
                      sse(text("I stopped: welfare concern.")))
    pool = [ReadTool(), EndConversationTool(), ToolSearchTool(), TaskTool()]
    ctx = setup(tmp_path, api, definition(tools=None, model="claude-opus-4-8"), pool=pool)
    ctx.feature_flags = {"end_conversation": True}
    res = await launch(ctx, "reader")
    assert res.content == "I stopped: welfare concern."
    assert "EndConversation" not in api.requests[0].tool_names
    assert "EndConversation (deferred tool)" in api.requests[0].system_text
    assert "EndConversation" in api.requests[1].tool_names
    for req in api.requests[2:]:
        reply = json.loads(req.messages[-1]["content"][0]["content"])
        assert reply["ended"] is False and "cannot end the main session" in reply["message"]
    assert not ctx.abort.aborted and ctx.ended_by_model is False


async def test_task_through_the_parent_loop(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("Task", {"description": "probe", "prompt": "probe it", "subagent_type": "reader"})),
        sse(tool_use("Probe", {})),            # the subagent
        sse(text("probe says probed")),        # the subagent's answer
        sse(text("The subagent reports: probed")),
    )
    ctx = setup(tmp_path, api, definition())
    params = make_params(api, tmp_path, tools=[ReadTool(), ProbeTool(), TaskTool()], tool_context=ctx)
    evs = await run(params)
    assert terminal(evs).reason.value == "completed"
    # the model called it by its old name `Task`; the tool is offered as `Agent` (issue 16)
    assert "Agent" in api.requests[0].tool_names and "Agent" not in api.requests[1].tool_names
    result = api.requests[3].messages[-1]["content"][0]
    assert result["type"] == "tool_result" and result["content"] == "probe says probed"


# -- definitions from files ---------------------------------------------------------------------------

def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def test_load_definitions_from_md_files(tmp_path):
    project, config, home = tmp_path / "proj", tmp_path / "cfg", tmp_path / "home"
    write(project / ".codeloop" / "agents" / "reviewer.md",
          "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep,Glob\nmodel: opus\nmaxTurns: 7\n---\n"
          "You review code.\n")
    write(project / ".claude" / "agents" / "lister.md",
          "---\nname: lister\ndescription: \"Lists \\\"things\\\"\"\ntools:\n  - Glob\n  - Read\n---\nList.\n")
    write(project / ".claude" / "agents" / "reviewer.md",  # shadowed by .codeloop
          "---\nname: reviewer\ndescription: the other one\n---\nOther.\n")
    write(config / "agents" / "inline.md",
          "---\nname: inline\ndescription: >\n  Folded\n  text\ntools: [Read, Bash]\nmodel: inherit\n---\n")
    write(home / ".claude" / "agents" / "lister.md",  # shadowed by the project
          "---\nname: lister\ndescription: user lister\n---\nUser.\n")
    write(home / ".claude" / "agents" / "star.md", "---\nname: star\ndescription: all tools\ntools: \"*\"\n---\nS\n")
    defs = load_agent_definitions(project, config, home=home)
    assert defs.warnings == []
    assert set(defs) == {"reviewer", "lister", "inline", "star", GENERAL_PURPOSE}
    r = defs["reviewer"]
    assert (r.description, r.tools, r.model, r.max_turns, r.system_prompt, r.source) == (
        "Reviews diffs", ("Read", "Grep", "Glob"), "opus", 7, "You review code.", AgentSource.PROJECT)
    assert defs["lister"].tools == ("Glob", "Read") and defs["lister"].description == 'Lists "things"'
    assert defs["inline"].description == "Folded text" and defs["inline"].tools == ("Read", "Bash")
    assert defs["inline"].model is None and defs["inline"].system_prompt == DEFAULT_SUBAGENT_PROMPT
    assert defs["inline"].source is AgentSource.USER
    assert defs["star"].tools is None
    assert defs[GENERAL_PURPOSE].source is AgentSource.BUILTIN


@pytest.mark.parametrize("body, reason", [
    ("no frontmatter here\n", "no frontmatter"),
    ("---\nname: x\ndescription: y\n", "not closed"),
    ("---\ndescription: no name\n---\n", "name"),
    ("---\nname: has space\ndescription: d\n---\n", "name"),
    ("---\nname: x\n---\n", "description"),
    ("---\nname: x\ndescription: d\nmaxTurns: lots\n---\n", "maxTurns"),
    ("---\nname: x\ndescription: d\ntools: [Read\n---\n", "unterminated"),
    ("---\nname: x\n  indented: y\ndescription: d\n---\n", "indented"),
    ("---\njust words\n---\n", "key: value"),
])
def test_a_malformed_definition_is_skipped_with_a_warning(tmp_path, body, reason):
    project = tmp_path / "proj"
    write(project / ".codeloop" / "agents" / "good.md", "---\nname: good\ndescription: fine\n---\nOK\n")
    bad = write(project / ".codeloop" / "agents" / "bad.md", body)
    defs = load_agent_definitions(project, tmp_path / "cfg", home=tmp_path / "home")
    assert set(defs) == {"good", GENERAL_PURPOSE}
    (warning,) = defs.warnings
    assert str(bad) in warning and reason in warning


def test_frontmatter_comments_and_body():
    fields, body = parse_frontmatter("---\n# a comment\nname: a  # trailing\ndescription: 'it''s'\n---\n\nBody\n")
    assert fields == {"name": "a", "description": "it's"} and body == "Body"
