"""Issue 25, item 3: Read deny rules hold for git's objects, under the sandbox too.

secret.txt (denied) was committed in HEAD~1 and dropped from the index in HEAD; it stays in the work
tree. Git prints it from its objects (`git show HEAD~1:secret.txt`), which the sandbox's masks never
see: the policy refuses calls that name it and asks for calls that can print contents without a
pathspec keeping them off it. Decided by the real policy on a real repository; the CLI tests run the
real commands under the real bubblewrap sandbox with the model faked at the HTTP layer.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.config.sandbox import sandbox_settings
from codeloop.permissions.bash import split_command
from codeloop.permissions.git_reads import git_read_concern
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.sandbox.runtime import Sandbox
from codeloop.tools.base import PermissionBehavior, ToolContext
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402
from sandbox_helpers import needs_bwrap  # noqa: E402
from test_print_mode import codeloop  # noqa: E402

ALLOW, ASK, DENY = PermissionBehavior.ALLOW, PermissionBehavior.ASK, PermissionBehavior.DENY
SECRET = "TOPSECRET-4711"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / "home").mkdir()
    make_repo(tmp_path)
    return tmp_path


def make_repo(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "secret.txt").write_text(SECRET + "\n")
    (root / "README.txt").write_text("readme\n")
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("print(1)\n")
    git(root, "add", "secret.txt", "README.txt", "src")
    git(root, "commit", "-qm", "one")
    git(root, "rm", "-q", "--cached", "secret.txt")
    git(root, "commit", "-qm", "two")
    (root / "README.txt").write_text("readme, changed\n")


def sandbox_for(root: Path, auto_allow: bool = True) -> Sandbox:
    settings = sandbox_settings({"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": auto_allow}})
    return Sandbox(settings, [str(root)], home=str(root / "home"), protected_dirs=[str(root / ".cfg")],
                   read_deny=lambda: [("./secret.txt", "cli")])


def decide(cwd, command, *, mode=PermissionMode.DEFAULT, deny=("Read(./secret.txt)",), sandbox=None):
    policy = PermissionPolicy(mode=mode, cwd=cwd, deny=list(deny), sandbox=sandbox)
    tool = find_tool(builtin_tools(), "Bash")
    inp = parse_tool_input(tool, {"command": command})
    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=cwd, project_dir=cwd)))
    return policy.decide(tool, inp, opinion, {"command": command})


# -- a git call naming a denied path is refused ------------------------------------------------
NAMING = ["git show HEAD~1:secret.txt", "git show :secret.txt", "git show :0:secret.txt",
          "git show HEAD~1:./secret.txt", "git show HEAD~1:src/../secret.txt",
          "git show 'HEAD@{1 12:00}:secret.txt'", "git cat-file -p HEAD~1:secret.txt",
          "git cat-file blob HEAD~1:secret.txt", "git log -p -- secret.txt", "git diff HEAD~1 -- secret.txt",
          "git grep -e TOP HEAD~1 -- secret.txt", "git grep -f secret.txt HEAD~1", "git blame HEAD~1 -- secret.txt",
          "git log -L1,1:secret.txt", "git rev-parse HEAD~1:secret.txt", "sh -c 'git show HEAD~1:secret.txt'",
          "bash <<< 'git show HEAD~1:secret.txt'", "timeout 5 git --no-pager show HEAD~1:secret.txt",
          "cd src && git show HEAD~1:../secret.txt", "git -C src show HEAD~1:../secret.txt",
          "/usr/lib/git-core/git-show HEAD~1:secret.txt", "git show HEAD~1:secret.txt | base64",
          "env -i git show HEAD~1:secret.txt", "echo ok; git show HEAD~1:secret.txt > /tmp/x",
          "git log --stat -- secret.txt", "git diff --numstat HEAD~1 -- secret.txt",
          "git show --stat HEAD -- secret.txt"]

# -- a git call that can print contents without a pathspec keeping it off them asks ------------
PRINTING = ["git show HEAD~1", "git show", "git show --stat abc1234", "git log -p", "git log --patch --all",
            "git log -U1", "git log -S TOPSECRET --oneline", "git log -G TOP", "git log -L1,1:README.txt",
            "git whatchanged -p", "git reflog -p", "git diff HEAD~1", "git diff HEAD~1..HEAD",
            "git diff --cached HEAD~1", "git cat-file -p abc1234", "git cat-file blob abc1234",
            "git cat-file --batch", "git grep TOP HEAD~1", "git grep --cached TOP", "git archive HEAD~1",
            "git archive --format=tar HEAD~1 | tar -xO", "git format-patch -1 --stdout HEAD~1",
            "git bundle create b.bundle --all", "git fast-export --all", "git stash show -p", "git stash show",
            "git stash list -p", "git checkout-index --prefix=out/ -a", "git worktree add ../wt HEAD~1",
            "git clone . ../copy", "git -c alias.x=show x HEAD~1", "git -c core.pager='sh -c x' log",
            "GIT_PAGER=cat git log", "GIT_DIR=.git git show HEAD~1", "git --git-dir=.git show HEAD~1",
            "export GIT_EXTERNAL_DIFF=cat; git diff", "env GIT_EXTERNAL_DIFF=cat git diff", "git lg",
            "git show $REV", "git log $OPTS", "echo HEAD~1 | xargs git show", "echo x | xargs git log -p -- README.txt",
            "find . -name '*.txt' -exec git log -p {} +", "eval 'git log -p'", "x=git; $x show HEAD~1",
            "git log -p -- ':!secret.txt'", "git log -p -- '*.txt'", "git log -p -- ':(top)README.txt'",
            "git log -p --follow -- README.txt", "git add -p", "git status -v", "git commit -v",
            "git update-index --add --cacheinfo 100644,0123456789012345678901234567890123456789,pub.txt",
            "git read-tree --prefix=pub/ HEAD~1", "git apply --cached x.patch", "git notes add -C abc1234",
            "git diff-tree -p HEAD~1", "git --icase-pathspecs log -p -- SECRET.TXT", "git show HEAD~1^{tree}",
            "git -p log -p", "env -C src git log -p -- a.py", "git log -p -- .",
            "git for-each-ref --format='%(raw)' refs/tags", "git tag -l --format='%(contents)'",
            "git rebase -x 'git log -p' HEAD~1", "git rebase --exec='git log -p' HEAD~1",
            "git fetch --upload-pack='git log -p; git-upload-pack' .", "git ls-remote --upload-pack=x ."]


@pytest.mark.parametrize("command", NAMING)
def test_naming_a_denied_path_is_refused_in_every_mode(repo, command):
    for mode in (PermissionMode.DEFAULT, PermissionMode.BYPASS, PermissionMode.ACCEPT_EDITS):
        d = decide(repo, command, mode=mode)
        assert d.behavior is DENY, (mode, d)
    d = decide(repo, command, sandbox=sandbox_for(repo))
    assert d.behavior is DENY and "Read deny rule" in d.message and "\n" not in d.message, d


@pytest.mark.parametrize("command", PRINTING)
def test_printing_contents_asks_even_when_sandboxed(repo, command):
    d = decide(repo, command, sandbox=sandbox_for(repo))
    assert d.behavior in (ASK, DENY), d
    assert "Read deny rule" in d.message and "\n" not in d.message, d
    assert decide(repo, command, mode=PermissionMode.BYPASS).behavior is DENY
    assert decide(repo, command, mode=PermissionMode.DONT_ASK, sandbox=sandbox_for(repo)).behavior is DENY


LEGITIMATE = ["git status", "git status --short", "git log", "git log --oneline --stat -3",
              "git log -p -- README.txt", "git log -p HEAD~1..HEAD -- README.txt src", "git diff",
              "git diff -- README.txt", "git diff --stat HEAD~1", "git diff HEAD~1 -- README.txt src",
              "git diff HEAD~1 HEAD -- ':(exclude)secret.txt' README.txt", "git show --stat HEAD~1",
              "git show -s HEAD", "git show HEAD~1 -- README.txt", "git branch -a", "git rev-parse HEAD",
              "git ls-files", "git ls-tree -r HEAD~1", "git blame README.txt", "git blame HEAD~1 -- README.txt",
              "git grep readme", "git cat-file -t HEAD", "git commit -m \"$MSG\"", "git --no-pager log -1",
              "git -c color.ui=never log --oneline", "git add README.txt", "git checkout HEAD~1 -- README.txt",
              "git rev-list --objects --all", "git describe --always", "git --version", "ls && git status",
              "git show HEAD -- src"]


@pytest.mark.parametrize("command", LEGITIMATE)
def test_commands_that_cannot_print_denied_contents_keep_running(repo, command):
    assert git_read_concern(PermissionPolicy(cwd=repo, deny=["Read(./secret.txt)"]), split_command(command)) is None
    assert decide(repo, command, sandbox=sandbox_for(repo)).behavior is ALLOW


def test_a_copy_of_the_repository_is_read_as_the_project(repo, tmp_path_factory):
    copy = tmp_path_factory.mktemp("copy")
    for command in (f"cp -r . {copy} && git -C {copy} show HEAD~1:secret.txt",
                    f"cd {copy} && git log -p -- secret.txt"):
        assert decide(repo, command, sandbox=sandbox_for(repo)).behavior is DENY, command


@pytest.mark.parametrize("command", ["python3 -c \"import zlib; zlib.decompress(open('.git/objects/ab/cd').read())\"",
                                     "cat objects/ab/cdef0123 | zlib-flate -uncompress", "ls .git/objects/pack"])
def test_reading_the_object_store_directly_asks(repo, command):
    assert decide(repo, command, sandbox=sandbox_for(repo)).behavior is ASK


def test_a_path_climbing_out_is_checked_from_every_folder_above_the_project(repo):
    # the Bash tool's folder persists between calls (`cd src` earlier): `../secret.txt` may be the project's
    for command in ("git show HEAD~1:../secret.txt", "git log -p -- ../secret.txt", "git blame ../../secret.txt"):
        assert decide(repo, command, sandbox=sandbox_for(repo)).behavior is DENY, command


HIDDEN = ["printf 'git show HEAD~1:secret.txt' > s.sh", "cat > s.sh <<'EOF'\ngit show HEAD~1:secret.txt\nEOF",
          "python3 -c \"import subprocess; subprocess.run(['git', 'show', 'HEAD~1:secret.txt'])\""]


@pytest.mark.parametrize("command", HIDDEN)
def test_a_denied_rev_path_written_into_a_script_or_code_is_refused(repo, command):
    assert decide(repo, command, sandbox=sandbox_for(repo)).behavior is DENY


def test_shell_scripts_an_earlier_call_wrote_are_read(repo):
    (repo / "show.sh").write_text("git show HEAD~1:secret.txt\n")
    (repo / "log.sh").write_text("#!/bin/sh\ngit log -p\n")
    (repo / "ok.sh").write_text("#!/bin/sh\ngit status\n")
    for f in ("show.sh", "log.sh", "ok.sh"):
        (repo / f).chmod(0o755)
    box = sandbox_for(repo)
    for command in ("sh show.sh", "./show.sh", "bash -x ./show.sh"):
        assert decide(repo, command, sandbox=box).behavior is DENY, command
    for command in ("bash log.sh", ". ./log.sh", "./log.sh"):
        assert decide(repo, command, sandbox=box).behavior is ASK, command
    assert decide(repo, "./ok.sh && sh ok.sh", sandbox=box).behavior is ALLOW


def test_with_no_read_deny_rule_nothing_changes(repo):
    for command in ("git show HEAD~1:secret.txt", "git log -p", "git show HEAD~1", "git archive HEAD~1"):
        assert decide(repo, command, deny=(), sandbox=sandbox_for(repo)).behavior is ALLOW, command
        assert git_read_concern(PermissionPolicy(cwd=repo), split_command(command)) is None


def test_a_staged_or_tracked_denied_file_makes_the_work_tree_diff_ask(repo):
    assert decide(repo, "git diff", sandbox=sandbox_for(repo)).behavior is ALLOW       # not tracked now
    git(repo, "add", "secret.txt")
    for command in ("git diff", "git diff --cached", "git diff --staged", "git show :secret.txt"):
        assert decide(repo, command, sandbox=sandbox_for(repo)).behavior is not ALLOW, command
    assert decide(repo, "git diff -- README.txt", sandbox=sandbox_for(repo)).behavior is ALLOW
    git(repo, "commit", "-qm", "three")
    git(repo, "rm", "-q", "--cached", "secret.txt")          # a staged deletion: `diff --cached` prints it
    assert decide(repo, "git diff --cached", sandbox=sandbox_for(repo)).behavior is not ALLOW


def test_slashless_rules_match_at_any_depth_and_folders_that_may_hold_them_ask(repo):
    env_rule = ("Read(.env)",)
    (repo / "src" / ".env").write_text("KEY=1\n")
    git(repo, "add", "-f", "src/.env")
    git(repo, "commit", "-qm", "env")
    assert decide(repo, "git show HEAD:src/.env", deny=env_rule).behavior is DENY
    assert decide(repo, "git -C src show HEAD:.env", deny=env_rule).behavior is DENY
    assert decide(repo, "git log -p -- src", deny=env_rule, sandbox=sandbox_for(repo)).behavior is ASK
    assert decide(repo, "git log -p -- src/a.py", deny=env_rule, sandbox=sandbox_for(repo)).behavior is ALLOW


def test_the_sandboxs_own_deny_read_list_counts(repo):
    settings = sandbox_settings({"sandbox": {"enabled": True, "filesystem": {"denyRead": ["./secret.txt"]}}})
    box = Sandbox(settings, [str(repo)], home=str(repo / "home"), protected_dirs=[], read_deny=list)
    assert decide(repo, "git show HEAD~1:secret.txt", deny=(), sandbox=box).behavior is DENY
    assert decide(repo, "git log -p", deny=(), sandbox=box).behavior is ASK


# -- end to end: the real CLI, the real sandbox ------------------------------------------------
def cli_repo(tmp_path: Path) -> None:
    make_repo(tmp_path)
    (tmp_path / ".cfg").mkdir()
    # HOME is the project here; the sandbox protects a missing ~/.gitconfig with a placeholder git cannot read
    (tmp_path / ".gitconfig").write_text("")
    git(tmp_path, "stash", "-q")                        # a stash holding README's change
    (tmp_path / "README.txt").write_text("readme, changed\n")


def run_cli(tmp_path: Path, commands: list[str], args: list[str]):
    api = ScriptedAPI(*[sse(tool_use("Bash", {"command": c}, id=f"c{i}")) for i, c in enumerate(commands)],
                      sse(text("done")))
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t"}
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json", *args], cwd=tmp_path, base_url=url, env=env,
                     timeout=120)
    assert r.returncode == 0, r.stderr
    denied = {d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]}
    out = {b["tool_use_id"]: b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
           for req in api.requests[1:] for b in req.messages[-1]["content"] if b.get("type") == "tool_result"}
    return denied, out


SANDBOXED = ["--settings", json.dumps({"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True}})]


@needs_bwrap
def test_cli_attacks_on_git_objects_are_refused_under_the_sandbox(tmp_path):
    cli_repo(tmp_path)
    blob = git(tmp_path, "rev-parse", "HEAD~1:secret.txt").strip()
    attacks = ["git show HEAD~1:secret.txt", "git log -p", "git cat-file -p " + blob, "git grep TOPSECRET HEAD~1",
               "git archive HEAD~1 | tar -xO", "git show HEAD~1", "sh -c 'git --no-pager show HEAD~1:./secret.txt'",
               "echo HEAD~1:secret.txt | xargs git show", "git diff HEAD~1", "git fast-export --all",
               "git -c alias.leak=show leak HEAD~1:secret.txt", "git stash show -p"]
    denied, out = run_cli(tmp_path, attacks, [*SANDBOXED, "--disallowedTools", "Read(secret.txt)"])
    assert denied == {f"c{i}" for i in range(len(attacks))}
    assert all(SECRET not in content for content in out.values()), out
    assert "git show would print" in out["c0"] and "Read deny rule" in out["c1"]


@needs_bwrap
def test_cli_legitimate_git_commands_run_under_the_sandbox_with_a_deny_rule(tmp_path):
    cli_repo(tmp_path)
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./secret.txt)"]}}))
    legit = ["git status --short", "git log --oneline", "git diff", "git log -p -- README.txt",
             "git show --stat HEAD~1", "git cat-file -p HEAD~1:README.txt"]
    denied, out = run_cli(tmp_path, legit, SANDBOXED)
    assert denied == set(), out
    assert "?? secret.txt" in out["c0"] and "two" in out["c1"] and "+readme, changed" in out["c2"]
    assert "readme" in out["c3"] and "secret.txt" in out["c4"] and out["c5"].strip().startswith("readme")
    assert all(SECRET not in content for content in out.values())


@needs_bwrap
def test_cli_with_no_deny_rule_git_show_prints_history_under_the_sandbox(tmp_path):
    cli_repo(tmp_path)
    denied, out = run_cli(tmp_path, ["git show HEAD~1", "git show HEAD~1:secret.txt"], SANDBOXED)
    assert denied == set() and SECRET in out["c0"] and SECRET in out["c1"], out


def test_the_check_is_fast_with_a_deny_rule_in_force(repo):
    import time
    policy = PermissionPolicy(cwd=repo, deny=["Read(./secret.txt)"])
    lines = [split_command(c) for c in ("ls -la && echo done", "git status", "git show HEAD~1:secret.txt",
                                        "git log -p -- README.txt", "sh -c 'git log --oneline'")]
    git_read_concern(policy, lines[0])                      # rules parsed, modules imported
    start = time.perf_counter()
    for _ in range(20):
        for split in lines:
            git_read_concern(policy, split)
    per_call = (time.perf_counter() - start) / (20 * len(lines))
    assert per_call < 0.05, per_call                        # no git subprocess on these lines
    assert os.environ.get("GIT_DIR") is None


def test_the_git_objects_check_loads_only_when_some_path_is_hidden(tmp_path):
    """Its module (and git_subcommands') is imported by a Bash check only when a Read deny rule or
    the sandbox's denyRead hides something; with one, a git read of it is still refused."""
    import subprocess
    import sys

    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from codeloop.permissions.policy import PermissionPolicy\n"
        "from codeloop.tools.base import ToolContext\n"
        "from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input\n"
        f"cwd = Path({str(tmp_path)!r})\n"
        "tool = find_tool(builtin_tools(), 'Bash')\n"
        "def decide(deny):\n"
        "    inp = parse_tool_input(tool, {'command': 'git show HEAD:secret.txt'})\n"
        "    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=cwd, project_dir=cwd)))\n"
        "    return PermissionPolicy(cwd=cwd, deny=deny).decide(tool, inp, opinion, {'command': inp.command})\n"
        "decide([])\n"
        "print('codeloop.permissions.git_reads' in sys.modules)\n"
        "print(decide(['Read(./secret.txt)']).behavior.value)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "deny"], out.stderr
