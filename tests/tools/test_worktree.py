"""EnterWorktree / ExitWorktree on a real git repository, through the real loop with the fake model."""

from __future__ import annotations

import os
import subprocess

import pytest
from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, run

from codeloop.tools.base import ToolContext
from codeloop.tools.registry import builtin_tools, find_tool


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
    return r


def results(api, i):
    out = []
    for b in api.requests[i].messages[-1]["content"]:
        if b.get("type") == "tool_result":
            c = b["content"]
            out.append((b.get("is_error", False), c if isinstance(c, str) else "".join(x.get("text", "") for x in c)))
    return out


def test_schemas_match_claude_code():
    tools = builtin_tools()
    enter = find_tool(tools, "EnterWorktree").input_schema()
    assert set(enter["properties"]) == {"name", "path"} and "required" not in enter
    leave = find_tool(tools, "ExitWorktree").input_schema()
    assert set(leave["properties"]) == {"action", "discard_changes"} and leave["required"] == ["action"]
    assert leave["properties"]["action"]["enum"] == ["keep", "remove"]


async def test_enter_moves_every_tool_then_keep_returns(repo):
    ctx = ToolContext(cwd=repo, project_dir=repo)
    api = ScriptedAPI(
        sse(tool_use("EnterWorktree", {"name": "feature/x"}, id="e1"), stop="tool_use"),
        sse(tool_use("Bash", {"command": "pwd && echo hi > made.txt"}, id="b1"), stop="tool_use"),
        sse(tool_use("Read", {"file_path": "made.txt"}, id="r1"),
            tool_use("EnterWorktree", {"name": "again"}, id="e2"), stop="tool_use"),
        sse(tool_use("ExitWorktree", {"action": "keep"}, id="x1"), stop="tool_use"),
        sse(tool_use("Bash", {"command": "pwd"}, id="b2"), stop="tool_use"),
        sse(text("done")))
    await run(make_params(api, repo, tool_context=ctx))
    wt = repo / ".claude" / "worktrees" / "feature" / "x"
    [(err, entered)] = results(api, 1)
    assert not err and entered.startswith(f"Created worktree at {wt} on branch worktree-feature-x.")
    [(_, pwd)] = results(api, 2)
    assert pwd.splitlines()[0] == str(wt)                       # Bash runs in the worktree
    (_, read), (err2, twice) = results(api, 3)
    assert "hi" in read                                          # and relative paths resolve there
    assert err2 and "Already in a worktree session" in twice
    [(_, kept)] = results(api, 4)
    assert kept == f"Exited worktree. Your work is preserved at {wt} on branch worktree-feature-x. " \
                   f"Session is now back in {repo}."
    [(_, back)] = results(api, 5)
    assert back.splitlines()[0] == str(repo)
    assert (wt / "made.txt").is_file() and "worktree-feature-x" in git(repo, "branch")


async def test_remove_refuses_unsaved_work_until_told(repo):
    ctx = ToolContext(cwd=repo, project_dir=repo)
    api = ScriptedAPI(
        sse(tool_use("EnterWorktree", {"name": "w"}, id="e1"), stop="tool_use"),
        sse(tool_use("Write", {"file_path": str(repo / ".claude/worktrees/w/new.txt"), "content": "x"}, id="w1"),
            stop="tool_use"),
        sse(tool_use("ExitWorktree", {"action": "remove"}, id="x1"), stop="tool_use"),
        sse(tool_use("ExitWorktree", {"action": "remove", "discard_changes": True}, id="x2"), stop="tool_use"),
        sse(tool_use("ExitWorktree", {"action": "keep"}, id="x3"), stop="tool_use"),
        sse(text("done")))
    await run(make_params(api, repo, tool_context=ctx))
    wt = repo / ".claude" / "worktrees" / "w"
    [(err, refused)] = results(api, 3)
    assert err and "1 uncommitted file(s) and 0 commit(s)" in refused
    [(err2, removed)] = results(api, 4)
    assert not err2 and removed.startswith(f"Exited and removed worktree at {wt} and branch worktree-w.")
    assert not wt.exists() and "worktree-w" not in git(repo, "branch") and ctx.cwd == repo
    [(_, noop)] = results(api, 5)
    assert noop.startswith("No-op: there is no active EnterWorktree session")


async def test_hostile_layouts_are_refused(repo, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (repo / ".claude").mkdir()
    os.symlink(outside, repo / ".claude" / "worktrees")         # a planted link out of the project
    ctx = ToolContext(cwd=repo, project_dir=repo)
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))   # a worktree outside the project
    api = ScriptedAPI(
        sse(tool_use("EnterWorktree", {"name": "x"}, id="e1"),
            tool_use("EnterWorktree", {"name": "../../escape"}, id="e2"),
            tool_use("EnterWorktree", {"path": str(tmp_path / "side")}, id="e3"),
            tool_use("EnterWorktree", {"path": str(outside)}, id="e4"), stop="tool_use"),
        sse(text("ok")))
    await run(make_params(api, repo, tool_context=ctx))
    (e1, link), (e2, dots), (e3, side), (e4, other) = results(api, 1)
    assert e1 and "is a symbolic link" in link
    assert e2 and "Invalid worktree name" in dots
    # bypass mode in the test policy: the path call is allowed to run, and the tool itself refuses
    assert e3 and "lies outside the folder this session started in" in side
    assert e4 and "is not a worktree of this repository" in other
    assert list(outside.iterdir()) == [] and ctx.cwd == repo and ctx.worktree is None


async def test_outside_a_repository(tmp_path):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    api = ScriptedAPI(sse(tool_use("EnterWorktree", {}, id="e1"), stop="tool_use"), sse(text("ok")))
    await run(make_params(api, tmp_path, tool_context=ctx))
    [(err, msg)] = results(api, 1)
    assert err and "needs a git repository" in msg


async def test_edits_inside_the_worktree_still_ask_outside_bypass(repo):
    """Known limit, kept fail-closed: the rules stay rooted at the session's folder, whose `.claude/`
    is an ask path, so acceptEdits does not wave through writes in a worktree EnterWorktree made."""
    from codeloop.permissions.policy import PermissionMode, PermissionPolicy
    from codeloop.tools.base import PermissionBehavior
    from codeloop.tools.registry import parse_tool_input

    policy = PermissionPolicy(mode=PermissionMode.ACCEPT_EDITS, cwd=repo)
    write = find_tool(builtin_tools(), "Write")
    raw = {"file_path": str(repo / ".claude" / "worktrees" / "w" / "a.txt"), "content": "x"}
    inp = parse_tool_input(write, raw)
    ctx = ToolContext(cwd=repo, project_dir=repo)
    decision = policy.decide(write, inp, await write.check_permissions(inp, ctx), raw)
    assert decision.behavior is PermissionBehavior.ASK
