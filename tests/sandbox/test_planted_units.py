"""The planted-configuration scan's parsers, on files real git wrote (no sandbox needed)."""

from __future__ import annotations

import os
import struct
import subprocess

import pytest

from codeloop.sandbox.gitconf import config_entries, index_gitlinks, render_config, safe_key

ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, env=ENV,
                          check=True, capture_output=True, text=True)


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_gitlinks_are_read_from_every_index_version(tmp_path, version):
    git(tmp_path, "init", "-q")
    for name in ("a.txt", "dir/b.txt", "dir/c.txt", "zz.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    git(tmp_path, "add", ".")
    sha = "1" * 40
    git(tmp_path, "update-index", "--add", "--cacheinfo", f"160000,{sha},dir/sub")
    git(tmp_path, "update-index", "--add", "--cacheinfo", f"160000,{sha},dir/sub2")
    git(tmp_path, "update-index", "--index-version", version)
    if version == "3":                                   # an extended-flags entry (skip-worktree)
        git(tmp_path, "update-index", "--skip-worktree", "zz.txt")
    data = (tmp_path / ".git" / "index").read_bytes()
    assert index_gitlinks(data) == {b"dir/sub", b"dir/sub2"}
    assert index_gitlinks(data[:-40] + b"\0" * 40) == {b"dir/sub", b"dir/sub2"}   # checksum unread
    torn = data[:data.index(struct.pack(">I", 0o160000)) + 10]
    assert index_gitlinks(torn) == {b"(unreadable index)"}                          # torn: fail closed
    assert index_gitlinks(None) == {b"(unreadable index)"}


def test_config_allow_list_and_round_trip():
    entries = config_entries(b'[core]\n\tfsmonitor = touch x\n\tbare = false\n'
                             b'[remote "Up\\"s"]\n\turl = a\\\\b\n[filter "lfs"]\n\tclean = git-lfs clean\n'
                             b'[alias]\n\tst = !sh\n[include]\n\tpath = ../x\n')
    assert entries is not None
    assert [k for k, _ in entries if safe_key(k)] == ["core.bare", 'remote.Up"s.url']
    assert config_entries(render_config(entries)) == entries
    assert config_entries(b"[core\n") is None                                     # unreadable: unsafe


def test_a_placeholder_is_left_alone_while_empty_and_undone_once_filled(tmp_path):
    """bwrap's mount points for missing protected paths are not planting; but if another process
    removed one mid-call (detaching the read-only mount) whatever the command wrote there goes."""
    from codeloop.sandbox.planted import revert, take

    root = str(tmp_path)
    holders = frozenset({f"{root}/.mcp.json", f"{root}/.claude"})
    before = take([root])
    (tmp_path / ".mcp.json").write_text("")
    (tmp_path / ".claude").mkdir()
    assert revert(before, take([root], before), holders) == []
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')
    (tmp_path / ".claude" / "settings.json").write_text("{}")
    lines = revert(before, take([root], before), holders)
    assert len(lines) == 2 and not (tmp_path / ".mcp.json").exists() and not (tmp_path / ".claude").exists()


def test_configuration_inside_a_bare_looking_folder_is_still_undone(tmp_path):
    from codeloop.sandbox.planted import revert, take

    root = str(tmp_path)
    for d in ("b/objects", "b/refs"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "b/HEAD").write_text("ref: refs/heads/main\n")
    before = take([root])
    (tmp_path / "b/.claude").mkdir()
    (tmp_path / "b/.claude/settings.json").write_text("{}")
    (tmp_path / "b/s").mkdir()
    (tmp_path / "b/s/.git").write_text("gitdir: /elsewhere\n")
    lines = revert(before, take([root], before))
    assert len(lines) == 2 and not (tmp_path / "b/.claude").exists() and not (tmp_path / "b/s/.git").exists()
