"""Issue 25, item 9: an explicit Bash allow rule is consent to what its commands name, and git's
read-only subcommands ask only where configuration names a program — the real policy on real
files and real git repositories in tmp_path (the CLI runs are in tests/cli/test_allow_consent_cli.py).
"""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from codeloop.permissions.bash import split_command
from codeloop.permissions.git_programs import _index_modes, folder_concern, git_concern
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.tools.base import PermissionBehavior, ToolContext
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input

ALLOW, ASK, DENY = PermissionBehavior.ALLOW, PermissionBehavior.ASK, PermissionBehavior.DENY


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("XDG_CONFIG_HOME", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "CDPATH"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("a\n")
    (proj / "secret.txt").write_text("KEY\n")
    (tmp_path / "other").mkdir()
    return proj


def git(*args):
    subprocess.run(["git", *map(str, args)], check=True, capture_output=True)


def decide(cwd, command, allow=(), mode=PermissionMode.DEFAULT, **kw):
    policy = PermissionPolicy(mode=mode, cwd=cwd, allow=list(allow), **kw)
    tool = find_tool(builtin_tools(), "Bash")
    inp = parse_tool_input(tool, {"command": command})
    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=cwd, project_dir=cwd)))
    return policy.decide(tool, inp, opinion, {"command": command})


# -- consent ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rule, command", [
    ("Bash(mkdir:*)", "mkdir -p build/out"), ("Bash(touch *)", "touch new.txt"), ("Bash(cp:*)", "cp -r . ../proj/b"),
    ("Bash(rm:*)", "rm -f a.txt"), ("Bash(sed:*)", "sed -i.bak s/a/b/ a.txt"), ("Bash(python3:*)", "python3 -c 1"),
    ("Bash(python3:*)", "timeout 5 python3 -c 'print(1)'"), ("Bash(perl:*)", "perl -e 1"),
    ("Bash(ln:*)", "ln -s a.txt l"), ("Bash(install:*)", "install -m 644 a.txt inst.txt"),
    ("Bash(mkdir:*)", "mkdir x && mkdir y"), ("Bash(cp:*)", "cd sub && cp ../a.txt ."),
])
def test_consented_writes_inside_the_project_run(project, rule, command):
    (project / "sub").mkdir()
    rules = [rule, "Bash(cd:*)"]
    assert decide(project, command, rules).behavior is ALLOW
    assert decide(project, command, rules, PermissionMode.DONT_ASK).behavior is ALLOW


def test_without_the_rule_nothing_changes(project):
    for command in ("mkdir build", "touch f", "python3 -c 1", "cp a.txt b.txt"):
        assert decide(project, command).behavior is ASK, command
        assert decide(project, command, ["Bash(ls:*)"]).behavior is ASK, command
    assert decide(project, "python3 -c 1", ["Bash(mkdir:*)"]).behavior is ASK


def test_additional_directories_are_working_folders(project):
    other = project.parent / "other"
    assert decide(project, f"mkdir {other}/x", ["Bash(mkdir:*)"]).behavior is ASK
    assert decide(project, f"mkdir {other}/x", ["Bash(mkdir:*)"], additional_directories=[str(other)]).behavior \
        is ALLOW


def test_deny_rules_and_ask_rules_still_win(project):
    assert decide(project, "rm -rf build", ["Bash(rm:*)"], deny=["Bash(rm -rf:*)"]).behavior is DENY
    assert decide(project, "rm a.txt", ["Bash(rm:*)"], deny=["Edit(a.txt)"]).behavior is DENY
    assert decide(project, "rm a.txt", ["Bash(rm:*)"], ask=["Edit(a.txt)"]).behavior is ASK
    assert decide(project, "rm a.txt", ["Bash(rm:*)"], ask=["Bash(rm:*)"]).behavior is ASK


@pytest.mark.parametrize("command", ["touch l/x", "cp a.txt l/", "rm l/x", "mkdir l/y"])
def test_a_symlink_out_of_the_project_is_outside(project, command):
    os.symlink(project.parent / "other", project / "l")
    assert decide(project, command, [f"Bash({command.split()[0]}:*)"]).behavior is ASK


@pytest.mark.parametrize("command", ["cp -r ../other/evil mine", "mv inner mine", "cp -r ../other/evil/. x",
                                     "ln -s ../other/evil mine", "cp -r $SRC x", "busybox cp -r ../other/evil x",
                                     "cp -r ../other/tools x"])
def test_copying_in_a_folder_that_holds_configuration_asks(project, command):
    (project.parent / "other" / "evil" / ".git").mkdir(parents=True)
    (project.parent / "other" / "evil" / ".git" / "config").write_text("[core]\n\tfsmonitor = touch pwned\n")
    (project.parent / "other" / "tools" / "deep" / ".vscode").mkdir(parents=True)
    (project / "x").mkdir()
    (project / "inner" / ".claude").mkdir(parents=True)     # moved, its settings land somewhere new
    rule = "Bash(busybox:*)" if command.startswith("busybox") else f"Bash({command.split()[0]}:*)"
    d = decide(project, command, [rule])
    assert d.behavior is ASK and ("holds" in d.message or "known only when it runs" in d.message), d


def test_copying_in_an_ordinary_folder_runs(project):
    (project.parent / "other" / "lib" / "pkg").mkdir(parents=True)
    (project.parent / "other" / "lib" / "pkg" / "m.py").write_text("")
    assert decide(project, "cp -r ../other/lib vendored", ["Bash(cp:*)"]).behavior is ALLOW


def test_read_denied_and_protected_paths(project):
    deny = ["Read(./secret.txt)"]
    assert decide(project, "touch secret.txt", ["Bash(touch:*)"], deny=deny).behavior is ASK
    assert decide(project, "touch .git/config", ["Bash(touch:*)"]).behavior is DENY
    assert decide(project, "touch .codeloop/settings.local.json", ["Bash(touch:*)"]).behavior is DENY
    assert decide(project, "mkdir .codeloop", ["Bash(mkdir:*)"]).behavior is ASK
    assert decide(project, "touch sub/.claude/settings.json", ["Bash(touch:*)"]).behavior is ASK


def test_accept_edits_and_bypass_keep_their_meaning(project):
    # acceptEdits already allowed writes inside the project; consent adds nothing it refused
    assert decide(project, "touch .mcp.json", ["Bash(touch:*)"], PermissionMode.ACCEPT_EDITS).behavior is ASK
    assert decide(project, "touch x", [], PermissionMode.ACCEPT_EDITS).behavior is ASK      # no rule: Bash asks
    assert decide(project, "touch .git/config", ["Bash(touch:*)"], PermissionMode.BYPASS).behavior is DENY


# -- git's read-only subcommands -------------------------------------------------------------
@pytest.fixture
def repo(project):
    git("init", "-q", project)
    return project


GIT_READS = ["git log", "git diff", "git show", "git status", "git blame a.txt", "git ls-files", "git -C sub log"]


@pytest.mark.parametrize("command", GIT_READS)
def test_git_reads_run_in_a_plain_repository(repo, command):
    (repo / "sub").mkdir()
    assert decide(repo, command).behavior is ALLOW
    assert decide(repo, command, mode=PermissionMode.PLAN).behavior is ALLOW


@pytest.mark.parametrize("key, value", [
    ("core.fsmonitor", "touch pwned"), ("core.fsmonitor", "true"), ("core.pager", "less"), ("pager.log", "touch x"),
    ("diff.x.textconv", "cat"), ("diff.x.command", "sh"), ("diff.external", "sh"), ("filter.lfs.clean", "x %f"),
    ("filter.lfs.required", "true"), ("core.hooksPath", "hooks"), ("core.sshCommand", "ssh -i k"),
    ("gpg.program", "gpg2"), ("gpg.ssh.program", "x"), ("remote.origin.promisor", "true"),
    ("extensions.partialClone", "origin"),
])
def test_git_reads_ask_where_the_repository_names_a_program(repo, key, value):
    git("-C", repo, "config", key, value)
    for command in GIT_READS[:5]:
        d = decide(repo, command)
        assert d.behavior is ASK and key.lower() in d.message, (command, d)
        assert decide(repo, command, mode=PermissionMode.PLAN).behavior is DENY


@pytest.mark.parametrize("key, value", [("core.fsmonitor", "false"), ("pager.log", "false"), ("pager.diff", "true"),
                                        ("core.editor", "vim"), ("credential.helper", "store"),
                                        ("remote.origin.promisor", "false")])
def test_settings_that_start_nothing_here_do_not_ask(repo, key, value):
    git("-C", repo, "config", key, value)
    assert decide(repo, "git log").behavior is ALLOW


def test_the_user_s_configuration_includes_and_environment_count(repo, monkeypatch):
    home = repo.parent / "home"
    (home / ".gitconfig").write_text("[core]\n\tpager = touch pwned\n")
    assert "core.pager" in (folder_concern(str(repo)) or "")
    (home / ".gitconfig").write_text("[include]\n\tpath = more.inc\n")
    (home / "more.inc").write_text("[diff \"x\"]\n\ttextconv = sh\n")
    assert "diff.x.textconv" in (folder_concern(str(repo)) or "")
    (home / ".gitconfig").unlink()
    (repo / ".git" / "extra").write_text("[core]\n\tfsmonitor = sh\n")
    git("-C", repo, "config", "includeIf.gitdir:" + str(repo) + "/.git.path", "extra")
    assert "core.fsmonitor" in (folder_concern(str(repo)) or "")
    (repo / ".git" / "extra").write_text("")
    assert folder_concern(str(repo)) is None
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.pager")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "sh")
    assert "core.pager" in (folder_concern(str(repo)) or "")
    monkeypatch.delenv("GIT_CONFIG_COUNT")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "sh")
    assert "GIT_EXTERNAL_DIFF" in (folder_concern(str(repo)) or "")


def test_submodules_and_hooks_ask(repo):
    assert folder_concern(str(repo)) is None
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text("#!/bin/sh\ntouch pwned\n")
    assert "hook" in (folder_concern(str(repo)) or "")
    hook.unlink()
    (repo / ".gitmodules").write_text("")
    assert "submodules" in (folder_concern(str(repo)) or "")
    (repo / ".gitmodules").unlink()
    # a gitlink planted in the index, without .gitmodules: git status still looks inside it
    git("-C", repo, "update-index", "--add", "--cacheinfo", "160000,4b825dc642cb6eb9a060e54bf8d69288fbee4904,sub")
    assert "submodule" in (folder_concern(str(repo)) or "")
    git("-C", repo, "update-index", "--index-version", "4")
    assert "submodule" in (folder_concern(str(repo)) or "")
    git("-C", repo, "rm", "-q", "--cached", "sub")
    assert folder_concern(str(repo)) is None


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_index_reader_agrees_with_git(repo, version):
    for name in ("a.txt", "b/c.txt", "b/d/e.txt", "long-" + "x" * 40 + ".txt", "exe.sh"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    (repo / "exe.sh").chmod(0o755)
    os.symlink("a.txt", repo / "link")
    git("-C", repo, "add", "-A")
    git("-C", repo, "update-index", "--add", "--cacheinfo", "160000,4b825dc642cb6eb9a060e54bf8d69288fbee4904,z/sub")
    if version == 3:
        (repo / "b" / "new.txt").write_text("n")
        git("-C", repo, "add", "-N", "b/new.txt")          # intent-to-add sets an extended flag: version 3
    git("-C", repo, "update-index", "--index-version", str(version))
    assert (repo / ".git" / "index").read_bytes()[4:8] == version.to_bytes(4, "big")
    staged = subprocess.run(["git", "-C", str(repo), "ls-files", "-s"], capture_output=True, text=True).stdout
    expected = [int(line.split()[0], 8) for line in staged.splitlines()]
    assert _index_modes((repo / ".git" / "index").read_bytes(), 20) == expected


def test_the_folder_git_runs_in_follows_cd_and_dash_c(repo):
    sub = repo / "nested"
    git("init", "-q", sub)
    git("-C", sub, "config", "core.fsmonitor", "touch pwned")
    assert git_concern(str(repo), split_command("git log")) is None
    for command in ("cd nested && git log", "git -C nested status", "git -C . -C nested diff", "cd x; git -C $D log"):
        assert git_concern(str(repo), split_command(command)) is not None, command
    assert git_concern(str(repo), split_command("cd nested && git branch")) is None     # runs nothing configured
    assert "does not exist" in git_concern(str(repo), split_command("git -C missing log"))


@pytest.mark.parametrize("command", ["touch ~/.bash_aliases", "cp a.txt ~/.ssh/config", "mkdir -p .local/bin",
                                     "touch .claude.json", "touch cfg/agents/a.md", "cp a.txt .config/git/attributes"])
def test_with_the_project_at_home_its_dot_files_are_not_consented(project, monkeypatch, command):
    # the project is the home folder (a session started in ~): dot-files there configure the shell,
    # ssh, git and Claude; codeloop's own configuration folder is never a consented target either
    monkeypatch.setenv("HOME", str(project))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(project / "cfg"))
    rule = f"Bash({command.split()[0]}:*)"
    assert decide(project, command, [rule]).behavior is not ALLOW      # asks (git's attributes: denied)
    assert decide(project, "touch notes.txt", ["Bash(touch:*)"]).behavior is ALLOW
