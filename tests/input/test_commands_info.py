"""Issue 27's information commands through the real dispatcher: /context, /mcp, /agents, /hooks, /doctor."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text
from inputhelpers import make_dispatcher

from codeloop.input.context_usage import GRID_SIDE, Category, ContextUsage, cells, measure, render

SERVERS = Path(__file__).resolve().parents[1] / "mcp" / "servers"


# -- /context -------------------------------------------------------------------------------------------

def test_cells_give_every_present_category_a_cell_and_fill_the_grid():
    usage = ContextUsage("m", 200_000, {Category.SYSTEM_PROMPT: 3_000, Category.SYSTEM_TOOLS: 12_000,
                                        Category.MCP_TOOLS: 0, Category.MEMORY: 300, Category.MESSAGES: 41_000,
                                        Category.FREE: 0, Category.BUFFER: 45_000})
    grid = cells(usage)
    assert len(grid) == GRID_SIDE * GRID_SIDE
    counts = {c: grid.count(c) for c in Category}
    assert counts[Category.MEMORY] == 1            # 300 tokens is under a cell, still shown
    assert counts[Category.MCP_TOOLS] == 0
    assert counts[Category.SYSTEM_TOOLS] == 6 and counts[Category.MESSAGES] == 20 and counts[Category.BUFFER] == 22
    assert counts[Category.FREE] == 100 - 1 - 2 - 6 - 20 - 22
    assert grid[-1] is Category.BUFFER and grid[0] is Category.SYSTEM_PROMPT


def test_an_overfull_window_still_draws_one_hundred_cells():
    usage = ContextUsage("m", 1_000, {Category.SYSTEM_PROMPT: 100, Category.SYSTEM_TOOLS: 100, Category.MCP_TOOLS: 0,
                                      Category.MEMORY: 0, Category.MESSAGES: 2_000, Category.FREE: 0,
                                      Category.BUFFER: 200})
    grid = cells(usage)
    assert len(grid) == 100 and Category.SYSTEM_PROMPT in grid and Category.SYSTEM_TOOLS in grid


async def test_context_uses_the_sessions_real_usage(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Always run the linter. " * 200)
    api = ScriptedAPI(sse(text("hello back"), input_tokens=30_000, output_tokens=500))
    d, front = make_dispatcher(api, tmp_path)
    from codeloop.context.prompt import user_context
    front.conv.config.user_context = user_context(tmp_path, tmp_path / ".cfg")
    await d.on_submit("hello")
    usage = measure(front.conv)
    t = usage.tokens
    assert usage.window == 200_000
    assert t[Category.MEMORY] > 1_000 and t[Category.SYSTEM_TOOLS] > 1_000
    # the API said 30,500 tokens for everything so far: messages are what the fixed parts leave of it
    fixed = t[Category.SYSTEM_PROMPT] + t[Category.SYSTEM_TOOLS] + t[Category.MCP_TOOLS] + t[Category.MEMORY]
    assert 30_500 <= fixed + t[Category.MESSAGES] <= 30_600
    assert sum(t.values()) == usage.window
    await d.on_submit("/context")
    out = front.text()
    assert "Context Usage" in out and "claude-sonnet-4-5 · " in out and "/200.0k tokens" in out
    for label in ("System prompt", "System tools", "Memory files", "Messages", "Free space", "Autocompact buffer"):
        assert label in out
    grid_rows = [ln for ln in out.splitlines() if ln.startswith("  ") and ln.strip()[:1] in "■▣▦◆●⛶⛝"]
    assert len(grid_rows) == GRID_SIDE
    assert len(api.requests) == 1
    assert f"Memory files · /memory\n  └ {tmp_path / 'CLAUDE.md'}: 1." in out
    await d.on_submit("/context json")
    data = json.loads(front.shown[-1][0])
    assert data["maxTokens"] == 200_000 and {c["name"] for c in data["categories"]} >= {"Messages", "Free space"}


async def test_context_before_any_reply_estimates_the_messages(tmp_path):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    from codeloop.messages import user_message
    front.conv.messages.append(user_message("x" * 3_800))
    usage = measure(front.conv)
    assert 950 <= usage.tokens[Category.MESSAGES] <= 1_100
    assert "Messages: 1.0k tokens" in render(usage)


# -- /mcp -----------------------------------------------------------------------------------------------

@pytest.fixture
async def servers():
    pytest.importorskip("mcp")
    from codeloop.mcp.client import McpManager
    from codeloop.mcp.config import ServerConfig, Transport

    m = McpManager()
    await m.start([ServerConfig("tools", Transport.STDIO, command=sys.executable,
                                args=(str(SERVERS / "tools_server.py"),)),
                   ServerConfig("broken", Transport.STDIO, command=sys.executable,
                                args=(str(SERVERS / "crash_on_start.py"),))], timeout=30)
    yield m
    await asyncio.wait_for(m.aclose(), 60)


async def test_mcp_lists_servers_with_status_and_tools_and_reconnects_one(tmp_path, servers):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    front.conv.mcp = servers
    await d.on_submit("/mcp")
    out = front.text()
    assert "✔ tools  connected  (stdio, settings:" in out and "mcp__tools__echo" in out
    assert "✘ broken  failed" in out and "missing configuration" in out
    from codeloop.input.context_usage import measure
    usage = measure(front.conv)
    assert [name for name, _ in usage.mcp_servers] == ["tools"] and usage.tokens[Category.MCP_TOOLS] > 100
    assert usage.tokens[Category.MCP_TOOLS] == usage.mcp_servers[0][1]
    before = servers.version
    await d.on_submit("/mcp reconnect tools")
    assert "Reconnected to tools: connected" in front.text()
    assert servers.version > before and any(t.name == "mcp__tools__echo" for t in servers.tools())
    await d.on_submit("/mcp reconnect broken")
    assert "Reconnect to broken: failed — " in front.text()
    await d.on_submit("/mcp reconnect nope")
    assert "No MCP server named 'nope' (known: tools, broken)" in front.text()


async def test_mcp_without_servers(tmp_path):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    await d.on_submit("/mcp")
    assert "No MCP servers configured" in front.text()


# -- /agents, /hooks --------------------------------------------------------------------------------------

async def test_agents_lists_definitions_by_source_with_tools_and_model(tmp_path):
    from codeloop.tools.agents import load_agent_definitions

    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "rev.md").write_text(
        "---\nname: reviewer\ndescription: Reviews diffs for bugs\ntools: Read, Grep\nmodel: haiku\n---\nReview.\n")
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    front.conv.config.agent_definitions = dict(load_agent_definitions(tmp_path, tmp_path / "cfg",
                                                                      home=tmp_path / "home"))
    await d.on_submit("/agents")
    out = front.text()
    assert out.index("project:") < out.index("built-in:")
    assert "reviewer · model: haiku · tools: Read, Grep" in out and "Reviews diffs for bugs" in out
    assert "general-purpose · model: inherit · tools: all tools" in out


async def test_hooks_shows_event_matcher_command_and_source(tmp_path):
    from codeloop.config.settings import load_settings

    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}))
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    await d.on_submit("/hooks")
    assert "No hooks configured" in front.text()
    settings = load_settings(tmp_path, trusted=True)
    front.conv.settings = settings
    front.conv.config.hooks = settings.hooks()
    await d.on_submit("/hooks")
    out = front.text()
    where = str(tmp_path / ".claude" / "settings.json")
    assert "  PreToolUse\n    [Bash] echo pre\n        from project: " + where in out
    assert "  Stop\n    [*] notify-send done" in out


# -- /doctor ----------------------------------------------------------------------------------------------

async def test_doctor_names_a_broken_settings_file_and_a_failed_server(tmp_path, servers, monkeypatch):
    from codeloop.input.commands_info import doctor_checks

    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    conv = front.conv
    conv.mcp, conv.trusted, conv.api_key_source = servers, True, "ANTHROPIC_API_KEY"
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"model": "opus",}')
    await d.on_submit("/doctor")
    out = front.text()
    lines = out.splitlines()
    assert any(ln.strip().startswith("✔ ok") and "Python 3." in ln for ln in lines)
    assert any("ripgrep" in ln or "rg" in ln for ln in lines)
    assert any("bubblewrap" in ln for ln in lines)
    assert "provider anthropic, API key from ANTHROPIC_API_KEY" in out
    broken = next(ln for ln in lines if "settings.json" in ln)
    assert "✘ problem" in broken and str(tmp_path / ".claude" / "settings.json") in broken
    assert any("✘ problem" in ln and "MCP server broken failed to start" in ln for ln in lines)
    assert any("✔ ok" in ln and "MCP server tools connected" in ln for ln in lines)
    assert "problem(s) found" in out
    conv.api_key_source = "none"
    assert ("problem", "no Anthropic API key: export ANTHROPIC_API_KEY=<key> or set apiKeyHelper in settings") \
        in doctor_checks(conv)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setattr("codeloop.tools.builtin.ripgrep.env_rg", lambda: None)
    assert next(c for c in doctor_checks(conv) if "ripgrep" in c[1])[0] == "problem"


def test_mcp_listing_says_which_servers_need_authentication():
    from types import SimpleNamespace

    from codeloop.input.commands_info import mcp_listing

    def cfg(name):
        return SimpleNamespace(name=name, command=None, args=[], url=f"http://127.0.0.1/{name}",
                               transport=SimpleNamespace(value="http"), source=SimpleNamespace(value="user"))

    class Manager:
        def servers(self):
            return [(cfg("locked"), SimpleNamespace(value="failed"), "401", []),
                    (cfg("open"), SimpleNamespace(value="connected"), None, []),
                    (cfg("signed"), SimpleNamespace(value="connected"), None, [])]

        def auth_status(self):
            return {"locked": "needs-auth", "open": "not-required", "signed": "authenticated"}

    out = mcp_listing(Manager())
    assert "locked  failed  ⚠ needs authentication" in out
    assert "open  connected  (http" in out and "signed  connected  (signed in)" in out
