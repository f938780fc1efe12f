"""Folder trust: remembered per path, inherited by subfolders (not from ~ or /, and not by a
subfolder with configuration of its own), robust to corruption."""

from __future__ import annotations

import json
import os

import pytest

from codeloop.config import trust as trustmod
from codeloop.config.trust import (check_trust, is_trusted, needs_trust, trust, trust_file_path, untrust)


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return h


def test_trust_and_untrust_round_trip(tmp_path, home):
    proj = tmp_path / "proj"
    proj.mkdir()
    assert not is_trusted(proj)
    assert trust(proj) is None
    assert is_trusted(proj)
    data = json.loads(trust_file_path().read_text())
    assert list(data["folders"]) == [os.path.realpath(proj)]
    assert "trusted_at" in data["folders"][os.path.realpath(proj)]
    assert untrust(proj) is True
    assert not is_trusted(proj)
    assert untrust(proj) is False


def test_a_trusted_parent_covers_children_but_not_siblings(tmp_path, home):
    parent = tmp_path / "code"
    child = parent / "repo" / "sub"
    sibling = tmp_path / "other"
    child.mkdir(parents=True)
    sibling.mkdir()
    trust(parent)
    status = check_trust(child)
    assert status.trusted and status.via == os.path.realpath(parent)
    assert not is_trusted(sibling)
    # Untrusting the child removes nothing: it was never trusted explicitly, the parent still covers it.
    assert untrust(child) is False and is_trusted(child)


def test_home_and_root_are_not_blanket_trust(tmp_path, home):
    repo = home / "src" / "repo"
    repo.mkdir(parents=True)
    trust(home)
    trust("/")
    assert is_trusted(home)
    assert not is_trusted(repo)
    assert not is_trusted(tmp_path)


def test_trust_follows_symlinks(tmp_path, home):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    trust(link)
    assert is_trusted(real)


def test_corrupt_trust_file_reads_as_empty_with_a_warning_and_is_set_aside_on_write(tmp_path, home):
    proj = tmp_path / "proj"
    proj.mkdir()
    path = trust_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"folders": {')
    status = check_trust(proj)
    assert status.trusted is False and "invalid JSON" in status.warning
    warning = trust(proj)
    assert warning is not None and "corrupt" in warning
    assert (path.parent / (path.name + ".corrupt")).read_text() == '{"folders": {'
    assert is_trusted(proj) and check_trust(proj).warning is None


def test_wrong_shape_trust_file_is_treated_as_empty(tmp_path, home):
    trust_file_path().parent.mkdir(parents=True, exist_ok=True)
    trust_file_path().write_text('["/x"]')
    status = check_trust(tmp_path)
    assert status.trusted is False and status.warning is not None


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path, home):
    for i in range(3):
        d = tmp_path / f"p{i}"
        d.mkdir()
        trust(d)
    leftovers = [p.name for p in trust_file_path().parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    assert len(json.loads(trust_file_path().read_text())["folders"]) == 3


@pytest.mark.parametrize("rel", [".claude/settings.json", ".claude/settings.local.json",
                                 ".codeloop/settings.json", ".codeloop/settings.local.json", ".mcp.json"])
def test_needs_trust_when_the_project_has_unlockable_config(tmp_path, home, rel):
    proj = tmp_path / "proj"
    (proj / rel).parent.mkdir(parents=True, exist_ok=True)
    (proj / rel).write_text("{}")
    assert needs_trust(proj) is True
    trust(proj)
    assert needs_trust(proj) is False


def test_plain_folder_needs_no_trust(tmp_path, home):
    proj = tmp_path / "plain"
    (proj / ".claude").mkdir(parents=True)      # a directory alone unlocks nothing
    (proj / "README.md").write_text("hi")
    assert needs_trust(proj) is False


def test_home_with_only_user_settings_needs_no_trust(home):
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text("{}")
    assert trustmod.project_config_files(home) == []
    assert needs_trust(home) is False


# -- a subfolder's own configuration (issue 25, item 5) ---------------------------------------------

OWN_CONFIG = [".claude/settings.json", ".claude/settings.local.json", ".codeloop/settings.json",
              ".codeloop/settings.local.json", ".mcp.json", ".claude/agents/x.md", ".codeloop/agents/x.md",
              ".claude/skills/x/SKILL.md", ".codeloop/skills/x/SKILL.md"]


@pytest.mark.parametrize("rel", OWN_CONFIG)
def test_a_trusted_parent_does_not_cover_a_subfolders_own_configuration(tmp_path, home, rel):
    parent = tmp_path / "code"
    sub = parent / "repo" / "sub"
    (sub / rel).parent.mkdir(parents=True)
    (sub / rel).write_text("{}")
    trust(parent)
    status = check_trust(sub)
    assert not status.trusted and status.not_inherited == os.path.realpath(parent)
    note = status.note(sub)
    assert note is not None and "\n" not in note and os.path.realpath(parent) in note and "own" in note
    assert needs_trust(sub) is True                       # the REPL asks about the subfolder itself
    trust(sub)
    assert check_trust(sub).trusted and check_trust(sub).via == os.path.realpath(sub)
    assert needs_trust(sub) is False and check_trust(sub).note(sub) is None


def test_a_trusted_folders_own_configuration_and_plain_subfolders_stay_trusted(tmp_path, home):
    parent = tmp_path / "code"
    (parent / ".claude").mkdir(parents=True)
    (parent / ".claude" / "settings.json").write_text("{}")
    plain = parent / "src" / "pkg"
    (plain / ".claude").mkdir(parents=True)
    (plain / ".claude" / "CLAUDE.md").write_text("instructions are prompt text, not configuration")
    (plain / ".claude" / "skills").mkdir()             # an empty skills folder unlocks nothing
    (plain / ".claude" / "agents").mkdir()
    (plain / ".claude" / "agents" / "notes.txt").write_text("not an agent definition")
    trust(parent)
    assert check_trust(parent).trusted and check_trust(parent).via == os.path.realpath(parent)
    status = check_trust(plain)
    assert status.trusted and status.via == os.path.realpath(parent) and needs_trust(plain) is False


def test_claude_codes_trust_of_a_parent_does_not_cover_a_subfolders_configuration(tmp_path, home):
    parent = tmp_path / "code"
    sub = parent / "sub"
    (sub / ".claude").mkdir(parents=True)
    (sub / ".claude" / "settings.json").write_text("{}")
    record = home / ".claude.json"
    record.write_text(json.dumps({"projects": {os.path.realpath(parent): {"hasTrustDialogAccepted": True}}}))
    status = check_trust(sub)
    assert not status.trusted and status.not_inherited == os.path.realpath(parent)
    assert check_trust(parent).trusted                 # the folder the user accepted
    record.write_text(json.dumps({"projects": {os.path.realpath(parent): {"hasTrustDialogAccepted": True},
                                               os.path.realpath(sub): {"hasTrustDialogAccepted": True}}}))
    assert check_trust(sub).trusted


def test_the_environment_switch_still_trusts_everything(tmp_path, home, monkeypatch):
    sub = tmp_path / "code" / "sub"
    (sub / ".claude").mkdir(parents=True)
    (sub / ".claude" / "settings.json").write_text("{}")
    trust(tmp_path / "code")
    monkeypatch.setenv("CODELOOP_TRUST", "1")
    assert check_trust(sub).trusted


def test_in_home_the_users_own_agents_and_skills_are_not_project_configuration(home, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(home / ".codeloop"))
    for rel in (".claude/agents/a.md", ".codeloop/agents/a.md", ".claude/skills/s/SKILL.md"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("x")
    assert trustmod.project_config_files(home) == []
