"""Configuration planted in subfolders by a sandboxed command is undone and reported (issue 25 #5).

Real bubblewrap, real git. Each attack plants something that would run a program outside the
sandbox later (a nested repository's fsmonitor, a hook, a gitlink, a `.git` file, nested
`.claude/` / `.mcp.json`); the test then runs the host-side trigger (`git status`) and checks a
marker file was never made. Legitimate nested repositories (`git init`, `commit`, `worktree
add`) keep working.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codeloop.sandbox import leftovers
from tests.sandbox.sandbox_helpers import make_sandbox, needs_bwrap, run_bash

pytestmark = needs_bwrap
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
ID = "-c user.name=t -c user.email=t@t"


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True)


@pytest.fixture
def project(tmp_path, outside):
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "a")
    return root


def one(root: Path, command: str):
    [res] = run_bash(make_sandbox(root), root, command)
    assert not isinstance(res, Exception), res
    return res


def test_nested_fsmonitor_is_taken_out_and_reported(project, outside):
    marker = outside / "PWNED"
    res = one(project, f"git init -q sub && git -C sub config core.fsmonitor 'touch {marker}'")
    assert "undid configuration" in res.content and "core.fsmonitor" in res.content
    assert "fsmonitor" not in (project / "sub/.git/config").read_text()
    assert git(project / "sub", "status").returncode == 0          # the new repository still works
    assert not marker.exists()


def test_changed_nested_config_gets_its_old_bytes_back(project, outside):
    git(project, "init", "-q", "sub")
    before = (project / "sub/.git/config").read_bytes()
    marker = outside / "PWNED"
    res = one(project, f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> sub/.git/config")
    assert "restored" in res.content
    assert (project / "sub/.git/config").read_bytes() == before
    git(project / "sub", "status")
    assert not marker.exists()


def test_legitimate_nested_repository_work_is_left_alone(project):
    res = one(project, f"git init -q sub && git -C sub {ID} commit -q --allow-empty -m x && "
                       f"git -C sub remote add origin https://example.invalid/r.git && "
                       f"git {ID} worktree add -q ../wt 2>/dev/null; git {ID} worktree add -q wt2 && echo ok")
    assert "undid" not in res.content and "ok" in res.content
    assert "origin" in (project / "sub/.git/config").read_text()
    assert (project / "wt2/.git").is_file()                        # a worktree's .git file stays
    assert git(project / "wt2", "status").returncode == 0


def test_dot_git_file_hook_and_bare_repository_are_undone(project, outside):
    git(project, "init", "-q", "sub")
    marker = outside / "PWNED"
    evil = outside / "evil"
    git(outside, "init", "-q", "--bare", str(evil))
    res = one(project, f"mkdir s2 && echo 'gitdir: {evil}' > s2/.git && "
                       f"printf '#!/bin/sh\\ntouch {marker}\\n' > sub/.git/hooks/post-checkout && "
                       f"chmod +x sub/.git/hooks/post-checkout && echo x > sub/.git/hooks/pre-commit.sample && "
                       f"git init -q --bare b && git -C b config core.pager 'touch {marker}'")
    assert not (project / "s2/.git").exists()
    assert not (project / "sub/.git/hooks/post-checkout").exists()
    assert (project / "sub/.git/hooks/pre-commit.sample").exists()  # samples never run
    assert "pager" not in (project / "b/config").read_text()
    for what in ("s2/.git", "post-checkout", "b/config"):
        assert what in res.content


def test_dot_git_file_into_an_unwatched_corner_of_a_git_folder_is_removed(project, outside):
    """A `.git` file may point at a worktree's or submodule's git folder (watched), not at any
    folder that merely lies inside one (`.git/x`, whose config nobody checked)."""
    marker = outside / "PWNED"
    res = one(project, f"git init -q --bare .git/x && git --git-dir=.git/x config core.fsmonitor 'touch {marker}' && "
                       "mkdir s && echo 'gitdir: ../.git/x' > s/.git")
    assert not (project / "s/.git").exists() and "s/.git" in res.content
    git(project / "s", "status")
    assert not marker.exists()


def test_gitlink_added_to_the_index_is_undone(project, outside):
    marker = outside / "PWNED"
    res = one(project, f"git init -q m && git -C m {ID} commit -q --allow-empty -m x && "
                       f"git -C m config core.fsmonitor 'touch {marker}'; git add m 2>/dev/null; git ls-files -s m")
    assert "160000" in res.content and "gitlink m" in res.content
    assert "160000" not in git(project, "ls-files", "-s").stdout
    git(project, "status")
    assert not marker.exists()


def test_nested_claude_codeloop_and_mcp_files_are_undone(project):
    (project / "keep/.claude").mkdir(parents=True)
    (project / "keep/.claude/settings.json").write_text('{"permissions": {"deny": ["Bash"]}}')
    (project / "gone/.codeloop").mkdir(parents=True)
    (project / "gone/.codeloop/settings.json").write_text('{"a": 1}')
    res = one(project, "mkdir -p sub/.claude deep/er && echo '{\"hooks\": {}}' > sub/.claude/settings.json && "
                       "echo '{\"mcpServers\": {}}' > deep/er/.mcp.json && mkdir x && ln -s /etc x/.codeloop && "
                       "echo '{}' > keep/.claude/settings.json && rm -rf gone/.codeloop")
    assert not (project / "sub/.claude").exists() and not (project / "deep/er/.mcp.json").exists()
    assert not os.path.lexists(project / "x/.codeloop")
    assert "deny" in (project / "keep/.claude/settings.json").read_text()
    assert (project / "gone/.codeloop/settings.json").read_text() == '{"a": 1}'
    assert res.content.count("\n- ") >= 4


def test_no_placeholder_stays_behind_and_dead_processes_leftovers_are_swept(project, tmp_path):
    res = one(project, "touch f; ls -a")
    assert ".mcp.json" in res.content and "undid" not in res.content    # placeholders are no planting
    assert sorted(os.listdir(project)) == [".git", "a.txt", "f"]
    # a process that died mid-call left its placeholders and its journal behind
    (project / ".claude").mkdir()
    (project / ".mcp.json").write_text("")
    folder = leftovers._folder()
    assert folder is not None
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    Path(folder, f"{dead}.txt").write_text(f"{project / '.claude'}\n{project / '.mcp.json'}\n")
    leftovers._state["swept"] = False
    one(project, "true")
    assert sorted(os.listdir(project)) == [".git", "a.txt", "f"]
    assert not Path(folder, f"{dead}.txt").exists()
