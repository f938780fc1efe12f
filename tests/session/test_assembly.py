"""The one assembly and the one model switch (issue 24): RunOptions → session for every front end,
`/model` and the SDK's set_model reach requests and compaction, a fallback reaches compaction,
subagents run on the session's own loop with its MCP tools, policy and compaction."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, error, sse, text, tool_use
from codeloop.cli.startup.options import options_from_argv
from codeloop.events import CompactBoundary, Terminal
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.assembly import SessionHost, open_session
from codeloop.session.options import SetupError

MCP_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    return tmp_path


def provider(api: ScriptedAPI) -> AnthropicProvider:
    return AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())


async def drain(events) -> list:
    return [ev async for ev in events]


def is_summary_request(req) -> bool:
    return "Primary Request and Intent" in json.dumps(req.messages[-1])   # the summary instructions


async def test_set_model_reaches_requests_compaction_and_gates(project):
    api = ScriptedAPI(sse(text("one")), sse(text("Summary: we said one.")), sse(text("two")))
    conv, _ = await open_session(options_from_argv(["-p", "x", "--model", "sonnet"]), provider=provider(api))
    await drain(conv.submit("first"))
    assert conv.set_model("haiku") == "claude-haiku-4-5"
    assert conv.tool_context.main_model == conv.tool_context.model == "claude-haiku-4-5"
    evs = await drain(conv.compact())
    assert any(isinstance(e, CompactBoundary) for e in evs)
    await drain(conv.submit("second"))
    assert [r.body["model"] for r in api.requests] == ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-haiku-4-5"]
    await conv.aclose()


async def test_a_fallback_moves_compaction_to_the_fallback_model_for_that_query(project, monkeypatch):
    overloaded = error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})
    too_long = error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")
    api = ScriptedAPI(sse(text("hello")), overloaded, overloaded, overloaded, too_long,
                      sse(text("Summary: we said hello.")), sse(text("after fallback")), sse(text("back")))
    conv, _ = await open_session(options_from_argv(["-p", "x", "--model", "opus", "--fallback-model", "haiku"]),
                                 provider=provider(api))
    await drain(conv.submit("first"))
    evs = await drain(conv.submit("second"))
    assert [e for e in evs if isinstance(e, Terminal)][-1].reason.value == "completed"
    models = [r.body["model"] for r in api.requests]
    summary = next(i for i, r in enumerate(api.requests) if is_summary_request(r))
    assert models[summary] == "claude-haiku-4-5"       # reactive compaction on the model answering now
    await drain(conv.submit("third"))                   # the next query starts on the configured model again
    assert api.requests[-1].body["model"] == models[0] and conv.compactor.model == models[0]
    await conv.aclose()


async def test_every_front_end_gets_mcp_tools_from_the_assembly(project):
    (project / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": [str(MCP_SERVER / "tools_server.py"), "stdio"]}}}))
    api = ScriptedAPI(sse(text("ok")))
    conv, warnings = await open_session(options_from_argv(["-p", "x", "--mcp-config", "mcp.json"]),
                                        provider=provider(api))
    try:
        assert not [w for w in warnings if "failed" in w]
        names = {t.name for t in conv.tool_pool()}
        assert any(n.startswith("mcp__demo__") for n in names)
    finally:
        await conv.aclose()


async def test_setup_errors_are_one_line(project):
    with pytest.raises(SetupError, match="--max-turns must be a positive integer"):
        options_from_argv(["-p", "x", "--max-turns", "0"])
    with pytest.raises(SetupError, match="no previous session to continue"):
        await open_session(options_from_argv(["-p", "x", "--continue"]), SessionHost())


async def test_the_permission_prompt_tool_must_exist(project):
    with pytest.raises(SetupError, match="--permission-prompt-tool: no such MCP tool"):
        await open_session(options_from_argv(["-p", "x", "--permission-prompt-tool", "mcp__nope__ask"]),
                           provider=provider(ScriptedAPI()))


async def test_a_subagent_runs_on_the_sessions_loop_with_its_rules(project):
    """Deny rules and the session's model reach the subagent; its usage joins the session's totals."""
    (project / "secret.txt").write_text("s3cret")
    api = ScriptedAPI(
        sse(tool_use("Agent", {"description": "look", "prompt": "read secret.txt",
                               "subagent_type": "general-purpose"})),
        sse(tool_use("Read", {"file_path": str(project / "secret.txt")})),   # the subagent
        sse(text("I could not read it.")),
        sse(text("The subagent could not read it.")))
    conv, _ = await open_session(options_from_argv(["-p", "x", "--disallowedTools", "Read(./secret.txt)"]),
                                 provider=provider(api))
    evs = await drain(conv.submit("look at the secret"))
    assert [e for e in evs if isinstance(e, Terminal)][-1].reason.value == "completed"
    denied = api.requests[2].messages[-1]["content"][0]
    assert denied["type"] == "tool_result" and denied.get("is_error") and "s3cret" not in json.dumps(denied)
    assert conv.usage.output_tokens > 0 and len(api.requests) == 4
    assert sum(u.input_tokens for u in conv.usage_by_model.values()) >= 4   # all four calls counted
    await conv.aclose()


def definition(source, mode):
    from codeloop.tools.agents import AgentDefinition

    return AgentDefinition(name="a", description="d", system_prompt="p", source=source, permission_mode=mode)


def test_a_subagents_permission_mode_never_widens_from_an_untrusted_project():
    from codeloop.permissions.policy import PermissionMode, PermissionPolicy
    from codeloop.session.subagent import subagent_policy
    from codeloop.tools.agents import AgentSource

    policy = PermissionPolicy(mode=PermissionMode.DEFAULT)
    assert subagent_policy(policy, definition(AgentSource.PROJECT, "bypassPermissions"), trusted=False) is policy
    assert subagent_policy(policy, definition(AgentSource.PROJECT, "acceptEdits"), trusted=True).mode \
        is PermissionMode.ACCEPT_EDITS
    assert subagent_policy(policy, definition(AgentSource.PROJECT, "plan"), trusted=False).mode is PermissionMode.PLAN
    assert subagent_policy(policy, definition(AgentSource.USER, "acceptEdits"), trusted=False).mode \
        is PermissionMode.ACCEPT_EDITS
    bypass = PermissionPolicy(mode=PermissionMode.BYPASS)
    assert subagent_policy(bypass, definition(AgentSource.USER, "plan"), trusted=True) is bypass   # cannot override
    locked = PermissionPolicy(mode=PermissionMode.DEFAULT, bypass_disabled=True)
    assert subagent_policy(locked, definition(AgentSource.USER, "bypassPermissions"), trusted=True) is locked


def test_agent_files_carry_permission_mode_and_disallowed_tools(tmp_path):
    from codeloop.tools.agents import AgentSource, FrontmatterError, parse_agent_file

    f = tmp_path / "a.md"
    f.write_text("---\nname: a\ndescription: d\npermissionMode: plan\ndisallowedTools: Bash, Write\n---\nBody\n")
    d = parse_agent_file(f, AgentSource.PROJECT)
    assert d.permission_mode == "plan" and d.disallowed_tools == ("Bash", "Write")
    f.write_text("---\nname: a\ndescription: d\npermissionMode: yolo\n---\nBody\n")
    with pytest.raises(FrontmatterError, match="permissionMode"):
        parse_agent_file(f, AgentSource.PROJECT)


async def test_a_successor_keeps_the_mcp_servers_and_the_sdks_hook_callbacks(project):
    from codeloop.hooks.events import CallbackSource
    from codeloop.session.assembly import successor

    (project / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": [str(MCP_SERVER / "tools_server.py"), "stdio"]}}}))
    conv, _ = await open_session(options_from_argv(["-p", "x", "--mcp-config", "mcp.json"]),
                                 provider=provider(ScriptedAPI()))

    class Registered(CallbackSource):
        pass

    conv.add_hook_callbacks(Registered())
    new = successor(conv)                      # /clear
    await conv.aclose("clear")                 # the old session ends; its servers are handed over
    try:
        assert new.mcp is conv.mcp and any(t.name.startswith("mcp__demo__") for t in new.tool_pool())
        assert isinstance(new.hooks.runner.callbacks, Registered) and new.session_id != conv.session_id
        assert new.mcp.statuses() and all(s["status"] == "connected" for s in new.mcp.statuses())
    finally:
        await new.aclose()
