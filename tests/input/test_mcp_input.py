"""MCP prompts and resources in the REPL's input path (dispatch → process_user_input) with a real
MCP server (tests/mcp/servers/content_server.py) and a real Conversation on the scripted API."""

import asyncio
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text
from inputhelpers import FakeFront
from codeloop.input.commands import CommandRegistry
from codeloop.input.dispatch import Dispatcher
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.session.parts import SessionParts
from codeloop.tools.registry import builtin_tools

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

SERVER = Path(__file__).resolve().parent.parent / "mcp" / "servers" / "content_server.py"


@pytest.fixture
async def manager():
    from codeloop.mcp.client import McpManager
    from codeloop.mcp.config import ServerConfig, Transport

    m = McpManager()
    await m.start([ServerConfig("content", Transport.STDIO, command=sys.executable, args=(str(SERVER),))])
    assert m.connected_servers() == ["content"], m.errors()
    yield m
    await asyncio.wait_for(m.aclose(), 60)


def dispatcher(api, cwd, manager, deny=()):
    cfg = ConversationConfig(cwd=cwd, model="claude-sonnet-4-5", tools=builtin_tools(), system_prompt=["test"],
                             user_context={}, policy=PermissionPolicy(mode=PermissionMode.DEFAULT, cwd=cwd,
                                                                      deny=list(deny)))
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    conv = Conversation(cfg, provider, session_id="11111111-2222-4333-8444-555555555555",
                        parts=SessionParts(mcp=manager, owns_mcp=False))
    front = FakeFront(conv)
    front.registry = CommandRegistry.load(cwd, cwd / ".cfg", home=cwd / "home")   # as the REPL's host has it
    return Dispatcher(front, front.registry), front


async def test_prompt_command_expands_into_the_servers_prompt(tmp_path, manager):
    api = ScriptedAPI(sse(text("hi Bob")))
    d, front = dispatcher(api, tmp_path, manager)
    await d.on_submit("/mcp__content__greet Bob")
    assert "Say hello to Bob in a cheerful way." in str(api.requests[0].messages[-1])


async def test_prompt_command_errors_are_one_line_and_send_nothing(tmp_path, manager):
    api = ScriptedAPI()
    d, front = dispatcher(api, tmp_path, manager)
    await d.on_submit("/mcp__content__greet")
    await d.on_submit("/mcp__content__nosuch x")
    assert api.requests == []
    shown = front.text()
    assert "/mcp__content__greet: missing argument name (usage: /mcp__content__greet <name> [mood])" in shown
    assert "Unknown command: /mcp__content__nosuch" in shown


async def test_help_lists_the_servers_prompts(tmp_path, manager):
    d, front = dispatcher(ScriptedAPI(), tmp_path, manager)
    await d.on_submit("/help")
    assert "/mcp__content__greet <name> [mood] — Greet someone (MCP: content) (mcp)" in front.text()


async def test_resource_mention_attaches_and_refusals_are_notices(tmp_path, manager):
    api = ScriptedAPI(sse(text("ok")))
    d, front = dispatcher(api, tmp_path, manager)
    await d.on_submit("what does @content:docs://readme say? and @content:docs://broken?")
    sent = str(api.requests[0].messages)
    assert "PELICAN" in sent and "the disk is on fire" not in sent
    assert any("@content:docs://broken: not attached — MCP server content" in t for t, _ in front.shown)


async def test_resource_mention_denied_by_rule(tmp_path, manager):
    api = ScriptedAPI(sse(text("ok")))
    d, front = dispatcher(api, tmp_path, manager, deny=["ReadMcpResourceTool"])
    await d.on_submit("see @content:docs://readme")
    assert "PELICAN" not in str(api.requests[0].messages)
    assert "not attached" in front.text()


async def test_servers_with_colons_in_their_names(tmp_path):
    """A plugin's server is `plugin:<plugin>:<server>`: its resources and prompts still resolve."""
    from codeloop.mcp.client import McpManager
    from codeloop.mcp.config import ServerConfig, Transport

    m = McpManager()
    await m.start([ServerConfig("plugin:kit:content", Transport.STDIO, command=sys.executable, args=(str(SERVER),))])
    try:
        api = ScriptedAPI(sse(text("ok")), sse(text("hi")))
        d, front = dispatcher(api, tmp_path, m)
        await d.on_submit("see @plugin:kit:content:docs://readme")
        await d.on_submit("/mcp__plugin_kit_content__greet Ada")
        assert "PELICAN" in str(api.requests[0].messages)
        assert "Say hello to Ada in a cheerful way." in str(api.requests[1].messages[-1])
    finally:
        await asyncio.wait_for(m.aclose(), 60)
