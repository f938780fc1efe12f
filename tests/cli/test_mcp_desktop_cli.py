"""`codeloop mcp add-from-claude-desktop` reads Claude Desktop's config file (Linux:
~/.config/Claude/claude_desktop_config.json) and adds the chosen servers at the given scope;
a session then starts them."""

import json
import sys
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text
from test_print_mode import codeloop

SERVER = str(Path(__file__).resolve().parent.parent / "mcp" / "servers" / "tools_server.py")


def desktop(tmp_path, servers) -> Path:
    path = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": servers, "globalShortcut": "Ctrl+Space"}))
    return path


def mcp(tmp_path, *argv, input=None):
    return codeloop(["mcp", *argv], cwd=tmp_path, input=input, env={"XDG_CONFIG_HOME": ""})


SERVERS = {"tools": {"command": sys.executable, "args": [SERVER, "stdio"], "env": {"NAME": "tools"}},
           "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
           "broken": {"args": ["no command"]}}


def test_imports_named_servers_and_a_session_uses_them(tmp_path):
    desktop(tmp_path, SERVERS)
    r = mcp(tmp_path, "add-from-claude-desktop", "tools")
    assert r.returncode == 0, r.stderr
    assert "Successfully imported 1 MCP server to local config" in r.stdout
    local = json.loads((tmp_path / ".claude.json").read_text())["projects"][str(tmp_path.resolve())]["mcpServers"]
    assert local == {"tools": SERVERS["tools"]}
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        s = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url)
    assert s.returncode == 0, s.stderr
    assert "mcp__tools__echo" in api.requests[0].tool_names


def test_all_into_project_scope_with_name_clashes_and_bad_entries(tmp_path):
    desktop(tmp_path, SERVERS)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"fs": {"command": "mine"}}}))
    r = mcp(tmp_path, "add-from-claude-desktop", "-s", "project", "--all")
    assert r.returncode == 0, r.stderr
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert servers["fs"] == {"command": "mine"} and servers["fs_1"] == SERVERS["fs"]
    assert servers["tools"] == SERVERS["tools"] and "broken" not in servers
    assert "Skipped broken" in r.stdout and "Imported fs as fs_1" in r.stdout
    assert "Successfully imported 2 MCP servers to project config" in r.stdout


def test_errors_are_one_line_and_change_nothing(tmp_path):
    r = mcp(tmp_path, "add-from-claude-desktop", "--all")
    assert r.returncode == 1 and "Claude Desktop config file not found" in r.stderr
    desktop(tmp_path, SERVERS)
    for argv, needle in ((["ghost"], "not in Claude Desktop's config: ghost"),
                         ([], "name the servers to import, or pass --all"),
                         (["broken"], "no server was imported"),
                         (["-s", "galaxy", "tools"], "invalid choice")):
        r = mcp(tmp_path, "add-from-claude-desktop", *argv)
        assert r.returncode == 1 and needle in r.stderr and "Traceback" not in r.stderr, (argv, r.stderr)
    assert not (tmp_path / ".claude.json").exists()


def test_help_lists_the_new_subcommands(tmp_path):
    r = mcp(tmp_path, "--help")
    assert "add-from-claude-desktop" in r.stdout and "serve" in r.stdout


def test_the_interactive_pick():
    import pytest

    from codeloop.cli.commands.mcp_desktop import choose

    names = ["a", "b", "c"]
    asked = []

    def ask(answer):
        return lambda prompt: asked.append(prompt) or answer

    assert choose(names, [], False, ask("1, c")) == ["a", "c"] and "2. b" in asked[0]
    assert choose(names, [], False, ask("all")) == names
    assert choose(names, [], False, ask("")) == []
    with pytest.raises(ValueError, match="no server '9'"):
        choose(names, [], False, ask("9"))
