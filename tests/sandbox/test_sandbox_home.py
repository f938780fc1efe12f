"""With the project at or above the home folder, the sandbox keeps home's start-up configuration
read-only: shell rc files, ssh, git, fish, Claude Code's and codeloop's (issue 25 #5)."""

from __future__ import annotations

import os

import pytest

from codeloop.config.sandbox import sandbox_settings
from codeloop.sandbox.runtime import Sandbox
from tests.sandbox.sandbox_helpers import needs_bwrap, run_bash

pytestmark = needs_bwrap
TARGETS = (".bash_aliases", ".bashrc", ".profile", ".zshrc", ".ssh/config", ".gitconfig", ".config/git/config",
           ".config/fish/config.fish", ".claude.json", ".claude/settings.json", ".codeloop/settings.json",
           ".local/bin/git")


@pytest.mark.parametrize("where", ["project", "child"])
def test_home_start_up_files_cannot_be_planted(tmp_path, where):
    root = tmp_path / "project"
    root.mkdir()
    home = root if where == "project" else root / "me"
    home.mkdir(exist_ok=True)
    (home / ".ssh").mkdir()
    (home / ".bashrc").write_text("# mine\n")
    sandbox = Sandbox(sandbox_settings({"sandbox": {"enabled": True}}), [str(root)], home=str(home))
    before = sorted(os.listdir(home))
    script = " ; ".join(f"mkdir -p {(home / t).parent} 2>/dev/null; echo 'touch /var/tmp/x' >> {home / t}"
                        for t in TARGETS) + f"; echo ok > {root / 'work.txt'}"
    [res] = run_bash(sandbox, root, script)
    assert (root / "work.txt").read_text() == "ok\n"                 # the project itself stays writable
    assert "undid" not in res.content                                  # nothing landed to undo
    assert (home / ".bashrc").read_text() == "# mine\n"
    for t in TARGETS:
        assert t == ".bashrc" or not (home / t).exists(), t
    after = sorted(n for n in os.listdir(home) if n != "work.txt")
    assert after == before                                             # no placeholder left behind


def test_git_works_with_home_in_the_project_and_no_gitconfig(tmp_path, monkeypatch):
    """The read-only stand-in for a missing ~/.gitconfig is an empty readable file: git reads an
    empty config where an unreadable one (a device node under a nodev mount) stops it cold."""
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(root))
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    sandbox = Sandbox(sandbox_settings({"sandbox": {"enabled": True}}), [str(root)], home=str(root))
    [res] = run_bash(sandbox, root, "cd sub && git init -q . && git status --short && echo GIT-OK; "
                                    "cat ~/.gitconfig; echo rc=$?; echo x > ~/.gitconfig || echo REFUSED")
    assert "GIT-OK" in res.content and "rc=0" in res.content and "REFUSED" in res.content, res.content
    assert not (root / ".gitconfig").exists()
