"""Issue 27's slash commands in a real pty, judged on the rendered screen: /context, /mcp,
/memory and `#`, /agents, /hooks, /add-dir, /sandbox, /export, /doctor, /output-style, /vim,
/review, /security-review and /statusline."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use

SERVERS = Path(__file__).resolve().parents[1] / "mcp" / "servers"
ROWS = 50


def send(s, line):
    s.term.send(line + "\r")


def test_context_draws_the_grid_with_the_sessions_figures(tmp_path, screen):
    api = ScriptedAPI(sse(text("Hello there."), input_tokens=40_000, output_tokens=100))
    with api.serve() as url:
        s = screen(url, rows=ROWS)
        send(s, "hello")
        s.wait_text("Hello there.")
        send(s, "/context")
        shown = s.wait_text("Autocompact buffer")
        assert "Context Usage" in shown and "claude-sonnet-4-5" in shown and "/200.0k tokens (20%)" in shown
        rows = [ln for ln in shown.splitlines() if ln.startswith("  ") and ln.strip()[:1] in "■▣▦◆●⛶⛝"]
        assert len(rows) == 10 and "●" in "".join(rows) and "⛝" in rows[-1]
        assert "Messages: " in shown and "System tools: " in shown and "Free space: " in shown
    assert len(api.requests) == 1


def test_mcp_lists_servers_and_reconnects_one(tmp_path, screen):
    pytest.importorskip("mcp")
    cfg = {"mcpServers": {"tools": {"command": sys.executable, "args": [str(SERVERS / "tools_server.py")]},
                          "broken": {"command": sys.executable, "args": [str(SERVERS / "crash_on_start.py")]}}}
    with ScriptedAPI().serve() as url:
        s = screen(url, "--mcp-config", json.dumps(cfg), rows=ROWS, cols=120)
        send(s, "/mcp")
        shown = s.wait_text("/mcp login <server> signs in", timeout=30)
        assert "✔ tools  connected" in shown and "mcp__tools__echo" in shown
        assert "✘ broken  failed" in shown and "missing configuration" in shown
        send(s, "/context")
        shown = s.wait_text("MCP tools · /mcp")
        assert "  └ tools: " in shown and "▦" in shown
        send(s, "/mcp reconnect tools")
        s.wait_text("Reconnected to tools: connected", timeout=30)
        send(s, "/doctor")
        shown = s.wait_text("problem(s) found", timeout=30)
        assert "MCP server broken failed to start" in shown and "MCP server tools connected" in shown


def test_hash_note_goes_to_the_chosen_memory_and_memory_opens_the_editor(tmp_path, screen):
    editor = tmp_path / "ed.sh"
    editor.write_text('#!/bin/sh\necho "- added in the editor" >> "$1"\n')
    editor.chmod(0o755)
    api = ScriptedAPI(sse(text("Noted.")))
    with api.serve() as url:
        s = screen(url, rows=ROWS, env={"EDITOR": str(editor)})
        send(s, "# always run the tests with -q")
        shown = s.wait_text("3) User memory")
        assert "Save to memory: 'always run the tests with -q' — where?" in shown
        s.term.send("1")
        s.wait_text(f"Saved to {tmp_path / 'CLAUDE.md'}")
        assert (tmp_path / "CLAUDE.md").read_text() == "- always run the tests with -q\n"
        send(s, "/memory")
        # the choice's options show in the toolbar at once, the listing above them a moment later
        shown = s.wait_for(lambda t: "3) User memory (~/.claude/CLAUDE.md, all projects) — new" in t
                           and "Memory files in use:" in t)
        assert f"Memory files in use:\n  {tmp_path / 'CLAUDE.md'}" in shown
        assert f"❯ 1) {tmp_path / 'CLAUDE.md'}" in shown and "2) Project memory, local" in shown   # highlighted
        s.term.send("1")
        s.wait_text(f"Edited {tmp_path / 'CLAUDE.md'}")
        assert "- added in the editor" in (tmp_path / "CLAUDE.md").read_text()
        send(s, "#1 priority: fix the flaky test")
        s.wait_text("4) Not memory: send it to the model as a prompt")
        s.term.send("4")
        s.wait_text("Noted.")
    assert "always run the tests with -q" in json.dumps(api.requests[0].body)
    assert api.requests[0].messages[-1]["content"][-1]["text"] == "#1 priority: fix the flaky test"


def test_agents_hooks_output_style_and_vim(tmp_path, screen):
    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "rev.md").write_text(
        "---\nname: reviewer\ndescription: Reviews diffs for bugs\ntools: Read, Grep\nmodel: haiku\n---\nReview.\n")
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre-bash"}]}]}}))
    with ScriptedAPI().serve() as url:
        # HOME elsewhere: in ~, ~/.claude is the user's folder, and this test wants the project's
        s = screen(url, rows=ROWS, cols=180, env={"CODELOOP_TRUST": "1", "HOME": str(tmp_path / "home")})
        send(s, "/agents")
        shown = s.wait_text("reviewer · model: haiku · tools: Read, Grep")
        assert "general-purpose · model: inherit" in shown and shown.index("project:") < shown.index("built-in:")
        send(s, "/hooks")
        shown = s.wait_text("[Bash] echo pre-bash")
        assert f"from project: {tmp_path / '.claude' / 'settings.json'}" in shown
        send(s, "/output-style")
        s.wait_text("2) Explanatory")
        s.term.send("2")
        s.wait_text("Output style set to Explanatory")
        send(s, "/vim")
        s.wait_text("Editor mode set to vim.")
        s.wait_text("-- INSERT --")
        send(s, "/vim")
        s.wait_text("Editor mode set to normal.")
    assert json.loads((tmp_path / ".claude" / "settings.local.json").read_text())["outputStyle"] == "Explanatory"


def test_add_dir_reaches_policy_and_sandbox_and_sandbox_switches(tmp_path, tmp_path_factory, screen):
    other = tmp_path_factory.mktemp("other")
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(other / "w.txt"), "content": "hi\n"})),
                      sse(tool_use("Bash", {"command": f"touch {other}/b.txt"})), sse(text("Both done.")))
    with api.serve() as url:
        s = screen(url, "--permission-mode", "acceptEdits", rows=ROWS, cols=140)
        send(s, "/add-dir does-not-exist")
        s.wait_text(f"/add-dir: {tmp_path / 'does-not-exist'} does not exist")
        send(s, f"/add-dir {other}")
        s.wait_text(f"Added {other} as a working directory for this session")
        send(s, "write both files")
        s.wait_text("Both done.", timeout=30)
        assert (other / "w.txt").read_text() == "hi\n" and (other / "b.txt").exists()
        send(s, "/sandbox")
        shown = s.wait_text("bubblewrap:")
        if "Sandbox: on" in shown:   # the REPL sandboxes by default where bubblewrap works
            assert f"writable: {tmp_path}, {other}" in shown
            send(s, "/sandbox off")
            s.wait_text("Sandbox off: Bash commands run unsandboxed for this session.")


def test_export_and_the_prompt_commands(tmp_path, screen):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    (tmp_path / "app.py").write_text("print(1)\n")
    subprocess.run([*git, "add", "app.py"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=tmp_path, check=True)
    (tmp_path / "app.py").write_text("import os\nos.system(input())\n")
    api = ScriptedAPI(sse(text("Review: app.py now runs input as a command.")),
                      sse(text("Security: command injection in app.py:2.")),
                      sse(text("Status line configured.")))
    with api.serve() as url:
        s = screen(url, rows=ROWS, cols=140, env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
        send(s, "/review")
        s.wait_text("Review: app.py now runs input as a command.")
        send(s, "/security-review")
        s.wait_text("Security: command injection in app.py:2.")
        send(s, "/statusline show the branch")
        s.wait_text("Status line configured.")
        send(s, "/export chat.md")
        s.wait_text(f"Conversation exported to {tmp_path / 'chat.md'}")
        send(s, "/export")
        shown = s.wait_text("Conversation exported to")
        assert ".md" in shown.split("Conversation exported to")[-1]
    prompts = [r.messages[-1]["content"][-1]["text"] for r in api.requests]
    assert "expert code reviewer" in prompts[0] and "app.py" in prompts[0]
    assert "+os.system(input())" in prompts[1]
    assert '"statusLine"' in prompts[2] and "Request: show the branch" in prompts[2]
    md = (tmp_path / "chat.md").read_text()
    assert "## Assistant\n\nSecurity: command injection in app.py:2." in md
    assert len(list(tmp_path.glob("*-*.md"))) == 1   # the default-named export, beside chat.md


def test_doctor_names_a_settings_file_broken_after_start_up(tmp_path, screen):
    with ScriptedAPI().serve() as url:
        s = screen(url, rows=ROWS, cols=160)
        (tmp_path / ".cfg" / "settings.json").write_text('{"model": "opus",,}')
        send(s, "/doctor")
        shown = s.wait_text("problem(s) found", timeout=30)
        line = next(ln for ln in shown.splitlines() if "settings.json" in ln)
        assert "✘ problem" in line and str(tmp_path / ".cfg" / "settings.json") in line
        assert "✔ ok" in shown and "Python 3." in shown and "API key from ANTHROPIC_API_KEY" in shown
