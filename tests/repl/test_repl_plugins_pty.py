"""A `--plugin-dir` plugin's command in the REPL (issue 28): listed in the `/` menu with its
description, and run by name, expanding into the prompt the model gets."""

import json

from fakeapi import ScriptedAPI, sse, text
from pluginkit import make_plugin


def test_plugin_command_in_the_menu_and_run(tmp_path, screen):
    plugin = make_plugin(tmp_path / "greet")
    api = ScriptedAPI(sse(text("Hello, bob.")))
    with api.serve() as url:
        s = screen(url, "--plugin-dir", str(plugin), env={"HOME": str(tmp_path / "home")})
        s.term.send("/greet:")
        shown = s.wait_text("Say hello")
        assert "/greet:hello" in shown and "(plugin)" in shown
        s.term.send("hello bob\r")
        s.wait_text("Hello, bob.")
    sent = json.dumps(api.requests[0].messages)
    assert "Say hello to bob" in sent and "context from the plugin hook" in sent


def test_plugin_slash_command_adds_a_marketplace_and_installs(tmp_path, screen):
    from pluginkit import make_marketplace

    market = make_marketplace(tmp_path / "market")
    with ScriptedAPI().serve() as url:
        s = screen(url, env={"HOME": str(tmp_path / "home")})
        s.term.send(f"/plugin marketplace add {market}\r")
        s.wait_text("Added marketplace team")
        s.term.send("/plugin install greet@team\r")
        s.wait_text("This applies when codeloop next starts")
    assert (tmp_path / ".cfg" / "plugins" / "cache" / "team" / "greet" / "commands" / "hello.md").is_file()
    assert json.loads((tmp_path / ".cfg" / "settings.json").read_text())["enabledPlugins"] == {"greet@team": True}
