"""The combined policy: rules + modes + protected paths, and the open-time path guard."""

import os
from pathlib import Path

import pytest

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input


def decide(policy, name, raw):
    import asyncio
    tool = find_tool(builtin_tools(), name)
    inp = parse_tool_input(tool, raw)
    ctx = ToolContext(cwd=policy.cwd, project_dir=policy.cwd)
    opinion = asyncio.run(tool.check_permissions(inp, ctx))
    return policy.decide(tool, inp, opinion, raw).behavior


def test_symlink_swapped_between_check_and_open_is_refused(tmp_path):
    secret = tmp_path / "secrets"
    secret.mkdir()
    (secret / "key").write_text("hunter2")
    (tmp_path / "notes.txt").write_text("harmless")
    policy = PermissionPolicy(cwd=tmp_path, settings_rules=[("deny", "Read(secrets/**)", "cli")])
    assert decide(policy, "Read", {"file_path": str(tmp_path / "notes.txt")}) is PermissionBehavior.ALLOW
    # after the check, notes.txt becomes a symlink into the denied folder
    os.remove(tmp_path / "notes.txt")
    os.symlink(secret / "key", tmp_path / "notes.txt")
    read = find_tool(builtin_tools(), "Read")
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, path_guard=policy.guard_path)
    import asyncio
    with pytest.raises(ToolError, match="deny rule"):
        asyncio.run(read.call(parse_tool_input(read, {"file_path": str(tmp_path / "notes.txt")}), ctx))


def test_not_yet_existing_path_later_made_a_symlink(tmp_path):
    denied = tmp_path / "denied"
    denied.mkdir()
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.ACCEPT_EDITS,
                              settings_rules=[("deny", "Edit(denied/**)", "cli")])
    target = tmp_path / "new.txt"
    assert decide(policy, "Write", {"file_path": str(target), "content": "x"}) is PermissionBehavior.ALLOW
    os.symlink(denied / "planted.txt", target)
    write = find_tool(builtin_tools(), "Write")
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, path_guard=policy.guard_path)
    import asyncio
    with pytest.raises(ToolError, match="deny rule"):
        asyncio.run(write.call(parse_tool_input(write, {"file_path": str(target), "content": "x"}), ctx))
    assert not (denied / "planted.txt").exists()


@pytest.mark.parametrize("mode", list(PermissionMode))
def test_protected_paths_in_every_mode(tmp_path, mode, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CODELOOP_IMPORT_CACHE", str(tmp_path / "elsewhere"))
    policy = PermissionPolicy(cwd=tmp_path, mode=mode, allow=["Write", "Edit"])
    for target in (tmp_path / ".claude" / "settings.json", tmp_path / ".codeloop" / "settings.local.json",
                   tmp_path / "cfg" / "settings.json", tmp_path / "cfg" / "projects" / "x" / "s.jsonl",
                   # code codeloop runs at its next start, and the tool schemas it sends
                   tmp_path / "cfg" / "cache" / "import-code.cpython-311.0123456789abcdef",
                   tmp_path / "cfg" / "cache" / "tool-schemas.json",
                   tmp_path / "elsewhere" / "import-code.cpython-311.0123456789abcdef",
                   tmp_path / "elsewhere" / "regex-code.cpython-311.marshal",
                   tmp_path / "cfg" / "cache" / "dataclass-replay.cpython-311.marshal"):
        assert decide(policy, "Write", {"file_path": str(target), "content": "{}"}) is PermissionBehavior.DENY


def test_deny_beats_allow_and_plan_refuses_writes(tmp_path):
    p = PermissionPolicy(cwd=tmp_path, allow=["Bash"], deny=["Bash(rm:*)"])
    assert decide(p, "Bash", {"command": "ls"}) is PermissionBehavior.ALLOW
    assert decide(p, "Bash", {"command": "rm -rf x"}) is PermissionBehavior.DENY
    plan = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.PLAN, allow=["Write"])
    assert decide(plan, "Write", {"file_path": str(tmp_path / "a"), "content": ""}) is PermissionBehavior.DENY
    assert decide(plan, "Read", {"file_path": str(tmp_path / "a")}) is PermissionBehavior.ALLOW


@pytest.mark.parametrize("command", ["cat .env", "head -n 3 ./.env", "grep KEY .env", "git status && cat sub/.env",
                                     "cat $HOME/../..$PWD/.env"])
def test_read_deny_rules_hold_for_bash_reads(tmp_path, command):
    (tmp_path / "sub").mkdir()
    policy = PermissionPolicy(cwd=tmp_path, settings_rules=[("deny", "Read(.env)", "cli")])
    assert decide(policy, "Bash", {"command": command}) is not PermissionBehavior.ALLOW
    assert decide(policy, "Bash", {"command": "cat README.md"}) is PermissionBehavior.ALLOW
    explicit = PermissionPolicy(cwd=tmp_path, allow=["Bash(cat:*)"], settings_rules=[("deny", "Read(.env)", "cli")])
    assert decide(explicit, "Bash", {"command": "cat .env"}) is not PermissionBehavior.ALLOW


@pytest.mark.parametrize("command", [
    "x='$(touch P)'; echo ${x@P}", "test -v 'a[$(touch P)]'", "echo ${!x}", "x=$(touch P)",
    "cat ~/.ssh/id_rsa", "cat /etc/shadow", "cat $HOME/.ssh/id_rsa", "grep -r . / --include=*.pem",
    "git -C /etc status"])
def test_reviewer_found_escapes_are_not_auto_allowed(tmp_path, command):
    policy = PermissionPolicy(cwd=tmp_path)
    assert decide(policy, "Bash", {"command": command}) is not PermissionBehavior.ALLOW
    if "P" in command:   # and they really would have run code
        assert not (tmp_path / "P").exists()


@pytest.mark.parametrize("command", ["$(which curl) x", "x=curl; $x y", "c?rl x", "echo curl x | sh",
                                     "ionice -c3 curl x", "taskset 1 curl x", "flock /tmp/l curl x",
                                     "strace curl x", "alias c=curl; c x"])
def test_bare_bash_allow_does_not_open_a_way_around_deny_rules(tmp_path, command):
    policy = PermissionPolicy(cwd=tmp_path, allow=["Bash"], deny=["Bash(curl:*)"])
    assert decide(policy, "Bash", {"command": command}) is not PermissionBehavior.ALLOW
    assert decide(policy, "Bash", {"command": "npm test"}) is PermissionBehavior.ALLOW


def test_git_config_hooks_and_mcp_json_are_guarded_under_accept_edits(tmp_path):
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.ACCEPT_EDITS)
    for target, expected in ((".git/config", PermissionBehavior.DENY),
                             (".git/hooks/pre-commit", PermissionBehavior.DENY),
                             (".mcp.json", PermissionBehavior.ASK), ("src/app.py", PermissionBehavior.ALLOW)):
        assert decide(policy, "Write", {"file_path": str(tmp_path / target), "content": "x"}) is expected, target


@pytest.mark.parametrize("home_rel", [".", "me"])
def test_nested_configuration_and_home_start_up_files_ask_under_accept_edits(tmp_path, monkeypatch, home_rel):
    """Issue 25 #5: nested `.claude/`, `.codeloop/`, `.mcp.json` and nested git folders, and with
    the project at or above home, home's shell, ssh, git and Claude files are never auto-written."""
    home = (tmp_path / home_rel).resolve()
    monkeypatch.setenv("HOME", str(home))
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.ACCEPT_EDITS)
    ask, deny = PermissionBehavior.ASK, PermissionBehavior.DENY
    cases = [("sub/.claude/settings.json", ask), ("a/b/.mcp.json", ask), ("sub/.codeloop/settings.json", ask),
             ("sub/.git/config", deny), ("sub/.git/hooks/post-checkout", deny), ("sub/.git", deny),
             ("sub/.git/index", deny), ("src/app.py", PermissionBehavior.ALLOW)]
    cases += [(os.path.join(home_rel, t), ask) for t in (".bash_aliases", ".ssh/config", ".claude.json",
                                                         ".config/fish/config.fish", ".local/bin/git")]
    for target, expected in cases:
        assert decide(policy, "Write", {"file_path": str(tmp_path / target), "content": "x"}) is expected, target


def test_plan_mode_runs_read_only_bash_only(tmp_path, monkeypatch):
    import subprocess
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    plan = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.PLAN)
    assert decide(plan, "Bash", {"command": "git branch && ls -la"}) is PermissionBehavior.ALLOW
    # issue 25: `git status` is read-only where no configuration names a program for it to run...
    assert decide(plan, "Bash", {"command": "git status && ls -la"}) is PermissionBehavior.ALLOW
    # ...and issue 12: not where the repository's config names one (core.fsmonitor), unsandboxed
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.fsmonitor", "touch pwned"], check=True)
    assert decide(plan, "Bash", {"command": "git status && ls -la"}) is PermissionBehavior.DENY
    assert decide(plan, "Bash", {"command": "touch x"}) is PermissionBehavior.DENY


@pytest.mark.parametrize("folder", ["plain", "a(b) c", "x)y", " edge "])
def test_built_in_protections_are_the_rules_their_text_would_parse_to(tmp_path, folder, monkeypatch):
    # the policy makes these rules directly; written out and parsed, each must be the same rule
    from codeloop.permissions.modes import ask_paths, edit_spec_for, protected_paths
    from codeloop.permissions.rules import parse_rule

    monkeypatch.setenv("HOME", str(tmp_path / "home") + "/")   # a trailing slash, as people set it
    cwd = tmp_path / folder
    cwd.mkdir()
    rules = PermissionPolicy(cwd=cwd).rules
    assert rules.deny == [parse_rule(f"Edit({edit_spec_for(p)})", "protected") for p in protected_paths(cwd)]
    assert rules.ask == [parse_rule(f"Edit({edit_spec_for(p)})", "protected") for p in ask_paths(cwd)]
    assert rules.allow == []


def test_protected_and_ask_paths_are_normalised_paths(tmp_path, monkeypatch):
    from codeloop.permissions.modes import ask_paths, protected_paths

    monkeypatch.setenv("HOME", str(tmp_path / "home") + "/")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg") + "//")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc") + "/")
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg") + "//")
    monkeypatch.delenv("CODELOOP_IMPORT_CACHE")   # the config dir's cache folder, then
    home = tmp_path / "home"
    for cwd in (Path("/"), tmp_path):
        paths = protected_paths(cwd) + ask_paths(cwd)
        assert not [p for p in paths if "//" in p or p.endswith("/")]
        for want in (cwd / ".git" / "config", cwd / "**" / ".git" / "hooks", home / ".gitconfig",
                     tmp_path / "xdg" / "git" / "config", home / ".config" / "git" / "attributes",
                     tmp_path / "cc" / "settings.json", tmp_path / "cfg" / "cache" / "**"):
            assert str(want) in paths
        for want in (cwd / ".mcp.json", home / ".bashrc", home / ".claude.json"):
            assert str(want) in ask_paths(cwd)


def test_a_hard_link_to_a_cache_file_is_a_denied_file(tmp_path, monkeypatch):
    # a link made in the project to stored code would let a write through it plant code for later
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("CODELOOP_IMPORT_CACHE")
    stored = tmp_path / "cfg" / "cache" / "import-code.cpython-311.0123456789abcdef"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(b"code")
    (tmp_path / "proj").mkdir()
    os.link(stored, tmp_path / "proj" / "notes.txt")
    policy = PermissionPolicy(cwd=tmp_path / "proj", mode=PermissionMode.BYPASS)
    st = os.stat(tmp_path / "proj" / "notes.txt")
    assert (st.st_dev, st.st_ino) in policy.denied_inodes("Write")
