"""Issue 25 item 10, where options are resolved: the interactive session's default sandbox, what
turns it off (--no-sandbox, `sandbox.enabled: false`, a bwrap that cannot start, the working
directory '/'), and what never does (--no-sandbox against settings that enable it)."""

from __future__ import annotations

import json

import pytest

from codeloop.cli.startup.options import options_from_argv
from codeloop.sandbox import bwrap
from codeloop.session.options import SetupError


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / ".cfg"))
    monkeypatch.delenv("CODELOOP_BWRAP", raising=False)
    return tmp_path


def working_bwrap() -> bool:
    return bwrap.probe().error is None


def test_interactive_defaults_to_the_sandbox_print_mode_does_not(project):
    if not working_bwrap():
        pytest.skip("bubblewrap cannot run here")
    repl = options_from_argv([], interactive=True)
    assert repl.permissions.sandbox_default and not repl.warnings
    assert not options_from_argv(["-p", "x"]).permissions.sandbox_default


@pytest.mark.parametrize("how", ["flag", "settings"])
def test_no_sandbox_or_enabled_false_turns_the_default_off(project, how):
    argv = ["--no-sandbox"] if how == "flag" else ["--settings", json.dumps({"sandbox": {"enabled": False}})]
    opts = options_from_argv(argv, interactive=True)
    assert not opts.permissions.sandbox_default and not any("sandbox" in w for w in opts.warnings)


def test_no_sandbox_does_not_lift_a_sandbox_the_settings_enable(project):
    opts = options_from_argv(["--no-sandbox", "--settings", json.dumps({"sandbox": {"enabled": True}})],
                             interactive=True)
    assert any("--no-sandbox ignored" in w for w in opts.warnings)
    with pytest.raises(SetupError, match="contradict"):
        options_from_argv(["--sandbox", "--no-sandbox"], interactive=True)


def test_a_bwrap_that_cannot_start_is_one_line_and_no_default(project, monkeypatch):
    monkeypatch.setenv("CODELOOP_BWRAP", str(project / "no-such-bwrap"))
    opts = options_from_argv([], interactive=True)
    lines = [w for w in opts.warnings if "sandbox off" in w]
    assert not opts.permissions.sandbox_default and len(lines) == 1 and "\n" not in lines[0]
    assert "bubblewrap (bwrap) is not installed" in lines[0]
