"""Claude Code's command-line surface: no prefix abbreviations, usage errors exit 1, and the flags
added for drop-in use (--bare, --debug, -n/--name, --append-system-prompt-file,
--disable-slash-commands, --file, -w/--worktree, --permission-mode auto (accepted), the accepted-but-inert
integrations), plus settings-file hooks for the newer events. The CLI runs as a subprocess."""

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, transcripts


def write_settings(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def hook_script(tmp_path, name, body):
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)
    return str(p)


def test_no_abbreviations_and_usage_errors_exit_1(tmp_path):
    for argv in (["-p", "x", "--verb"], ["-p", "x", "--output-form", "json"], ["--no-such-flag"],
                 ["-p", "x", "--output-format", "yaml"], ["-p", "x", "--max-turns", "many"]):
        r = codeloop(argv, cwd=tmp_path)
        assert r.returncode == 1, (argv, r.stderr)
        assert r.stderr.startswith("codeloop: error: ") and r.stdout == ""


def test_append_system_prompt_file(tmp_path):
    (tmp_path / "extra.md").write_text("ALWAYS ANSWER IN HAIKU")
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "x", "--append-system-prompt", "FIRST", "--append-system-prompt-file", "extra.md"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    system = api.requests[0].system_text
    assert "FIRST" in system and "ALWAYS ANSWER IN HAIKU" in system
    r = codeloop(["-p", "x", "--append-system-prompt-file", "nope.md"], cwd=tmp_path, base_url=url)
    assert r.returncode == 1 and "cannot read" in r.stderr and "nope.md" in r.stderr


def test_bare_skips_hooks_and_claude_md(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("PROJECT MEMORY MARKER")
    ran = tmp_path / "hook-ran"
    hook = hook_script(tmp_path, "ups.sh", f'cat > /dev/null; touch "{ran}"\n')
    write_settings(tmp_path / ".cfg" / "settings.json",
                   {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}]}})
    api = ScriptedAPI(sse(text("plain")), sse(text("full")))
    with api.serve() as url:
        bare = codeloop(["-p", "x", "--bare"], cwd=tmp_path, base_url=url)
        assert bare.returncode == 0, bare.stderr
        assert not ran.exists() and "PROJECT MEMORY MARKER" not in json.dumps(api.requests[0].body)
        full = codeloop(["-p", "x"], cwd=tmp_path, base_url=url)
    assert full.returncode == 0 and ran.exists() and "PROJECT MEMORY MARKER" in json.dumps(api.requests[1].body)


def test_name_then_resume_by_name(tmp_path):
    api = ScriptedAPI(sse(text("first answer")), sse(text("second answer")))
    with api.serve() as url:
        r = codeloop(["-p", "start", "-n", "auth-refactor", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(r.stdout)["session_id"]
        again = codeloop(["-p", "go on", "--resume", "auth-refactor", "--output-format", "json"], cwd=tmp_path,
                         base_url=url)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["session_id"] == sid
    assert "first answer" in json.dumps(api.requests[1].messages)
    [path] = transcripts(tmp_path)
    titles = [json.loads(line) for line in path.read_text().splitlines() if "custom-title" in line]
    assert titles and titles[0]["customTitle"] == "auth-refactor" and titles[0]["sessionId"] == sid
    missing = codeloop(["-p", "x", "--resume", "no-such-name"], cwd=tmp_path, base_url=url)
    assert missing.returncode == 1


def test_disable_slash_commands_sends_the_text(tmp_path):
    api = ScriptedAPI(sse(text("that was text")))
    with api.serve() as url:
        r = codeloop(["-p", "/compact now", "--disable-slash-commands"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0 and r.stdout == "that was text\n"
    assert api.requests[0].messages[-1]["content"][-1]["text"] == "/compact now"


class _Files(BaseHTTPRequestHandler):
    seen: list = []

    def log_message(self, *a):
        pass

    def do_GET(self):  # noqa: N802
        _Files.seen.append((self.path, self.headers.get("anthropic-beta"), self.headers.get("x-api-key")))
        if self.path == "/v1/files/file_abc/content":
            body = b"downloaded bytes\n"
            self.send_response(200)
        else:
            body = b'{"type":"error","error":{"type":"not_found_error","message":"no such file"}}'
            self.send_response(404)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802 — the model call: a non-retryable refusal is enough here
        body = b'{"type":"error","error":{"type":"invalid_request_error","message":"files only"}}'
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_file_downloads_before_the_run(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        r = codeloop(["-p", "x", "--file", "file_abc:data/in.txt", "--max-turns", "1"], cwd=tmp_path, base_url=url)
        assert (tmp_path / "data" / "in.txt").read_text() == "downloaded bytes\n", r.stderr
        assert ("/v1/files/file_abc/content", "files-api-2025-04-14", "test-key") in _Files.seen
        bad = codeloop(["-p", "x", "--file", "file_zzz:x.txt"], cwd=tmp_path, base_url=url)
        assert bad.returncode == 1 and "404" in bad.stderr and not (tmp_path / "x.txt").exists()
        escape = codeloop(["-p", "x", "--file", "file_abc:../outside.txt"], cwd=tmp_path, base_url=url)
        assert escape.returncode == 1 and "'..' would leave the working directory" in escape.stderr
        assert not (tmp_path.parent / "outside.txt").exists()
    finally:
        server.shutdown()


def test_worktree_runs_in_a_new_git_worktree(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "pwd; git branch --show-current"}, id="b")), sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "where", "-w", "feature-x", "--allowedTools", "Bash"], cwd=repo, base_url=url,
                     env={"CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg")})
    assert r.returncode == 0, r.stderr
    wt = repo / ".claude" / "worktrees" / "feature-x"
    assert wt.is_dir() and (wt / ".git").exists()
    out = next(b for m in api.requests[1].messages for b in m["content"] if b.get("type") == "tool_result")
    assert str(wt) in json.dumps(out) and "worktree-feature-x" in json.dumps(out)
    r = codeloop(["-p", "x", "-w", "y"], cwd=tmp_path, base_url=url)
    assert r.returncode == 1 and "git repository" in r.stderr


def test_permission_mode_auto_debug_and_inert_flags(tmp_path):
    api = ScriptedAPI(sse(text("fine")))
    with api.serve() as url:
        r = codeloop(["-p", "x", "--permission-mode", "auto", "--ide", "--tmux", "--debug", "api",
                      "--debug-file", "dbg.log", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "--permission-mode auto" not in r.stderr    # a real mode now (tests/permissions/test_auto_mode.py)
    assert r.stderr.count("--ide is not supported") == 1 and "--tmux is not supported" in r.stderr
    assert json.loads(r.stdout)["result"] == "fine"
    assert (tmp_path / "dbg.log").read_text().startswith("[DEBUG]")


def test_settings_hooks_for_newer_events(tmp_path):
    log = tmp_path / "events.jsonl"
    rec = hook_script(tmp_path, "rec.sh", f'cat >> "{log}"; echo >> "{log}"\n')
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                                                "additionalContext": "READ FAILED CTX"}})
    fail_ctx = hook_script(tmp_path, "fail.sh", f'cat >> "{log}"; echo >> "{log}"; echo \'{answer}\'\n')
    allow = hook_script(tmp_path, "allow.sh", f'cat >> "{log}"; echo >> "{log}"; echo \'{{"hookSpecificOutput": '
                        '{"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}\'\n')
    cmd = lambda c: [{"hooks": [{"type": "command", "command": c}]}]  # noqa: E731
    write_settings(tmp_path / ".cfg" / "settings.json", {"hooks": {
        "PostToolUseFailure": cmd(fail_ctx), "PermissionRequest": cmd(allow), "SessionStart": cmd(rec)}})
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "missing")}, id="r"),
                          tool_use("Write", {"file_path": str(tmp_path / "w.txt"), "content": "w"}, id="w")),
                      sse(text("done")), sse(text("resumed")))
    with api.serve() as url:
        first = codeloop(["-p", "go", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(first.stdout)["session_id"]
        codeloop(["-p", "again", "--resume", sid], cwd=tmp_path, base_url=url)
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    names = [(e["hook_event_name"], e.get("source") or e.get("tool_name")) for e in events]
    assert names == [("SessionStart", "startup"), ("PostToolUseFailure", "Read"), ("PermissionRequest", "Write"),
                     ("SessionStart", "resume")]
    failure = events[1]
    assert failure["tool_use_id"] == "r" and failure["error"] and isinstance(failure["duration_ms"], int)
    assert failure["prompt_id"] and (tmp_path / "w.txt").read_text() == "w"
    assert "READ FAILED CTX" in json.dumps(api.requests[1].messages)


def test_agent_runs_the_main_thread_as_a_named_agent(tmp_path):
    agents = json.dumps({"scout": {"description": "Looks around", "prompt": "You are SCOUT-PROMPT.",
                                   "tools": ["Glob", "Read", "mcp__x__y"], "model": "haiku"}})
    api = ScriptedAPI(sse(text("scouted")), sse(text("plain")))
    with api.serve() as url:
        r = codeloop(["-p", "look", "--agents", agents, "--agent", "scout"], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        req = api.requests[0]
        assert "You are SCOUT-PROMPT." in req.system_text and sorted(req.tool_names) == ["Glob", "Read"]
        assert req.body["model"] == "claude-haiku-4-5"
        # the command line still wins
        r = codeloop(["-p", "look", "--agents", agents, "--agent", "scout", "--model", "sonnet",
                      "--system-prompt", "CLI PROMPT"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0 and api.requests[1].body["model"] == "claude-sonnet-4-5"
    assert "CLI PROMPT" in api.requests[1].system_text and "SCOUT-PROMPT" not in api.requests[1].system_text
    missing = codeloop(["-p", "x", "--agent", "nobody"], cwd=tmp_path)
    assert missing.returncode == 1 and "no agent named 'nobody'" in missing.stderr


def test_safe_mode_starts_without_customizations(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("PROJECT MEMORY MARKER")
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"s": {"command": "/nonexistent/server"}}}))
    api = ScriptedAPI(sse(text("safe")))
    with api.serve() as url:
        r = codeloop(["-p", "x", "--safe-mode", "--mcp-config", str(cfg), "--advisor", "opus", "--output-format",
                      "stream-json", "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert lines[0]["mcp_servers"] == [] and lines[-1]["result"] == "safe"
    assert "PROJECT MEMORY MARKER" not in json.dumps(api.requests[0].body)
    assert "--advisor is not supported" in r.stderr
