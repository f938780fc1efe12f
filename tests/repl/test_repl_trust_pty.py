"""The REPL's trust question in a subfolder of a trusted folder (issue 25, item 5): the subfolder's
own settings are not covered by the parent's trust, so starting there asks about the subfolder;
"no" runs without its configuration, "yes" trusts the subfolder itself."""

from __future__ import annotations

import json
import os
import stat

from fakeapi import ScriptedAPI, sse, text
from ptyterm import Term


def test_an_untrusted_subfolder_with_its_own_settings_asks_to_be_trusted(tmp_path):
    home, cfg = tmp_path / "home", tmp_path / "cfg"
    home.mkdir()
    cfg.mkdir()
    parent = tmp_path / "work"
    sub = parent / "pkg"
    (sub / ".claude").mkdir(parents=True)
    marker = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    (sub / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}))
    trust_file = cfg / "trusted-folders.json"
    trust_file.write_text(json.dumps({"folders": {os.path.realpath(parent): {"trusted_at": "2025-01-01T00:00:00"}}}))
    env = {"HOME": str(home), "CODELOOP_CONFIG_DIR": str(cfg)}
    api = ScriptedAPI(sse(text("first answer")), sse(text("second answer")))
    with api.serve() as url:
        t = Term(sub, url, env=env)
        try:
            t.expect("Trust this folder\\?")
            assert "Do you trust the files in this folder?" in t.transcript
            assert f"{os.path.realpath(parent)} is trusted, but that trust does not extend" in t.transcript
            assert str(sub / ".claude" / "settings.json") in t.transcript
            t.line("2")                                        # no: go on without its configuration
            t.ready()
            t.line("hello")
            t.expect("first answer")
            t.ready()
            t.line("/exit")
            assert t.wait_exit() == 0
        finally:
            t.close()
        assert not marker.exists()
        assert list(json.loads(trust_file.read_text())["folders"]) == [os.path.realpath(parent)]
        t = Term(sub, url, env=env)                            # asked again: it is still not trusted
        try:
            t.expect("Trust this folder\\?")
            t.line("1")                                        # yes: the subfolder itself is trusted
            t.ready()
            t.line("hello again")
            t.expect("second answer")
            t.ready()
            t.line("/exit")
            assert t.wait_exit() == 0
        finally:
            t.close()
    assert marker.read_text() == "ran\n"
    assert os.path.realpath(sub) in json.loads(trust_file.read_text())["folders"]
