"""Plugins in Claude Code's format through the real CLI (issue 28): `--plugin-dir` folders, a
marketplace in a local git repository, `codeloop plugin …`, enabledPlugins and trust."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from pluginkit import git, make_marketplace, make_plugin
from test_print_mode import codeloop, jsonl

SERVERS = Path(__file__).resolve().parent.parent / "mcp" / "servers"


def prompt_text(request) -> str:
    return json.dumps(request.messages)


def test_plugin_dir_command_agent_skill_and_hook_in_print_mode(tmp_path):
    plugin = make_plugin(tmp_path / "greet")
    api = ScriptedAPI(sse(text("hello world!")))
    with api.serve() as url:
        r = codeloop(["-p", "/greet:hello world", "--plugin-dir", str(plugin), "--output-format", "stream-json",
                      "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    init = jsonl(r.stdout)[0]
    assert init["plugins"] == [{"name": "greet", "path": str(plugin.resolve())}]
    assert "greet:reviewer" in init["agents"] and "greet:wave" in init["skills"]
    sent = prompt_text(api.requests[0])
    assert "Say hello to world" in sent                    # the command expanded
    assert "context from the plugin hook" in sent          # the hook ran, ${CLAUDE_PLUGIN_ROOT} expanded
    assert "greet:wave" in json.dumps(api.requests[0].body)   # the skill is listed to the model


def test_plugin_command_answers_to_its_short_name(tmp_path):
    plugin = make_plugin(tmp_path / "greet")
    api = ScriptedAPI(sse(text("hi")))
    with api.serve() as url:
        r = codeloop(["-p", "/hello there", "--plugin-dir", str(plugin)], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "Say hello to there" in prompt_text(api.requests[0])


def test_plugin_command_allowed_tools_hold_for_its_query_in_print_mode(tmp_path):
    plugin = make_plugin(tmp_path / "greet")
    (plugin / "commands" / "make.md").write_text(
        "---\ndescription: Make a file\nallowed-tools: Bash(touch made.txt)\n---\nRun touch made.txt\n")
    call = sse(tool_use("Bash", {"command": "touch made.txt"}, id="b"))
    api = ScriptedAPI(call, sse(text("refused")))
    with api.serve() as url:   # from a plain prompt the write is not allowed (nobody to ask)
        r = codeloop(["-p", "run touch made.txt", "--plugin-dir", str(plugin)], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "made.txt").exists()
    api = ScriptedAPI(call, sse(text("made")))
    with api.serve() as url:
        r = codeloop(["-p", "/greet:make", "--plugin-dir", str(plugin)], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "made.txt").exists()


def test_plugin_command_over_stream_json_input(tmp_path):
    """The Agent SDK's way: `plugins=[{"type": "local", "path": …}]` becomes --plugin-dir."""
    plugin = make_plugin(tmp_path / "greet")
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p},
                                "parent_tool_use_id": None, "session_id": ""}) + "\n"
                    for p in ("/greet:hello sdk", "plain"))
    with api.serve() as url:
        r = codeloop(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                      "--plugin-dir", str(plugin)], cwd=tmp_path, base_url=url, input=lines)
    assert r.returncode == 0, r.stderr
    assert [m.get("result") for m in jsonl(r.stdout) if m["type"] == "result"] == ["one", "two"]
    assert "Say hello to sdk" in prompt_text(api.requests[0])
    assert "context from the plugin hook" in prompt_text(api.requests[1])


def test_plugin_agent_runs_as_a_subagent(tmp_path):
    plugin = make_plugin(tmp_path / "greet")
    api = ScriptedAPI(
        sse(tool_use("Agent", {"description": "review", "prompt": "review the greeting",
                               "subagent_type": "greet:reviewer"}, id="a1")),
        sse(text("the greeting is fine")),
        sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "delegate", "--plugin-dir", str(plugin), "--output-format", "json"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "greet:reviewer" in json.dumps(api.requests[0].body["tools"])
    assert "You are the greet reviewer." in api.requests[1].system_text
    assert json.loads(r.stdout)["result"] == "done"


mcp = pytest.importorskip("mcp", reason="the mcp SDK is not installed")


def test_plugin_mcp_server_with_plugin_root(tmp_path):
    plugin = make_plugin(tmp_path / "greet")
    shutil.copy(SERVERS / "tools_server.py", plugin / "server.py")
    shutil.copy(SERVERS / "sdkserver.py", plugin / "sdkserver.py")   # what the test servers share
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "tools": {"command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/server.py", "stdio"]}}}))
    api = ScriptedAPI(sse(tool_use("mcp__plugin_greet_tools__echo", {"text": "from plugin"}, id="e")),
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "use it", "--plugin-dir", str(plugin), "--allowedTools", "mcp__plugin_greet_tools__echo",
                      "--output-format", "stream-json", "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    init = jsonl(r.stdout)[0]
    assert {"name": "plugin:greet:tools", "status": "connected"} in init["mcp_servers"]
    results = [b for b in api.requests[1].messages[-1]["content"] if b["type"] == "tool_result"]
    assert "from plugin" in json.dumps(results) and not results[0].get("is_error")


def test_bad_plugins_are_one_line_each_and_the_rest_works(tmp_path):
    broken = tmp_path / "broken"
    (broken / ".claude-plugin").mkdir(parents=True)
    (broken / ".claude-plugin" / "plugin.json").write_text("{not json")
    partial = make_plugin(tmp_path / "partial", manifest={"name": "partial", "commands": "./nowhere",
                                                          "hooks": "./hooks/missing.json"})
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "/partial:hello you", "--plugin-dir", str(broken), "--plugin-dir", str(partial),
                      "--plugin-dir", str(tmp_path / "absent")], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("codeloop: warning:")]
    assert any(str(broken / ".claude-plugin" / "plugin.json") in ln and "invalid JSON" in ln for ln in lines)
    assert any("nowhere" in ln and "does not exist" in ln for ln in lines)
    assert any("missing.json" in ln for ln in lines)
    assert any(str(tmp_path / "absent") in ln for ln in lines)
    assert "Traceback" not in r.stderr
    assert "Say hello to you" in prompt_text(api.requests[0])   # the partial plugin still works


# -- marketplaces ------------------------------------------------------------------------------------

def plugin_cmd(tmp_path, *args):
    return codeloop(["plugin", *args], cwd=tmp_path)


def test_marketplace_install_enable_disable_uninstall(tmp_path):
    repo = make_marketplace(tmp_path / "market")
    r = plugin_cmd(tmp_path, "marketplace", "add", f"file://{repo}")
    assert r.returncode == 0, r.stderr
    assert "Added marketplace team (1 plugin)" in r.stdout
    assert (tmp_path / ".cfg" / "plugins" / "marketplaces" / "team" / ".claude-plugin").is_dir()   # cloned
    manifest = repo / ".claude-plugin" / "marketplace.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "plugins": [*data["plugins"], {"name": "later", "source": "./later"}]}))
    git("commit", "-qam", "more", cwd=repo)
    assert "later@team" not in plugin_cmd(tmp_path, "marketplace", "list").stdout
    assert "Updated marketplace team" in plugin_cmd(tmp_path, "marketplace", "update").stdout
    assert "later@team" in plugin_cmd(tmp_path, "marketplace", "list").stdout
    r = plugin_cmd(tmp_path, "install", "greet@team")
    assert r.returncode == 0, r.stderr
    installed = tmp_path / ".cfg" / "plugins" / "cache" / "team" / "greet"
    assert (installed / "commands" / "hello.md").is_file() and not (installed / ".git").exists()
    assert json.loads((tmp_path / ".cfg" / "settings.json").read_text())["enabledPlugins"] == {"greet@team": True}
    assert "greet@team  1.2.0  enabled" in plugin_cmd(tmp_path, "list").stdout

    def sent(prompt):
        api = ScriptedAPI(sse(text("ok")))
        with api.serve() as url:
            r = codeloop(["-p", prompt], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        return prompt_text(api.requests[0])

    assert "Say hello to team" in sent("/greet:hello team")
    assert plugin_cmd(tmp_path, "disable", "greet").returncode == 0
    assert "disabled" in plugin_cmd(tmp_path, "list").stdout
    off = sent("/greet:hello team")
    assert "Say hello" not in off and "context from the plugin hook" not in off   # nothing of it runs
    assert plugin_cmd(tmp_path, "enable", "greet@team").returncode == 0
    assert "context from the plugin hook" in sent("hi")
    r = plugin_cmd(tmp_path, "uninstall", "greet@team")
    assert r.returncode == 0, r.stderr
    assert not installed.exists() and "No plugins installed" in plugin_cmd(tmp_path, "list").stdout


def test_install_leaves_links_out_of_the_plugin_behind_and_a_broken_registry_is_one_line(tmp_path):
    repo = make_marketplace(tmp_path / "market")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET\n")
    (repo / "plugins" / "greet" / "commands" / "leak.md").symlink_to(secret)
    assert plugin_cmd(tmp_path, "marketplace", "add", str(repo)).returncode == 0
    assert plugin_cmd(tmp_path, "install", "greet@team").returncode == 0
    commands = tmp_path / ".cfg" / "plugins" / "cache" / "team" / "greet" / "commands"
    assert (commands / "hello.md").is_file() and not (commands / "leak.md").exists()
    (tmp_path / ".cfg" / "plugins" / "installed_plugins.json").write_text("{oops")
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert [ln for ln in r.stderr.splitlines() if "installed_plugins.json" in ln and "invalid JSON" in ln]


def test_local_folder_marketplace_and_bad_sources(tmp_path):
    repo = make_marketplace(tmp_path / "market")
    r = plugin_cmd(tmp_path, "marketplace", "add", str(repo))
    assert r.returncode == 0 and "Added marketplace team" in r.stdout
    assert "greet@team" in plugin_cmd(tmp_path, "marketplace", "list").stdout
    r = plugin_cmd(tmp_path, "marketplace", "add", str(tmp_path / "nowhere"))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert str(tmp_path / "nowhere") in r.stderr and "does not exist" in r.stderr
    r = plugin_cmd(tmp_path, "install", "missing@team")
    assert r.returncode == 1 and "has no plugin 'missing'" in r.stderr and "greet" in r.stderr
    r = plugin_cmd(tmp_path, "install", "../../greet@team")
    assert r.returncode == 1 and "name@marketplace" in r.stderr
    r = plugin_cmd(tmp_path, "install", "greet@unknown")
    assert r.returncode == 1 and "unknown marketplace 'unknown'" in r.stderr
    (repo / ".claude-plugin" / "marketplace.json").write_text("{broken")
    r = plugin_cmd(tmp_path, "install", "greet@team")
    assert r.returncode == 1 and str(repo / ".claude-plugin" / "marketplace.json") in r.stderr
    assert "Traceback" not in r.stderr


def test_project_enabled_plugins_count_only_in_a_trusted_folder(tmp_path):
    repo = make_marketplace(tmp_path / "market")
    assert plugin_cmd(tmp_path, "marketplace", "add", str(repo)).returncode == 0
    assert plugin_cmd(tmp_path, "install", "greet@team").returncode == 0
    assert plugin_cmd(tmp_path, "disable", "greet@team").returncode == 0   # off for the user
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"greet@team": True}}))

    def run(*flags):
        api = ScriptedAPI(sse(text("ok")))
        env = {"CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg"), "HOME": str(tmp_path)}
        with api.serve() as url:
            r = codeloop(["-p", "/greet:hello x", *flags], cwd=project, base_url=url, env=env)
        assert r.returncode == 0, r.stderr
        return r, prompt_text(api.requests[0])

    r, sent = run()
    assert "Say hello to x" not in sent and "context from the plugin hook" not in sent
    assert "ignored enabledPlugins" in r.stderr
    _, sent = run("--trust")
    assert "Say hello to x" in sent and "context from the plugin hook" in sent


def test_bare_keeps_plugin_dir_without_hooks_and_drops_enabled_plugins(tmp_path):
    repo = make_marketplace(tmp_path / "market")
    assert plugin_cmd(tmp_path, "marketplace", "add", str(repo)).returncode == 0
    assert plugin_cmd(tmp_path, "install", "greet@team").returncode == 0
    other = make_plugin(tmp_path / "other", "other")
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    with api.serve() as url:
        first = codeloop(["-p", "/greet:hello a", "--bare"], cwd=tmp_path, base_url=url)
        second = codeloop(["-p", "/other:hello b", "--bare", "--plugin-dir", str(other)], cwd=tmp_path, base_url=url)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "Say hello" not in prompt_text(api.requests[0])
    assert "Say hello to b" in prompt_text(api.requests[1])
    assert "context from the plugin hook" not in prompt_text(api.requests[1])


def test_extra_known_marketplace_is_added_on_install(tmp_path):
    repo = make_marketplace(tmp_path / "market")
    (tmp_path / ".cfg").mkdir()
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps(
        {"extraKnownMarketplaces": {"team": {"source": {"source": "git", "url": f"file://{repo}"}}}}))
    r = plugin_cmd(tmp_path, "install", "greet@team")
    assert r.returncode == 0, r.stderr
    assert "greet@team" in plugin_cmd(tmp_path, "list").stdout


def test_validate(tmp_path):
    good = plugin_cmd(tmp_path, "validate", str(make_plugin(tmp_path / "greet")))
    assert good.returncode == 0 and good.stdout.startswith("greet 1.2.0: 1 command folder(s)")
    bad = tmp_path / "bad" / ".claude-plugin"
    bad.mkdir(parents=True)
    (bad / "plugin.json").write_text("[]")
    r = plugin_cmd(tmp_path, "validate", str(tmp_path / "bad"))
    assert r.returncode == 1 and "expected a JSON object" in r.stderr
