"""Claude Code's guarded folders (`.git`, `.claude`, `.vscode`, `.idea`, `.husky`): never approved
without the user in any mode — bypassPermissions included — but for `.claude/commands`,
`.claude/agents` and `.claude/skills` in bypass mode; and the Bash call that asks to leave the
sandbox (`dangerouslyDisableSandbox`)."""

import asyncio
import os

import pytest

from codeloop.config.sandbox import sandbox_settings
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.sandbox.runtime import Sandbox
from codeloop.tools.base import PermissionBehavior, ToolContext
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input

ALLOW, ASK, DENY = PermissionBehavior.ALLOW, PermissionBehavior.ASK, PermissionBehavior.DENY


def decision(policy, name, raw):
    tool = find_tool(builtin_tools(), name)
    inp = parse_tool_input(tool, raw)
    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=policy.cwd, project_dir=policy.cwd)))
    return policy.decide(tool, inp, opinion, raw)


@pytest.mark.parametrize("rel", [".vscode/settings.json", ".idea/workspace.xml", ".husky/pre-commit",
                                 ".claude/rules/x.md", "sub/.vscode/tasks.json"])
def test_bypass_asks_for_writes_into_guarded_folders(tmp_path, rel):
    policy = PermissionPolicy(mode=PermissionMode.BYPASS, cwd=tmp_path)
    d = decision(policy, "Write", {"file_path": str(tmp_path / rel), "content": "x"})
    assert d.behavior is ASK and "guarded" in d.message
    # a Bash write of the same path, too
    b = decision(policy, "Bash", {"command": f"mkdir -p {os.path.dirname(rel)} && echo x > {rel}"})
    assert b.behavior is ASK and "guarded" in b.message


def test_bypass_never_writes_into_git(tmp_path):
    # `.git` itself is a protected path (a deny rule: stricter than the guard's question)
    policy = PermissionPolicy(mode=PermissionMode.BYPASS, cwd=tmp_path)
    for raw in ({"file_path": str(tmp_path / ".git/info/exclude"), "content": "x"},
                {"file_path": str(tmp_path / "vendor/.git/info/exclude"), "content": "x"}):
        assert decision(policy, "Write", raw).behavior in (ASK, DENY)
    assert decision(policy, "Bash", {"command": "echo x > .git/info/exclude"}).behavior in (ASK, DENY)


@pytest.mark.parametrize("rel", [".claude/commands/review.md", ".claude/agents/a.md", ".claude/skills/s/SKILL.md"])
def test_bypass_writes_the_exempt_claude_folders(tmp_path, rel):
    policy = PermissionPolicy(mode=PermissionMode.BYPASS, cwd=tmp_path)
    assert decision(policy, "Write", {"file_path": str(tmp_path / rel), "content": "x"}).behavior is ALLOW
    assert decision(policy, "Bash", {"command": f"echo x > {rel}"}).behavior is ALLOW
    # not the exempt folder's own name replaced by a file, and never the settings (a deny rule)
    assert decision(policy, "Write", {"file_path": str(tmp_path / ".claude/commands"), "content": "x"}).behavior is ASK
    assert decision(policy, "Write", {"file_path": str(tmp_path / ".claude/settings.json"),
                                      "content": "{}"}).behavior is DENY


def test_a_symlink_into_a_guarded_folder_is_the_guarded_folder(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".claude").mkdir()
    os.symlink(tmp_path / ".git" / "info", tmp_path / ".claude" / "commands")
    os.symlink(tmp_path / ".husky", tmp_path / "hooks-link")
    policy = PermissionPolicy(mode=PermissionMode.BYPASS, cwd=tmp_path)
    assert decision(policy, "Write", {"file_path": str(tmp_path / ".claude/commands/x.md"),
                                      "content": "x"}).behavior in (ASK, DENY)   # never the exemption
    assert decision(policy, "Write", {"file_path": str(tmp_path / "hooks-link/pre-commit"),
                                      "content": "x"}).behavior is ASK


def test_no_rule_nor_mode_approves_a_guarded_write_and_dontask_refuses(tmp_path):
    target = str(tmp_path / ".vscode" / "tasks.json")
    accept = PermissionPolicy(mode=PermissionMode.ACCEPT_EDITS, cwd=tmp_path, allow=["Edit(.vscode/**)"])
    assert decision(accept, "Write", {"file_path": target, "content": "{}"}).behavior is ASK
    assert decision(accept, "Bash", {"command": "echo '{}' > .vscode/tasks.json"}).behavior is ASK
    # an ordinary file next to it is still acceptEdits' to allow
    assert decision(accept, "Write", {"file_path": str(tmp_path / "notes.md"), "content": "x"}).behavior is ALLOW
    dont = PermissionPolicy(mode=PermissionMode.DONT_ASK, cwd=tmp_path)
    assert decision(dont, "Write", {"file_path": target, "content": "{}"}).behavior is DENY


def _sandboxed_policy(tmp_path, **block):
    settings = sandbox_settings({"sandbox": {"enabled": True, **block}})
    policy = PermissionPolicy(cwd=tmp_path)
    policy.sandbox = Sandbox(settings, [str(tmp_path)], home=str(tmp_path / "home"))
    return policy


def test_dangerously_disable_sandbox_asks_saying_so_and_an_allow_rule_covers_it(tmp_path):
    from codeloop.sandbox.bwrap import probe
    if probe().error:
        pytest.skip(probe().error)
    policy = _sandboxed_policy(tmp_path)
    assert decision(policy, "Bash", {"command": "echo hi"}).behavior is ALLOW   # sandboxed: auto-allowed
    for command in ("echo hi", "ls", "touch made.txt"):   # read-only or not: it asks
        d = decision(policy, "Bash", {"command": command, "dangerouslyDisableSandbox": True})
        assert d.behavior is ASK and "outside the sandbox" in d.message, command
    # a value the input model coerces to True (what the tool then obeys) is the same request
    d = decision(policy, "Bash", {"command": "touch made.txt", "dangerouslyDisableSandbox": "true"})
    assert d.behavior is ASK and "outside the sandbox" in d.message
    policy.allow_rules(["Bash(echo *)"])
    assert decision(policy, "Bash", {"command": "echo hi", "dangerouslyDisableSandbox": True}).behavior is ALLOW
    # a deny rule still holds, and `false` is the ordinary sandboxed call
    policy.deny.append("Bash(rm *)")
    policy._rules = None
    assert decision(policy, "Bash", {"command": "rm x", "dangerouslyDisableSandbox": True}).behavior is DENY
    assert decision(policy, "Bash", {"command": "echo hi", "dangerouslyDisableSandbox": False}).behavior is ALLOW


def test_dangerously_disable_sandbox_is_refused_when_settings_forbid_it(tmp_path):
    policy = _sandboxed_policy(tmp_path, allowUnsandboxedCommands=False)
    policy.allow_rules(["Bash(echo *)"])
    d = decision(policy, "Bash", {"command": "echo hi", "dangerouslyDisableSandbox": True})
    assert d.behavior is DENY and "allowUnsandboxedCommands" in d.message


def test_without_a_sandbox_the_parameter_changes_nothing(tmp_path):
    policy = PermissionPolicy(cwd=tmp_path)
    d = decision(policy, "Bash", {"command": "touch x", "dangerouslyDisableSandbox": True})
    assert d.behavior is ASK and "outside the sandbox" not in (d.message or "")


@pytest.mark.parametrize("mode", [PermissionMode.ACCEPT_EDITS, PermissionMode.BYPASS])
def test_a_worktree_under_claude_worktrees_is_an_ordinary_checkout(tmp_path, mode):
    wt = tmp_path / ".claude" / "worktrees" / "feature"      # where `-w feature` puts it
    wt.mkdir(parents=True)
    policy = PermissionPolicy(mode=mode, cwd=wt)
    assert decision(policy, "Write", {"file_path": str(wt / "src" / "x.py"), "content": "x"}).behavior is ALLOW
    assert decision(policy, "Write", {"file_path": str(wt / ".vscode" / "tasks.json"),
                                      "content": "{}"}).behavior is ASK       # its own guarded folders stay guarded
    assert decision(policy, "Write", {"file_path": str(tmp_path / ".claude" / "worktrees"),
                                      "content": "x"}).behavior is not ALLOW
