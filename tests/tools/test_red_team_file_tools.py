"""Red team (issue 12, item 4): the file tools against aliases of denied and protected files.

Each call goes the way the loop sends it: the real policy decides first (bypassPermissions, so
only deny rules and protected paths stand in the way), then the tool runs on real files in
tmp_path with the policy's I/O-time guards. A denied file's content must never come back, and a
protected file must stay byte-identical. Gaps are kept as `xfail(strict=True)`.
"""

from __future__ import annotations

import os

import pytest

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input

SECRET = "KEY=topsecret-red"
RULES = [("deny", "Read(./secret.txt)", "cli")]


def gap(reason: str):
    return pytest.mark.xfail(strict=True, reason=f"red team: {reason}")


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / ".cfg"))
    (tmp_path / "home").mkdir()
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    (tmp_path / "README.txt").write_text("readme\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    os.symlink(".", tmp_path / "loop")                        # a directory symlink back to the root
    os.symlink(tmp_path / "secret.txt", tmp_path / "alias.txt")
    os.link(tmp_path / "secret.txt", tmp_path / "hardlink.txt")
    os.symlink(tmp_path / ".git", tmp_path / "gitlink")
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def run(project, name, raw, **tool_kw):
    """Decide like the loop, then (if allowed) call the tool; returns the text the model sees."""
    policy = PermissionPolicy(mode=PermissionMode.BYPASS, cwd=project, settings_rules=list(RULES))
    tool = find_tool(builtin_tools(), name)
    if tool_kw:
        tool = type(tool)(**tool_kw)
    inp = parse_tool_input(tool, raw)
    ctx = ToolContext(cwd=project, project_dir=project, path_guard=policy.guard_path,
                      read_denied=policy.read_filter(), denied_inodes=policy.denied_inodes)
    opinion = await tool.check_permissions(inp, ctx)
    d = policy.decide(tool, inp, opinion, raw)
    if d.behavior is not PermissionBehavior.ALLOW:
        return f"REFUSED: {d.message}"
    try:
        return (await tool.call(inp, ctx)).content
    except ToolError as e:
        return f"ERROR: {e}"


READ_ALIASES = ["secret.txt", "./secret.txt", "sub/../secret.txt", "loop/secret.txt", "loop/loop/secret.txt",
                "alias.txt", "hardlink.txt", "/proc/self/cwd/secret.txt", "secret.txt/.", ".//secret.txt"]


@pytest.mark.parametrize("rel", READ_ALIASES)
async def test_read_never_returns_the_denied_file(project, rel):
    path = rel if rel.startswith("/") else str(project / rel)
    out = await run(project, "Read", {"file_path": path})
    assert SECRET not in str(out)


@pytest.mark.parametrize("rg", [pytest.param(False, id="python"), pytest.param(True, id="rg")])
@pytest.mark.parametrize("raw", [
    {"pattern": "topsecret", "output_mode": "content"},
    {"pattern": "topsecret", "output_mode": "content", "path": "loop"},
    {"pattern": "topsecret", "output_mode": "content", "path": "/proc/self/cwd"},
    {"pattern": "topsecret", "output_mode": "content", "glob": "*secret*"},
    {"pattern": "topsecret", "output_mode": "content", "path": "alias.txt"},
    {"pattern": "topsecret", "output_mode": "content", "path": "sub/../secret.txt"},
    {"pattern": "KEY=(.*)", "output_mode": "files_with_matches"},
    {"pattern": "topsecret", "output_mode": "count"},
], ids=["root", "dir-symlink", "proc-cwd", "glob", "file-symlink", "dotdot", "files", "count"])
async def test_grep_never_shows_the_denied_file(project, raw, rg):
    from codeloop.tools.builtin.grep import GrepTool

    policy = PermissionPolicy(mode=PermissionMode.BYPASS, cwd=project, settings_rules=list(RULES))
    tool = GrepTool(use_ripgrep=rg)
    inp = parse_tool_input(tool, raw)
    ctx = ToolContext(cwd=project, project_dir=project, path_guard=policy.guard_path,
                      read_denied=policy.read_filter(), denied_inodes=policy.denied_inodes)
    d = policy.decide(tool, inp, await tool.check_permissions(inp, ctx), raw)
    if d.behavior is PermissionBehavior.ALLOW:
        try:
            out = (await tool.call(inp, ctx)).content
        except ToolError as e:
            out = str(e)
        assert SECRET not in out and "topsecret" not in out
        if raw["output_mode"] != "content":
            # names alone leak which file matched a secret pattern: the denied file is not listed
            assert "secret.txt" not in out and "hardlink.txt" not in out and "alias.txt" not in out


@pytest.mark.parametrize("rel", [".git/config", "gitlink/config", "loop/.git/config", "gitlink/hooks/pre-commit",
                                 "loop/gitlink/hooks/post-checkout", "/proc/self/cwd/.git/config"])
@pytest.mark.parametrize("name", ["Write", "Edit"])
async def test_write_and_edit_never_change_git_config_through_aliases(project, rel, name):
    path = rel if rel.startswith("/") else str(project / rel)
    before = (project / ".git" / "config").read_bytes()
    await run(project, "Read", {"file_path": path})          # Edit needs a prior Read
    raw = ({"file_path": path, "content": "[core]\n\tfsmonitor = touch pwned\n"} if name == "Write"
           else {"file_path": path, "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch pwned"})
    await run(project, name, raw)
    assert (project / ".git" / "config").read_bytes() == before
    assert sorted(os.listdir(project / ".git" / "hooks")) == []


async def test_glob_does_not_list_the_denied_file_through_aliases(project):
    out = await run(project, "Glob", {"pattern": "**/*secret*"})
    assert "secret.txt" not in str(out).replace("REFUSED", "")
    out = await run(project, "Glob", {"pattern": "*", "path": str(project / "loop")})
    assert "secret.txt" not in str(out)
