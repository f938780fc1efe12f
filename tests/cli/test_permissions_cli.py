"""Settings, trust, permission rules, modes and hooks through the real CLI (issue 5)."""

import json
import stat

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl


def write_settings(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def hook_script(tmp_path, name, body):
    path = tmp_path / "hooks" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def result_of(r):
    return jsonl(r.stdout)[-1]


def tool_result(req, i=-1):
    return req.messages[-1]["content"][i]


def test_user_settings_allow_rule_and_compound_command_refused(tmp_path):
    write_settings(tmp_path / ".cfg" / "settings.json", {"permissions": {"allow": ["Bash(echo hello)"]}})
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo hello"}, id="ok")),
                      sse(tool_use("Bash", {"command": "echo hello; touch pwned"}, id="bad")), sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json"], cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert "hello" in tool_result(api.requests[1])["content"]
    assert not (tmp_path / "pwned").exists()
    assert [d["tool_use_id"] for d in res["permission_denials"]] == ["bad"]


def test_untrusted_project_config_is_ignored_but_its_deny_rules_apply(tmp_path):
    marker = tmp_path / "hook-ran"
    write_settings(tmp_path / ".claude" / "settings.json", {
        "permissions": {"allow": ["Bash"], "deny": ["Read(secret.txt)"], "defaultMode": "bypassPermissions"},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                    "command": f"echo $CODELOOP_TEST_MARK > {marker}"}]}]},
        "env": {"CODELOOP_TEST_MARK": "from-project"}})
    (tmp_path / "secret.txt").write_text("s3cret")
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch made"}, id="b"),
                          tool_use("Read", {"file_path": str(tmp_path / "secret.txt")}, id="r")), sse(text("ok")),
                      sse(tool_use("Bash", {"command": "touch made"}, id="b2")), sse(text("ok")))
    home = {"HOME": str(tmp_path / "home")}   # the project must not be the home folder
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json"], cwd=tmp_path, base_url=url, env=home)
        assert r.returncode == 0, r.stderr
        for setting in ("hooks", "permissions.allow", "permissions.defaultMode", "env"):
            assert setting in r.stderr and "not trusted" in r.stderr
        assert not marker.exists() and not (tmp_path / "made").exists()
        assert sorted(d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]) == ["b", "r"]
        # trusted for this run: the folder's hooks and allow rules now act (its deny still holds)
        r2 = codeloop(["-p", "go", "--trust"], cwd=tmp_path, base_url=url, env=home)
    assert r2.returncode == 0, r2.stderr
    assert marker.read_text().strip() == "from-project" and (tmp_path / "made").exists()


def test_protected_paths_refused_even_when_bypassing(tmp_path):
    target = tmp_path / ".codeloop" / "settings.json"
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(target), "content": '{"permissions":{"allow":["Bash"]}}'},
                                   id="w")),
                      sse(tool_use("Bash", {"command": f"echo x > {tmp_path}/.cfg/projects/evil"}, id="b")),
                      sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--dangerously-skip-permissions", "--output-format", "json"], cwd=tmp_path,
                     base_url=url)
    assert not target.exists()
    assert "settings or session records" in tool_result(api.requests[1])["content"]
    assert not (tmp_path / ".cfg" / "projects" / "evil").exists()
    assert {d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]} == {"w", "b"}


def test_modes(tmp_path):
    (tmp_path / "f.txt").write_text("a\n")
    api = ScriptedAPI(
        sse(tool_use("Write", {"file_path": str(tmp_path / "plan.txt"), "content": "x"})), sse(text("1")),
        sse(tool_use("Read", {"file_path": str(tmp_path / "f.txt")})),
        sse(tool_use("Edit", {"file_path": str(tmp_path / "f.txt"), "old_string": "a", "new_string": "b"})),
        sse(text("2")),
        sse(tool_use("Bash", {"command": "touch dontask"})), sse(text("3")),
        sse(tool_use("Read", {"file_path": "/etc/hostname"})), sse(text("4")))
    with api.serve() as url:
        codeloop(["-p", "x", "--permission-mode", "plan"], cwd=tmp_path, base_url=url)
        codeloop(["-p", "x", "--permission-mode", "acceptEdits"], cwd=tmp_path, base_url=url)
        codeloop(["-p", "x", "--permission-mode", "dontAsk"], cwd=tmp_path, base_url=url)
        codeloop(["-p", "x"], cwd=tmp_path, base_url=url)
    assert not (tmp_path / "plan.txt").exists() and "plan mode" in tool_result(api.requests[1])["content"]
    assert (tmp_path / "f.txt").read_text() == "b\n"
    assert not (tmp_path / "dontask").exists() and "dontAsk" in tool_result(api.requests[6])["content"]
    assert "outside the working directories" in tool_result(api.requests[8])["content"]


def test_malformed_settings_reported_with_line_and_the_run_stops(tmp_path):
    # issue 13: a broken settings file fails closed (it could hold deny rules) instead of being ignored
    (tmp_path / ".cfg").mkdir()
    (tmp_path / ".cfg" / "settings.json").write_text('{\n  "permissions": {"allow": ["Bash"],}\n}')
    api = ScriptedAPI(sse(text("still works")))
    with api.serve() as url:
        r = codeloop(["-p", "x"], cwd=tmp_path, base_url=url)
    assert r.returncode == 1 and r.stdout == "" and api.requests == []
    assert f"{tmp_path / '.cfg' / 'settings.json'}:2:" in r.stderr and "invalid JSON" in r.stderr


def hooks_settings(tmp_path, hooks):
    write_settings(tmp_path / ".cfg" / "settings.json", {"hooks": hooks})


def test_pre_tool_use_hook_blocks_with_stderr_to_model_and_allow_decision(tmp_path):
    block = hook_script(tmp_path, "block.sh", 'cat > "$0.in"; echo "rm is not allowed here" >&2; exit 2\n')
    allow = hook_script(tmp_path, "allow.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput": {"hookEventName": '
                        '"PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "ok"}}\'\n')
    hooks_settings(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": block}]},
                                             {"matcher": "Write", "hooks": [{"type": "command", "command": allow}]}]})
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch nope"}, id="b")),
                      sse(tool_use("Write", {"file_path": str(tmp_path / "w.txt"), "content": "hi"}, id="w")),
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "nope").exists()
    assert "rm is not allowed here" in tool_result(api.requests[1])["content"]
    stdin = json.loads(open(block + ".in").read())
    assert stdin["hook_event_name"] == "PreToolUse" and stdin["tool_name"] == "Bash"
    assert stdin["tool_input"] == {"command": "touch nope"} and stdin["tool_use_id"] == "b"
    assert stdin["permission_mode"] == "default" and stdin["transcript_path"].endswith(".jsonl")
    assert (tmp_path / "w.txt").read_text() == "hi"   # the hook's allow answered the prompt


def test_post_tool_use_feedback_and_stop(tmp_path):
    post = hook_script(tmp_path, "post.sh", 'cat > "$0.in"; echo "lint failed: fix it" >&2; exit 2\n')
    hooks_settings(tmp_path, {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": post}]}]})
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo ran"})), sse(text("done")))
    with api.serve() as url:
        codeloop(["-p", "go", "--allowedTools", "Bash"], cwd=tmp_path, base_url=url)
    content = tool_result(api.requests[1])["content"]
    assert "ran" in content and "lint failed: fix it" in content
    assert json.loads(open(post + ".in").read())["tool_response"]["stdout"].strip() == "ran"


def test_user_prompt_submit_block_erases_prompt_and_context_is_added(tmp_path):
    block = hook_script(tmp_path, "ups.sh", 'if grep -q secret; then echo "no secrets please" >&2; exit 2; fi\n'
                                            'echo "Today is release day."\n')
    hooks_settings(tmp_path, {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": block}]}]})
    api = ScriptedAPI(sse(text("fine")))
    with api.serve() as url:
        r1 = codeloop(["-p", "tell me the secret", "--output-format", "json"], cwd=tmp_path, base_url=url)
        r2 = codeloop(["-p", "hello"], cwd=tmp_path, base_url=url)
    assert r1.returncode == 1 and "no secrets please" in r1.stderr and len(api.requests) == 1
    assert json.loads(r1.stdout)["terminal_reason"] == "hook_stopped"
    sent = " ".join(b.get("text", "") for m in api.requests[0].messages for b in m["content"])
    assert "Today is release day." in sent and "secret" not in sent and r2.stdout == "fine\n"


def test_stop_hook_forces_continuation_then_cap(tmp_path):
    stop = hook_script(tmp_path, "stop.sh", 'if grep -q \'"stop_hook_active": *false\'; then echo "run the tests" >&2; '
                                            'exit 2; fi; exit 0\n')
    hooks_settings(tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]})
    api = ScriptedAPI(sse(text("done?")), sse(text("tests pass")))
    with api.serve() as url:
        r = codeloop(["-p", "go"], cwd=tmp_path, base_url=url)
    assert r.stdout == "tests pass\n" and "run the tests" in api.requests[1].messages[-1]["content"][-1]["text"]
    always = hook_script(tmp_path, "always.sh", 'echo "again" >&2; exit 2\n')
    hooks_settings(tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": always}]}]})
    api2 = ScriptedAPI(*[sse(text(f"try {i}")) for i in range(12)])
    with api2.serve() as url:
        r2 = codeloop(["-p", "go", "--output-format", "json"], cwd=tmp_path, base_url=url,
                      env={"CODELOOP_STOP_HOOK_BLOCK_CAP": "3"})
    assert len(api2.requests) == 4 and json.loads(r2.stdout)["terminal_reason"] == "hook_stopped"
    assert "Stop hooks blocked 3 times" in r2.stderr


def test_session_start_end_and_pre_compact_hooks(tmp_path):
    log = tmp_path / "events.log"
    rec = hook_script(tmp_path, "rec.sh", f'cat >> {log}; echo >> {log}\n')
    cmd = [{"hooks": [{"type": "command", "command": rec}]}]
    hooks_settings(tmp_path, {"SessionStart": cmd, "SessionEnd": cmd, "PreCompact": cmd})
    api = ScriptedAPI(sse(text("a")), sse(text("<summary>s</summary>")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(r.stdout)["session_id"]
        codeloop(["-p", "/compact", "--resume", sid], cwd=tmp_path, base_url=url)
    events = [json.loads(l) for l in log.read_text().splitlines() if l.strip()]
    names = [(e["hook_event_name"], e.get("source") or e.get("trigger") or e.get("reason")) for e in events]
    assert ("SessionStart", "startup") in names and ("PreCompact", "manual") in names
    assert sum(n == "SessionEnd" for n, _ in names) == 2


def test_invalid_rule_is_reported_and_ignored(tmp_path):
    write_settings(tmp_path / ".cfg" / "settings.json", {"permissions": {"allow": ["Bash(echo hi", "Write"]}})
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(tmp_path / "w.txt"), "content": "x"})), sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "go"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0 and (tmp_path / "w.txt").read_text() == "x"   # the valid rule still applies
    assert "ignored permission rule 'Bash(echo hi'" in r.stderr


def test_read_deny_rules_also_hide_files_from_grep_and_glob(tmp_path):
    cfg = tmp_path.parent / (tmp_path.name + "-cfg")   # keep the transcript out of the searched tree
    write_settings(cfg / "settings.json", {"permissions": {"deny": ["Read(.env)"]}})
    (tmp_path / ".env").write_text("API_SECRET=hunter2\n")
    (tmp_path / "app.py").write_text("API_SECRET = os.environ['API_SECRET']\n")
    api = ScriptedAPI(sse(tool_use("Grep", {"pattern": "API_SECRET", "output_mode": "content"}, id="g"),
                          tool_use("Glob", {"pattern": "**/*"}, id="l"),
                          tool_use("Grep", {"pattern": "hunter2", "output_mode": "files_with_matches"}, id="f")),
                      sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "find secrets"], cwd=tmp_path, base_url=url, env={"CODELOOP_CONFIG_DIR": str(cfg)})
    assert r.returncode == 0, r.stderr
    results = {b["tool_use_id"]: b["content"] for b in api.requests[1].messages[-1]["content"]
               if b["type"] == "tool_result"}
    env_file = str(tmp_path / ".env")
    assert "app.py" in results["g"] and "hunter2" not in results["g"] and env_file not in results["g"]
    assert "app.py" in results["l"] and env_file not in results["l"]
    assert results["f"] == "No files found"


def test_subagent_stop_hook_keeps_the_subagent_working(tmp_path):
    hook = hook_script(tmp_path, "sub.sh", 'cat > "$0.in"; if grep -q \'"stop_hook_active": *false\' "$0.in"; then '
                                           'echo "check the second file too" >&2; exit 2; fi\n')
    hooks_settings(tmp_path, {"SubagentStop": [{"hooks": [{"type": "command", "command": hook}]}]})
    api = ScriptedAPI(
        sse(tool_use("Task", {"description": "look", "prompt": "look around", "subagent_type": "general-purpose"},
                     id="t")),
        sse(text("first look done")),           # the subagent tries to stop
        sse(text("both files checked")),        # … and continues after the hook's feedback
        sse(text("main agent done")))
    with api.serve() as url:
        r = codeloop(["-p", "delegate"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "check the second file too" in api.requests[2].messages[-1]["content"][-1]["text"]
    assert api.requests[3].messages[-1]["content"][0]["content"] == "both files checked"
    assert json.loads(open(hook + ".in").read())["hook_event_name"] == "SubagentStop"
