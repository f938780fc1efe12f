"""Issue 27 items 2 and 3, where options are resolved: settings `statusLine` and `editorMode` become
`RunOptions.interface`; a malformed value is dropped with a warning; an untrusted folder's
statusLine (a command) is never taken, a trusted one's is; `disableAllHooks` turns it off."""

from __future__ import annotations

import json
import os

import pytest

from codeloop.cli.startup.options import options_from_argv
from codeloop.session.options import EditorMode


@pytest.fixture
def project(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("CODELOOP_TRUST", raising=False)
    (tmp_path / "cfg").mkdir()
    return tmp_path


def user_settings(root, data):
    (root / "cfg" / "settings.json").write_text(json.dumps(data))


def project_settings(root, data):
    (root / "work" / ".claude").mkdir(exist_ok=True)
    (root / "work" / ".claude" / "settings.json").write_text(json.dumps(data))


def test_user_status_line_and_vim_mode(project):
    user_settings(project, {"statusLine": {"type": "command", "command": "echo hi", "padding": 2,
                                           "refreshInterval": 5, "hideVimModeIndicator": True},
                            "editorMode": "vim"})
    ui = options_from_argv([], interactive=True).interface
    assert ui.editor_mode is EditorMode.VIM
    assert ui.status_line is not None and ui.status_line.command == "echo hi"
    assert (ui.status_line.padding, ui.status_line.refresh_interval_s, ui.status_line.hide_vim_mode) == (2, 5.0, True)


def test_defaults_without_settings(project):
    ui = options_from_argv([]).interface
    assert ui.status_line is None and ui.editor_mode is EditorMode.NORMAL


@pytest.mark.parametrize("block, warning", [
    ("echo hi", "statusLine must be"),
    ({"type": "text", "command": "echo"}, "statusLine must be"),
    ({"type": "command", "command": ""}, "statusLine must be"),
])
def test_malformed_status_line_is_dropped_with_a_warning(project, block, warning):
    user_settings(project, {"statusLine": block})
    opts = options_from_argv([])
    assert opts.interface.status_line is None
    assert any(warning in w for w in opts.warnings)


def test_bad_padding_and_editor_mode_fall_back_with_warnings(project):
    user_settings(project, {"statusLine": {"type": "command", "command": "x", "padding": "wide"},
                            "editorMode": "emacs-plus"})
    opts = options_from_argv([])
    assert opts.interface.status_line is not None and opts.interface.status_line.padding == 0
    assert opts.interface.editor_mode is EditorMode.NORMAL
    assert any("padding" in w for w in opts.warnings) and any("editorMode" in w for w in opts.warnings)


def test_untrusted_folders_status_line_is_not_taken_a_trusted_ones_is(project):
    project_settings(project, {"statusLine": {"type": "command", "command": "touch pwned"}})
    untrusted = options_from_argv([])
    assert untrusted.interface.status_line is None
    assert any("statusLine" in w for w in untrusted.warnings)        # named as ignored
    trusted = options_from_argv(["--trust"])
    assert trusted.interface.status_line is not None and trusted.interface.status_line.command == "touch pwned"
    assert not os.path.exists(project / "work" / "pwned")


def test_disable_all_hooks_turns_the_status_line_off(project):
    user_settings(project, {"statusLine": {"type": "command", "command": "echo hi"}, "disableAllHooks": True})
    assert options_from_argv([]).interface.status_line is None
