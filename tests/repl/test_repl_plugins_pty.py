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
