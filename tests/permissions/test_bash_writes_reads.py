"""Issue 12, items 2 and 3: every write form is an Edit, Read deny holds for Bash, git's repository
programs are not auto-allowed — decided by the real policy on real files in tmp_path.

The attacker's settings from the issue: allow `Bash(echo *)`, `Bash(git status)`, `Bash(ls *)`,
`Bash(cat *)`, `Bash(grep *)`; deny `Read(./secret.txt)`. Nothing here runs a command.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from codeloop.permissions.bash import split_command
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.permissions.shell_writes import write_targets
from codeloop.tools.base import PermissionBehavior, ToolContext
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input

ALLOW, ASK, DENY = PermissionBehavior.ALLOW, PermissionBehavior.ASK, PermissionBehavior.DENY
ISSUE_RULES = [("allow", r, "cli") for r in ("Bash(echo *)", "Bash(git status)", "Bash(ls *)", "Bash(cat *)",
                                              "Bash(grep *)", "Bash(tee *)", "Bash(cp *)", "Bash(sed *)",
                                              "Bash(timeout *)", "Bash(git config *)")]
ISSUE_RULES.append(("deny", "Read(./secret.txt)", "cli"))


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "secret.txt").write_text("KEY=1")
    (tmp_path / "README.txt").write_text("readme")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes.md").write_text("notes")
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / ".codeloop").mkdir()
    (tmp_path / ".mcp.json").write_text("{}")
    os.symlink(tmp_path / ".mcp.json", tmp_path / "innocent.json")
    return tmp_path


def decide(cwd, command, mode=PermissionMode.DEFAULT, rules=ISSUE_RULES):
    import asyncio
    policy = PermissionPolicy(mode=mode, cwd=cwd, settings_rules=list(rules))
    tool = find_tool(builtin_tools(), "Bash")
    inp = parse_tool_input(tool, {"command": command})
    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=cwd, project_dir=cwd)))
    return policy.decide(tool, inp, opinion, {"command": command})


# -- redirections ride allow rules -------------------------------------------------------------
REDIRECTS = ["echo x > f", "echo x >> f", "echo x >| f", "echo x &> f", "echo x &>> f", "echo x 2> f",
             "echo x {fd}> f", "echo x <> f", "cat > f < README.txt", "timeout 5 echo x > f",
             "echo '{}' > .mcp.json", "echo x > .claude/commands/x.md", "echo x > CLAUDE.md",
             "echo x > innocent.json", "echo x >& f", "echo x 1>f", "ls > sub/../f", "echo x > ./sub/f",
             "echo x | tee .mcp.json", "echo x | tee -a innocent.json", "echo x | tee /tmp/elsewhere"]


@pytest.mark.parametrize("command", REDIRECTS)
def test_a_redirect_under_an_allow_rule_is_not_auto_allowed(project, command):
    assert decide(project, command).behavior is ASK
    assert decide(project, command, PermissionMode.DONT_ASK).behavior is DENY   # print mode: asks are denials


# Issue 25: `tee` is not a redirect but a command an allow rule (`Bash(tee *)`) names; the files it
# is given inside the working folders are the user's consent (its ask-path and outside forms ask, above).
@pytest.mark.parametrize("command", ["echo x | tee f", "echo x | tee -a sub/f"])
def test_tee_allowed_by_a_rule_writes_what_it_names(project, command):
    assert decide(project, command).behavior is ALLOW


@pytest.mark.parametrize("command", ["echo x > f", "echo x 2> sub/f", "echo x | tee f", "cat > f < README.txt"])
def test_accept_edits_allows_writes_inside_the_project_like_edit(project, command):
    assert decide(project, command, PermissionMode.ACCEPT_EDITS).behavior is ALLOW


@pytest.mark.parametrize("command", ["echo x > .mcp.json", "echo x > innocent.json", "echo x > .claude/agents/a.md",
                                     "echo x > /tmp/elsewhere", "echo x > home/.bashrc"])
def test_accept_edits_still_asks_where_edit_would(project, command):
    assert decide(project, command, PermissionMode.ACCEPT_EDITS).behavior is ASK


def test_harmless_redirects_stay_allowed(project):
    for command in ("echo x > /dev/null", "ls 2>&1", "cat README.txt 2>/dev/null", "echo hi >&2"):
        assert decide(project, command).behavior is ALLOW, command


# -- protected paths, every form, every mode ---------------------------------------------------
PROTECTED_WRITES = [
    "cd .codeloop && echo '{}' > settings.json", "tee .codeloop/settings.json", "cp x .codeloop/settings.json",
    "cp settings.json .codeloop", "sed -i s/a/b/ .codeloop/settings.json", "sed -ie s/a/b/ .codeloop/settings.json",
    "cd .git/hooks && echo x > pre-commit", "git config core.fsmonitor 'touch pwned'",
    "git -C sub config core.fsmonitor x", "cd sub && git config --local diff.external x",
    "mv x .git/config", "mv .codeloop/settings.json /tmp/gone", "dd if=x of=.git/config",
    "touch .git/hooks/post-checkout", "install -m 755 x .git/hooks/pre-commit", "ln -s x .git/hooks/pre-push",
    "exec 3> .git/config", "echo x >& .git/config", "rm .codeloop/settings.json", "truncate -s0 .git/config",
    "cd sub; cd ..; echo x > .git/config", "echo x > sub/.git/config", "chmod +x .git/hooks/pre-commit",
    "cp -t .git/hooks x", "timeout 5 tee -a .git/config", "env FOO=1 sed -i.bak 's/x/y/' .git/config",
    "perl -pi -e s/a/b/ .git/config", "gzip .codeloop/settings.json", "sort -o .git/config x",
    "echo x > .cfg/projects/p/s.jsonl", "cp x .cfg/cache/dataclass-code.cpython-311.marshal",
    "echo x > .cfg/cache/import-code.cpython-311.0123456789abcdef",
    "cp x .cfg/cache/regex-code.cpython-311.marshal", "echo x > .cfg/cache/dataclass-replay.cpython-311.marshal",
]


@pytest.mark.parametrize("command", PROTECTED_WRITES)
@pytest.mark.parametrize("mode", [PermissionMode.BYPASS, PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS])
def test_protected_paths_refused_in_every_mode(project, command, mode, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(project / ".cfg"))
    d = decide(project, command, mode)
    assert d.behavior is DENY, d


@pytest.mark.parametrize("command", ["echo x > $OUT", "tee \"$F\"", "cd $D && echo x > settings.json",
                                     "echo x > $(mktemp)", "cp a ${DEST}", "echo x > *.json", "dd of=$T",
                                     "cd - && echo x > f", "env -C sub touch f"])
def test_a_computed_write_target_asks_and_is_refused_when_bypassing(project, command):
    assert decide(project, command).behavior in (ASK, DENY)
    assert decide(project, command, PermissionMode.BYPASS).behavior is DENY


def test_bypass_still_allows_ordinary_writes(project):
    for command in ("echo x > f", "cp README.txt copy.txt", "cd sub && echo x > g", "rm -f f"):
        assert decide(project, command, PermissionMode.BYPASS).behavior is ALLOW, command


def test_edit_deny_rules_cover_every_write_form(project):
    rules = ISSUE_RULES + [("deny", "Edit(./locked/**)", "cli")]
    for command in ("cd locked && echo x > a", "cp x locked/", "echo x | tee locked/a", "sed -i s/a/b/ locked/a"):
        assert decide(project, command, PermissionMode.BYPASS, rules).behavior is DENY, command


# -- the write analysis itself -----------------------------------------------------------------
@pytest.mark.parametrize("command, expected", [
    ("cd a && echo x > f", {"f", "a/f"}),
    ("cp s1 s2 dir", {"dir", "dir/s1", "dir/s2"}),
    ("mv a b", {"b", "a", "b/a"}),
    ("ln -s /etc/passwd", {"passwd"}),
    ("install -t bin -m 755 tool", {"bin", "bin/tool"}),
    ("sed -n -i -e p f g", {"f", "g"}),
    ("sed 's/a/b/' f", set()),
    ("git config --global x y", {"HOME/.gitconfig"}),
    ("git config --get x", set()),
    ("dd if=a of=b", {"b"}),
    ("exec {fd}>log", {"log"}),
    ("ls >&2", set()),
    ("touch -r ref new", {"new"}),
    ("tar czf out.tgz src", {"out.tgz"}),
    ("tar -c -f out.tar src", {"out.tar"}),
    ("curl -sS -o page.html http://x", {"page.html"}),
    ("curl -s http://x", set()),
    ("wget -O f http://x", {"f"}),
    ("rsync -a src/ dest/", {"dest"}),
    ("scp host:file .", {"."}),
    ("scp file host:", set()),
])

def test_write_targets(tmp_path, command, expected):
    got = {t.path for t in write_targets(split_command(command), str(tmp_path), home=str(tmp_path / "HOME"))}
    assert got == {str(tmp_path / e) for e in expected}


@pytest.mark.parametrize("command", ["tar xzf a.tgz", "tar -xf a.tar", "tar --extract -f a", "unzip a.zip",
                                     "wget http://x/y", "curl -O http://x/y"])
def test_unknown_names_are_unknown(tmp_path, command):
    assert None in {t.path for t in write_targets(split_command(command), str(tmp_path))}


# -- Read deny holds for Bash ------------------------------------------------------------------
READ_LEAKS = ["cat secret.txt", "cat < secret.txt", "cat *.txt", "cat secre?.txt", "cat {secret,README}.txt",
              "tail -n 5 *", "grep -r KEY .", "grep -rn KEY", "grep KEY -R", "git diff --no-index /dev/null secret.txt",
              "cd sub && cat ../secret.txt", "cat ./sub/../secret.txt", "cat $F", "cat s[e]cret.txt",
              "grep --file=secret.txt x README.txt", "git show HEAD:secret.txt", "cat \"$(echo secret.txt)\"",
              "head -c 5 < ./secret.txt", "cat 0<secret.txt", "cat {a,b,secret}.txt"]


@pytest.mark.parametrize("command", READ_LEAKS)
def test_read_deny_holds_for_bash(project, command):
    assert decide(project, command).behavior is not ALLOW
    assert decide(project, command, PermissionMode.BYPASS).behavior is DENY


def test_reads_of_other_files_stay_allowed_with_a_deny_rule_in_force(project):
    for command in ("cat README.txt", "grep -r notes sub", "ls *", "cat sub/*.md", "echo secret.txt"):
        assert decide(project, command).behavior is ALLOW, command


# -- code hidden in expansions, and git's repository programs ----------------------------------
@pytest.mark.parametrize("command", ["x='$(touch f)'; echo ${x@P}", "echo ${!x}", "x='a[$(touch f)]'; echo ${b[x]}",
                                     "echo ${x:n}", "echo $[x]", "cat ${x@P}"])
def test_expansions_that_run_code_are_never_auto_allowed(project, command):
    assert decide(project, command).behavior is not ALLOW


GIT_READS = ["git diff", "git show", "git log -p", "git -C sub status", "git log", "git blame README.txt",
             "git --no-pager diff HEAD", "git status --short"]


@pytest.fixture
def repo(project, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")     # the machine's own /etc/gitconfig is not the test's
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    subprocess.run(["git", "init", "-q", str(project)], check=True, capture_output=True)
    return project


# without the Read deny rule: with one, `git show`/`log -p`/`diff HEAD` ask anyway (test_git_reads.py)
NO_READ_DENY = [r for r in ISSUE_RULES if r[0] != "deny"]


@pytest.mark.parametrize("command", GIT_READS)
def test_git_subcommands_running_repo_programs_are_not_auto_allowed(repo, command):
    # issue 12, as issue 25 narrows it: not where the repository's config names a program
    subprocess.run(["git", "-C", str(repo), "config", "core.fsmonitor", "touch pwned"], check=True)
    d = decide(repo, command, rules=NO_READ_DENY)
    assert d.behavior is ASK and "core.fsmonitor" in d.message, d


@pytest.mark.parametrize("command", GIT_READS)
def test_git_subcommands_run_where_no_configuration_names_a_program(repo, command):
    assert decide(repo, command, rules=NO_READ_DENY).behavior is ALLOW


def test_explicit_allow_rules_still_allow_git(project):
    assert decide(project, "git status").behavior is ALLOW          # `Bash(git status)` names it exactly
    assert decide(project, "git branch -a").behavior is ALLOW       # runs no repository program


# -- adversarial: writes that reach a protected path without naming it -------------------------
@pytest.mark.parametrize("command", [
    "rm -rf .git", "rm -r .codeloop", "mv .git .git-old", "cp -r evil/.codeloop .", "chmod -R 777 .git",
    "bash -c 'echo x > .git/config'", "sh -xc \"cd .git/hooks && touch pre-commit\"", "eval 'echo x >.git/config'",
    "bash <<< 'echo x > .git/config'", "CDPATH=.git cd hooks && echo x > pre-commit",
    "export CDPATH=.git; cd hooks; echo x > pre-commit", "HOME=. git config --global core.fsmonitor x",
    "GIT_CONFIG_GLOBAL=.git/config git config --global core.pager x", "ln .git/config hl",
    "curl -so .git/config http://127.0.0.1:9/", "wget -qO .git/hooks/pre-commit http://127.0.0.1:9/",
    "tar cf .git/config src", "rsync -a evil/ .git/hooks/",
    "echo x > hardlink-to-config", "eval \"$CMD\"", "bash -c \"$SCRIPT\"",
])
def test_indirect_writes_to_protected_paths_are_refused_when_bypassing(project, command, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(project / ".cfg"))
    (project / "evil" / ".codeloop").mkdir(parents=True)
    os.link(project / ".git" / "config", project / "hardlink-to-config")
    assert decide(project, command, PermissionMode.BYPASS).behavior is DENY


def test_ordinary_copies_and_removals_stay_allowed_when_bypassing(project):
    (project / "build").mkdir()
    for command in ("cp README.txt .", "cp -r sub .", "rm -rf build", "mv README.txt sub/", "bash -c 'echo x > out'",
                    "ln -s README.txt link"):
        assert decide(project, command, PermissionMode.BYPASS).behavior is ALLOW, command
