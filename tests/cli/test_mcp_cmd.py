"""`codeloop mcp add|add-json|list|get|remove` writes Claude Code's files (~/.claude.json for the
local and user scopes, .mcp.json for project scope) and sessions use what it wrote; trust given
to a folder in Claude Code (or CODELOOP_TRUST=1) unlocks the folder's own configuration."""

import json
import sys
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl

SERVER = str(Path(__file__).resolve().parent.parent / "mcp" / "servers" / "tools_server.py")


def mcp(tmp_path, *argv, env=None):
    return codeloop(["mcp", *argv], cwd=tmp_path, env=env)


def claude_json(tmp_path):
    return json.loads((tmp_path / ".claude.json").read_text())


def test_add_in_each_scope_writes_claude_codes_files(tmp_path):
    (tmp_path / ".claude.json").write_text(json.dumps({"numStartups": 7, "projects": {"/elsewhere": {"x": 1}}}))
    r = mcp(tmp_path, "add", "-e", "K=v", "tools", "--", sys.executable, SERVER, "stdio")
    assert r.returncode == 0, r.stderr
    assert "Added stdio MCP server tools" in r.stdout and "to local config" in r.stdout
    data = claude_json(tmp_path)
    key = str(tmp_path.resolve())
    assert data["projects"][key]["mcpServers"]["tools"] == {"type": "stdio", "command": sys.executable,
                                                            "args": [SERVER, "stdio"], "env": {"K": "v"}}
    assert data["numStartups"] == 7 and data["projects"]["/elsewhere"] == {"x": 1}  # the rest is kept
    r = mcp(tmp_path, "add", "-s", "project", "-t", "http", "web", "http://127.0.0.1:9/mcp",
            "-H", "Authorization: Bearer t")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {"mcpServers": {"web": {
        "type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer t"}}}}
    r = mcp(tmp_path, "add-json", "-s", "user", "everywhere", json.dumps({"command": "true", "args": []}))
    assert r.returncode == 0 and claude_json(tmp_path)["mcpServers"] == {"everywhere": {"command": "true", "args": []}}


def test_add_with_oauth_client_and_callback_port(tmp_path):
    r = mcp(tmp_path, "add", "-s", "project", "-t", "http", "--client-id", "cid", "--callback-port", "8123", "web",
            "https://example.com/mcp")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["web"] == {
        "type": "http", "url": "https://example.com/mcp", "oauth": {"clientId": "cid", "callbackPort": 8123}}
    r = mcp(tmp_path, "add", "--client-id", "cid", "local", "--", "true")
    assert r.returncode == 1 and "apply to http and sse servers only" in r.stderr


def test_bad_input_changes_nothing(tmp_path):
    for argv, needle in ((["add", "x"], "missing"), (["add", "-t", "http", "w", "ftp-ish"], "invalid URL"),
                         (["add-json", "j", "{not json"], "invalid JSON"),
                         (["add-json", "j", json.dumps({"type": "carrier-pigeon"})], "unknown type"),
                         (["add", "-e", "NOEQUALS", "s", "--", "cmd"], "KEY=VALUE"),
                         (["remove", "ghost"], "No MCP server found"), (["frobnicate"], "invalid choice")):
        r = mcp(tmp_path, *argv)
        assert r.returncode == 1 and needle in r.stderr, (argv, r.stderr)
    assert not (tmp_path / ".claude.json").exists() and not (tmp_path / ".mcp.json").exists()
    (tmp_path / ".claude.json").write_text("{broken")
    r = mcp(tmp_path, "add", "s", "--", "true")
    assert r.returncode == 1 and "invalid JSON" in r.stderr
    assert (tmp_path / ".claude.json").read_text() == "{broken"  # never overwritten


def test_list_get_remove_and_a_session_uses_the_local_server(tmp_path):
    assert "No MCP servers configured" in mcp(tmp_path, "list").stdout
    assert mcp(tmp_path, "add", "tools", "--", sys.executable, SERVER, "stdio").returncode == 0
    assert mcp(tmp_path, "add", "-s", "user", "dead", "--", "/nonexistent/server").returncode == 0
    listing = mcp(tmp_path, "list")
    assert listing.returncode == 0, listing.stderr
    lines = {line.split(":")[0]: line for line in listing.stdout.splitlines() if ":" in line}
    assert "✓ Connected" in lines["tools"] and "✗ Failed to connect" in lines["dead"]
    got = mcp(tmp_path, "get", "tools")
    assert got.returncode == 0 and "Scope: Local config" in got.stdout and f"Args: {SERVER} stdio" in got.stdout
    # an ordinary print-mode session picks up the local-scope server (untrusted folder: it is the user's file)
    api = ScriptedAPI(sse(tool_use("mcp__tools__echo", {"text": "from local scope"}, id="e")), sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--allowedTools", "mcp__tools__echo", "--output-format", "stream-json",
                      "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert {"name": "tools", "status": "connected"} in jsonl(r.stdout)[0]["mcp_servers"]
    assert "from local scope" in json.dumps(api.requests[1].messages)
    removed = mcp(tmp_path, "remove", "tools")
    assert removed.returncode == 0 and 'Removed MCP server "tools" from local config' in removed.stdout
    assert claude_json(tmp_path)["projects"][str(tmp_path.resolve())]["mcpServers"] == {}
    assert mcp(tmp_path, "get", "tools").returncode == 1


def test_trust_from_claude_code_or_the_environment(tmp_path):
    project = tmp_path / "proj"
    ran = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f'#!/bin/sh\ncat >/dev/null; echo x >> "{ran}"\n')
    hook.chmod(0o755)
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}))
    env = {"HOME": str(tmp_path), "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg")}
    api = ScriptedAPI(*[sse(text("ok")) for _ in range(4)])
    with api.serve() as url:
        untrusted = codeloop(["-p", "x"], cwd=project, base_url=url, env=env)
        assert untrusted.returncode == 0 and not ran.exists()
        assert "not trusted" in untrusted.stderr and "CODELOOP_TRUST=1" in untrusted.stderr
        by_env = codeloop(["-p", "x"], cwd=project, base_url=url, env={**env, "CODELOOP_TRUST": "1"})
        assert by_env.returncode == 0 and ran.read_text().count("x") == 1
        (tmp_path / ".claude.json").write_text(json.dumps(
            {"projects": {str(project.resolve()): {"hasTrustDialogAccepted": True}}}))
        by_claude = codeloop(["-p", "x"], cwd=project, base_url=url, env=env)
        assert by_claude.returncode == 0 and ran.read_text().count("x") == 2 and "not trusted" not in by_claude.stderr
        (tmp_path / ".claude.json").write_text(json.dumps(
            {"projects": {str(project.resolve()): {"hasTrustDialogAccepted": False}}}))
        declined = codeloop(["-p", "x"], cwd=project, base_url=url, env=env)
    assert declined.returncode == 0 and ran.read_text().count("x") == 2
