"""EnterWorktree / ExitWorktree with WorktreeCreate / WorktreeRemove hooks (issue 26, items 5 and
6): a WorktreeCreate hook replaces git (for other version control) and the session moves to the
folder it printed; ExitWorktree's removal of such a worktree is the WorktreeRemove hook's; a
git-made worktree's removal is told to WorktreeRemove hooks too."""

from __future__ import annotations

import json
import subprocess

from fakeapi import ScriptedAPI, sse, text, tool_use
from hookrec import calls, conv_for, recorder, submit

LOAD = sse(tool_use("ToolSearch", {"query": "select:EnterWorktree,ExitWorktree"}, id="s"))


def results(api: ScriptedAPI) -> dict[str, dict]:
    return {b["tool_use_id"]: b for r in api.requests for m in r.messages if m["role"] == "user"
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}


def repo(tmp_path):
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q",
                    "--allow-empty", "-m", "init"], check=True)


async def test_a_worktree_create_hook_replaces_git_and_its_remove_hook_removes_it(tmp_path):
    repo(tmp_path)
    made = tmp_path / "elsewhere-checkout"
    create = tmp_path / "create.sh"
    create.write_text(f"#!/bin/sh\ncat > '{tmp_path}/create.json'\nmkdir -p '{made}'\necho '{made}'\n")
    create.chmod(0o755)
    hooks = {"WorktreeCreate": [{"hooks": [{"type": "command", "command": str(create)}]}],
             "WorktreeRemove": [recorder(tmp_path, "removed")]}
    api = ScriptedAPI(LOAD, sse(tool_use("EnterWorktree", {"name": "feature"}, id="e")),
                      sse(tool_use("Bash", {"command": "pwd"}, id="p")),
                      sse(tool_use("ExitWorktree", {"action": "remove"}, id="x")), sse(text("done")))
    conv = conv_for(api, tmp_path, hooks)
    await submit(conv)
    got = results(api)
    assert not got["e"].get("is_error") and str(made) in json.dumps(got["p"])
    assert json.loads((tmp_path / "create.json").read_text())["name"] == "feature"
    assert not (tmp_path / ".claude" / "worktrees" / "feature").exists()      # git made nothing
    [removed] = calls(tmp_path, "removed")
    assert removed["worktree_path"] == str(made) and not got["x"].get("is_error")


async def test_a_failing_worktree_create_hook_makes_nothing(tmp_path):
    repo(tmp_path)
    hooks = {"WorktreeCreate": [recorder(tmp_path, "create", code=2)]}
    api = ScriptedAPI(LOAD, sse(tool_use("EnterWorktree", {"name": "feature"}, id="e")), sse(text("done")))
    conv = conv_for(api, tmp_path, hooks)
    await submit(conv)
    got = results(api)
    assert got["e"].get("is_error") and "WorktreeCreate hook failed" in json.dumps(got["e"])
    assert not (tmp_path / ".claude" / "worktrees").exists()


async def test_removing_a_git_worktree_tells_the_remove_hooks(tmp_path):
    repo(tmp_path)
    hooks = {"WorktreeRemove": [recorder(tmp_path, "removed")]}
    api = ScriptedAPI(LOAD, sse(tool_use("EnterWorktree", {"name": "feature"}, id="e")),
                      sse(tool_use("ExitWorktree", {"action": "remove"}, id="x")), sse(text("done")))
    conv = conv_for(api, tmp_path, hooks)
    await submit(conv)
    path = tmp_path / ".claude" / "worktrees" / "feature"
    assert not path.exists() and [c["worktree_path"] for c in calls(tmp_path, "removed")] == [str(path)]
