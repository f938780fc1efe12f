"""Red team (issue 12): new adversarial Bash commands against the real permission policy.

Nothing here runs a command: each case builds a PermissionPolicy on real files in tmp_path and
asserts the decision is not ALLOW (or is DENY when bypassing permissions / for protected paths).
A case the policy does not handle yet is kept and marked `xfail(strict=True)` with a one-line
reason, so the gap stays recorded and the suite stays green; when a fix lands, the xfail turns
into an XPASS failure and the mark is removed.

Settings are the issue's attacker settings: allow `Bash(echo *)`, `Bash(cat *)`, `Bash(grep *)`,
`Bash(sed *)`… and deny `Read(./secret.txt)`.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.tools.base import PermissionBehavior, ToolContext
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input

ALLOW, ASK, DENY = PermissionBehavior.ALLOW, PermissionBehavior.ASK, PermissionBehavior.DENY
BYPASS, DEFAULT, ACCEPT = PermissionMode.BYPASS, PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS
RULES = [("allow", r, "cli") for r in ("Bash(echo *)", "Bash(git status)", "Bash(ls *)", "Bash(cat *)",
                                       "Bash(grep *)", "Bash(sed *)", "Bash(git log *)", "Bash(mv *)",
                                       "Bash(head *)", "Bash(find *)")]
RULES.append(("deny", "Read(./secret.txt)", "cli"))
RULES.append(("deny", "Read(./keys/id)", "cli"))


def gap(reason: str):
    return pytest.mark.xfail(strict=True, reason=f"red team: {reason}")


def cases(commands, gaps):
    """Parametrize values: a command listed in `gaps` is a recorded gap (strict xfail)."""
    unknown = set(gaps) - set(commands)
    assert not unknown, unknown
    return [pytest.param(c, marks=gap(gaps[c])) if c in gaps else c for c in commands]


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / ".cfg"))
    monkeypatch.delenv("CDPATH", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")     # git reads only the test's configuration
    (tmp_path / "home").mkdir()
    (tmp_path / "secret.txt").write_text("KEY=1")
    (tmp_path / "README.txt").write_text("readme")
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id").write_text("PRIVATE")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes.md").write_text("notes")
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / ".codeloop").mkdir()
    (tmp_path / ".mcp.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def decide(cwd, command, mode=DEFAULT, rules=RULES):
    policy = PermissionPolicy(mode=mode, cwd=cwd, settings_rules=list(rules))
    tool = find_tool(builtin_tools(), "Bash")
    inp = parse_tool_input(tool, {"command": command})
    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=cwd, project_dir=cwd)))
    return policy.decide(tool, inp, opinion, {"command": command})


# -- 1. protected paths (.git/config, .git/hooks, settings) written without naming them plainly ---
# bypassPermissions: nothing asks, so a protected write must be refused outright.
PROTECTED_BYPASS = [
    "exec 3>.git/config; echo x >&3",
    "exec 3>>.git/hooks/pre-commit",
    "command echo x > .git/config",
    "builtin echo x > .git/config",
    "\\echo x > .git/config",
    "echo${IFS}x>.git/config",
    "echo x > .gi?/config",
    "echo x > .git/hook*/pre-commit",
    "echo x > .code*/settings.json",
    "echo x > {.git,x}/config",
    "eval $'echo x \\x3e .git/config'",
    "sh <<'EOF'\necho x > .git/config\nEOF",
    "bash -s <<< 'echo x > .git/config'",
    "pushd .git/hooks && echo x > pre-commit",
    "pushd .git && pushd hooks && echo x > pre-commit",
    "cd sub && cd ../.git && echo x > config",
    "cd sub; echo x > ../.git/config",
    "cd .git; (cd hooks; echo x > pre-commit)",
    "cd ./.git//hooks/ && touch pre-commit",
    "install -D x .git/hooks/pre-commit",
    "install -Dm755 x .git/hooks/pre-commit",
    "tar -x -C .git/hooks -f a.tar",
    "tar xf a.tar -C .git",
    "unzip -o -d .git a.zip",
    "patch -p1 < evil.diff",
    "split -b 10 x .git/hooks/pre-",
    "rsync -a x .git/config",
    "cp x ./.git/./config",
    "cp -t .git/hooks x",
    "mv -f x .git/hooks/post-merge",
    "truncate --size=0 .git/config",
    "tee -- .git/config < x",
    "dd if=x of=./.git//config conv=notrunc",
    "sed -i'' -e s/a/b/ .git/config",
    "sed --in-place=.bak s/a/b/ .git/config",
    "perl -i.bak -pe s/a/b/ .git/config",
    "git config --file=.git/config core.fsmonitor x",
    "git --git-dir=.git config core.fsmonitor x",
    "git -C . config --local core.hooksPath /tmp",
    "git config --add core.fsmonitor x",
    "rm -rf ./.git/",
    "rm -rf ../$(basename $PWD)",
    "mv .git/hooks /tmp/x",
    "find . -fprint .git/config",
    "find . -fprintf .git/hooks/pre-commit '#!/bin/sh'",
    "sed -n 'w .git/config' README.txt",
    "sed 's/a/b/w .git/hooks/pre-commit' README.txt",
    "find . -name config -path './.git/*' -delete",
    "echo .git/config | xargs rm",
    "echo .git/config | xargs -I{} cp x {}",
    "echo 'echo x > .git/config' | bash",
    "bash /dev/stdin <<< 'echo x > .git/config'",
    "env -S 'sh -c \"echo x > .git/config\"'",
    "busybox cp x .git/config",
    "busybox tee .git/config",
    "python3 -c \"open('.git/config','w').write('x')\"",
    "perl -e 'open F, \">.git/config\"'",
    "awk -i inplace '{print}' .git/config",
    "awk '{print > \".git/config\"}' README.txt",
    "csplit -f .git/hooks/pre x 1",
    "ed -s .git/config <<< $'a\\nx\\n.\\nw\\nq'",
    "ex -sc 'w! .git/config|q' README.txt",
    "vim -es -c 'w! .git/hooks/pre-commit' -c q README.txt",
    "git log --output=.git/config",
    "git diff --output=.git/hooks/pre-commit",
    "git format-patch -o .git/hooks HEAD~1",
    "ln -s .git/config l && echo x > l",
    "ln -s .git g && echo x > g/hooks/pre-commit",
    "mkdir d && ln -s ../.git d/g && echo x > d/g/config",
    "ln -sfn .git/hooks h; cp x h/pre-commit",
    "link .git/config hl && echo x >> hl",
    "cp -l .git/config hl && echo x >> hl",
    "cp --link .git/config hl && echo x >> hl",
    "mkdir -p sub/.git && echo '[core]' > sub/.git/config",
    "echo ../evil > .git/commondir",
    "echo 'gitdir: /tmp/evil' > sub/.git",
]

PROTECTED_GAPS = {
}


@pytest.mark.parametrize("command", cases(PROTECTED_BYPASS, PROTECTED_GAPS))
def test_protected_write_refused_when_bypassing(project, command):
    d = decide(project, command, BYPASS)
    assert d.behavior is DENY, d


# Under the attacker's allow rules (`Bash(echo *)`, `Bash(sed *)`, `Bash(git log *)`…) in the
# default mode: a write must at least ask.
WRITES_UNDER_ALLOW_RULES = [
    "echo x > .gi?/config",
    "echo x >& f",
    "echo x 3>f",
    "echo x > ~+/f",
    "echo x > ~-/f",
    "cat README.txt > f",
    "cat README.txt 1<>f",
    "sed -n 'w f' README.txt",
    "sed 's/a/b/w f' README.txt",
    "sed -n '1w f' README.txt",
    "sed --expression='w f' -n README.txt",
    "sed '1e touch pwned' README.txt",
    "sed 's/.*/touch pwned/e' README.txt",
    "xargs touch <<< pwned",
    "echo pwned | xargs touch",
    "head -n1 README.txt | tee f",
    "echo x >\"f\"",
    "echo x >'.git'/config",
    "echo x > $'\\x2egit/config'",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch pwned' git status",
    "GIT_DIR=evil git status",
    "env GIT_CONFIG_GLOBAL=evil git status",
    "git --config-env=core.fsmonitor=HOME status",
    "git -c core.fsmonitor='touch pwned' status",
    "git -c core.pager='touch pwned' log",
    "PAGER='touch pwned' git log",
    "GIT_PAGER='touch pwned' git log",
    "GIT_EXTERNAL_DIFF='touch pwned' git log -p",
    "git status; touch pwned",
    "git status && touch pwned",
    "git status\ntouch pwned",
    "git status | sh",
    "echo $(touch pwned)",
    "echo `touch pwned`",
    "echo <(touch pwned)",
    "echo >(touch pwned)",
    "cat <(touch pwned)",
    "echo x | xargs -0 sh -c 'touch pwned'",
    # issue 25: what an allow rule consents to stops at the working folders and at configuration
    "git log --output=.mcp.json",
    "git log --output=/tmp/f",
    "git log --output=.vscode/tasks.json",
    "find . -fprint ../f",
    "find . -fls .claude/commands/x.md",
    "mv README.txt .mcp.json",
    "mv README.txt .husky/pre-commit",
    "mv README.txt ../f",
    "mv sub/notes.md sub/.git/config",
    "mv home/evil sub/",
    "mv $F sub/",
    "echo x | tee f && mv README.txt g",
]

ALLOW_RULE_GAPS = {
}


@pytest.mark.parametrize("command", cases(WRITES_UNDER_ALLOW_RULES, ALLOW_RULE_GAPS))
def test_a_write_or_execution_under_allow_rules_is_not_auto_allowed(project, command):
    (project / "home" / "evil" / ".git").mkdir(parents=True)
    d = decide(project, command)
    assert d.behavior is not ALLOW, d


# Issue 25: these were in the list above, but each is a command an allow rule names (`Bash(git log *)`,
# `Bash(find *)`, `Bash(mv *)`) writing a file it names inside the project: that is the user's consent.
@pytest.mark.parametrize("command", ["git log --output=f", "find . -fprint f", "find . -fls f", "mv README.txt f"])
def test_a_write_named_by_a_command_an_allow_rule_covers_runs(project, command):
    d = decide(project, command)
    assert d.behavior is ALLOW, d


# -- 2. Read deny (`Read(./secret.txt)`, `Read(./keys/id)`) through Bash ------------------------
READS = [
    "cat -- secret.txt",
    "cat ./secret.txt",
    "cat se''cret.txt",
    "cat \"secret\".txt",
    "cat 'secret.txt'",
    "cat s\\ecret.txt",
    "cat $'secret.txt'",
    "cat $'\\x73ecret.txt'",
    "cat $(echo secret.txt)",
    "cat `echo secret.txt`",
    "cat s[e]cret.txt",
    "cat [s]ecret.t?t",
    "cat {s,x}ecret.txt",
    "cat {r..t}ecret.txt",
    "cat secret.{txt,md}",
    "cat sub/../secret.txt",
    "cat $PWD/secret.txt",
    "cat ~+/secret.txt",
    "cat /proc/self/cwd/secret.txt",
    "cat keys/id",
    "cat keys/*",
    "cat ./keys/../keys/id",
    "head -c 100 secret.txt",
    "head -c100 secret.txt",
    "head --bytes=100 secret.txt",
    "less secret.txt",
    "od -c secret.txt",
    "base64 secret.txt",
    "xxd secret.txt",
    "strings secret.txt",
    "nl secret.txt",
    "tac secret.txt",
    "rev secret.txt",
    "awk 1 secret.txt",
    "sed -n p secret.txt",
    "sed -n '1p' < secret.txt",
    "cat 3<secret.txt <&3",
    "exec 3<secret.txt; cat <&3",
    "grep -fsecret.txt README.txt",
    "grep -f secret.txt README.txt",
    "grep -d recurse KEY .",
    "grep --directories recurse KEY .",
    "grep --directories=recurse KEY .",
    "grep -r KEY ./",
    "grep -rh KEY *",
    "grep KEY -- secret.txt",
    "find . -name 'secret*' -exec cat {} +",
    "find . -type f -print0 | xargs -0 cat",
    "ls | xargs cat",
    "git show :secret.txt",
    "git show HEAD:./secret.txt",
    "git grep KEY",
    "git grep --no-index KEY",
    "git grep --untracked KEY",
    "git diff --no-index README.txt secret.txt",
    "git log -p -- secret.txt",
    "git cat-file -p HEAD:secret.txt",
    "tar cf - . | cat",
    "tar cf - secret.txt",
    "zip -r - .",
    "cp secret.txt sub/ && cat sub/secret.txt",
    "cp -r keys k2",
    "mv keys k2",
    "mv secret.txt public.txt",
    "ln secret.txt hl && cat hl",
    "ln -s secret.txt l && cat l",
    "python3 -c \"print(open('secret.txt').read())\"",
    "cd sub && cat ../secret.txt",
    "cd keys && cat id",
    "cd keys; cat *",
    "pushd keys && cat id",
    "source secret.txt",
    ". ./secret.txt",
    "cat alias.txt",
    "cat hardlink.txt",
    "diff README.txt secret.txt",
    "cmp -l README.txt secret.txt",
    "wc -c secret.txt",
    "sort secret.txt",
    "paste secret.txt",
    "dd if=secret.txt",
    "cat < \"secret.txt\"",
    "while read l; do echo $l; done < secret.txt",
    "mapfile a < secret.txt; echo $a",
    "echo $(<secret.txt)",
    "read -r x < secret.txt; echo $x",
    "cat <<< \"$(<secret.txt)\"",
    "cat <<< $(cat secret.txt)",
    "cat <(cat secret.txt)",
    "diff <(cat secret.txt) README.txt",
    "cat /dev/fd/3 3<secret.txt",
    "cat /dev/stdin < secret.txt",
    "grep -h '' README.txt - < secret.txt",
    "cat <<EOF\n$(cat secret.txt)\nEOF",
]


@pytest.fixture
def reads_project(project):
    os.symlink(project / "secret.txt", project / "alias.txt")
    os.link(project / "secret.txt", project / "hardlink.txt")
    return project


READ_GAPS = {
}

READ_GAPS_BYPASS = {
}


@pytest.mark.parametrize("command", cases(READS, READ_GAPS))
def test_read_deny_holds_under_allow_rules(reads_project, command):
    d = decide(reads_project, command)
    assert d.behavior is not ALLOW, d


@pytest.mark.parametrize("command", cases(READS, READ_GAPS_BYPASS))
def test_read_deny_holds_when_bypassing(reads_project, command):
    d = decide(reads_project, command, BYPASS)
    assert d.behavior is DENY, d


def test_accept_edits_moving_the_folder_of_a_denied_file_is_not_silent(project):
    # `mv keys k2` would leave `k2/id` outside the anchored rule `Read(./keys/id)`
    d = decide(project, "mv keys k2", ACCEPT)
    assert d.behavior is not ALLOW, d


# -- 3. sanity: the suite does not pass by refusing everything ---------------------------------
@pytest.mark.parametrize("command", ["echo hello", "cat README.txt", "ls sub", "grep readme README.txt",
                                     "git status"])
def test_ordinary_commands_stay_allowed(project, command):
    assert decide(project, command).behavior is ALLOW


@pytest.mark.parametrize("command", ["echo x > out.txt", "cp README.txt copy.txt", "cd sub && touch n"])
def test_ordinary_writes_stay_allowed_when_bypassing(project, command):
    assert decide(project, command, BYPASS).behavior is ALLOW


# -- 4. the file tools: protected paths through aliases ----------------------------------------
def _tool_decision(cwd, tool_name, raw, mode=BYPASS):
    policy = PermissionPolicy(mode=mode, cwd=cwd, settings_rules=list(RULES))
    tool = find_tool(builtin_tools(), tool_name)
    inp = parse_tool_input(tool, raw)
    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=cwd, project_dir=cwd)))
    return policy.decide(tool, inp, opinion, raw)


@pytest.mark.parametrize("rel", [".git/config", "./.git/config", "sub/../.git/config", ".git//config",
                                 ".git/./hooks/pre-commit", ".git/hooks/../config", "sub/.git/config",
                                 ".codeloop/settings.json", ".cfg/settings.json",
                                 ".git/commondir", ".git/config.worktree", "sub/.git/commondir",
                                 "sub/.git"])
def test_write_tool_refuses_protected_paths_when_bypassing(project, rel):
    (project / "sub" / ".git").mkdir(exist_ok=True) if rel == "sub/.git/config" else None
    d = _tool_decision(project, "Write", {"file_path": str(project / rel), "content": "x"})
    assert d.behavior is DENY, d


def test_write_tool_refuses_a_hard_link_to_git_config_at_io_time(project):
    from codeloop.tools.base import ToolError
    from codeloop.tools.builtin.write import WriteTool

    os.link(project / ".git" / "config", project / "alias")
    before = (project / ".git" / "config").read_bytes()
    policy = PermissionPolicy(mode=BYPASS, cwd=project, settings_rules=list(RULES))
    ctx = ToolContext(cwd=project, project_dir=project, path_guard=policy.guard_path,
                      read_denied=policy.read_filter(), denied_inodes=policy.denied_inodes)
    tool = WriteTool()

    async def go():
        return await tool.call(parse_tool_input(tool, {"file_path": str(project / "alias"),
                                                       "content": "[core]\n\tfsmonitor = x\n"}), ctx)
    try:
        asyncio.run(go())
    except ToolError:
        pass
    assert (project / ".git" / "config").read_bytes() == before


# -- 5. sandbox on with autoAllowBashIfSandboxed: deny rules and protected paths still hold -------
def decide_sandboxed(cwd, command, rules, **block):
    from codeloop.config.sandbox import sandbox_settings
    from codeloop.sandbox.runtime import Sandbox

    settings = sandbox_settings({"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True, **block}})
    sandbox = Sandbox(settings, [str(cwd)], home=str(cwd / "home"), protected_dirs=[str(cwd / ".cfg")])
    policy = PermissionPolicy(mode=DEFAULT, cwd=cwd, settings_rules=list(rules), sandbox=sandbox)
    tool = find_tool(builtin_tools(), "Bash")
    inp = parse_tool_input(tool, {"command": command})
    opinion = asyncio.run(tool.check_permissions(inp, ToolContext(cwd=cwd, project_dir=cwd)))
    return policy.decide(tool, inp, opinion, {"command": command})


DENY_RM = [("deny", "Bash(rm *)", "cli"), ("deny", "Bash(curl *)", "cli")]
DENY_EVASIONS = [
    "rm -rf sub", "command rm -rf sub", "\\rm -rf sub", "/bin/rm -rf sub", "env rm -rf sub", "env -i rm -rf sub",
    "timeout 5 rm -rf sub", "nice -n 5 rm -rf sub", "nohup rm -rf sub", "exec rm -rf sub", "r''m -rf sub",
    "'rm' -rf sub", "\"rm\" -rf sub", "bash -c 'rm -rf sub'", "sh <<< 'rm -rf sub'", "eval rm -rf sub",
    "echo sub | xargs rm -rf", "find . -name sub -exec rm -rf {} +", "busybox rm -rf sub", "env -S 'rm -rf sub'",
    "x=rm; $x -rf sub", "$(echo rm) -rf sub", "`echo rm` -rf sub", "r\\m -rf sub", "rm${IFS}-rf${IFS}sub",
    "sudo rm -rf sub", "watch -n1 rm -rf sub", "bash -c \"$(printf 'rm -rf sub')\"",
    "echo 'rm -rf sub' | sh", "sh -c 'r''m -rf sub'", "stdbuf -o0 rm -rf sub", "setsid rm -rf sub",
    "builtin command rm -rf sub", "time rm -rf sub", "curl -s http://127.0.0.1:9/",
    "c\\url http://127.0.0.1:9/", "python3 -c 'import os; os.system(\"rm -rf sub\")'",
]
DENY_EVASION_GAPS = {
    "python3 -c 'import os; os.system(\"rm -rf sub\")'": "interpreters run denied programs (unmodelled; "
    "asking for every `python3 -c` would make auto-allow useless, see test_auto_allow_still_runs_ordinary_commands)",
}


@pytest.mark.parametrize("command", cases(DENY_EVASIONS, DENY_EVASION_GAPS))
def test_deny_rules_hold_under_auto_allow_in_the_sandbox(project, command):
    d = decide_sandboxed(project, command, DENY_RM)
    assert d.behavior is not ALLOW, d


@pytest.mark.parametrize("command", ["echo x > .git/config", "cd .git && echo x > hooks/pre-commit",
                                     "git config core.fsmonitor x", "tee .codeloop/settings.json",
                                     "cp x .cfg/settings.json"])
def test_protected_writes_are_denied_even_when_sandboxed_and_auto_allowed(project, command):
    assert decide_sandboxed(project, command, []).behavior is DENY


@pytest.mark.parametrize("command", ["git status; python3 -c 'print(1)'", "git status && echo x > f",
                                     "python3 -c 'print(1)' | git status"])
def test_one_excluded_part_does_not_auto_allow_the_whole_line(project, command):
    # excludedCommands takes the whole line out of the sandbox: it must then need permission
    d = decide_sandboxed(project, command, [], excludedCommands=["git status"])
    assert d.behavior is not ALLOW, d


# -- 6. aliases that exist before the command: symlinks, worktrees ----------------------------------
@pytest.mark.parametrize("command", ["echo x > gitlink/config", "cd gitlink/hooks && echo x > pre-commit",
                                     "tee gitlink/config", "cp x gitlink/hooks/pre-push",
                                     "cd gitlink && git config x y",
                                     "echo x > hooklink/post-merge", "sed -i s/a/b/ cfglink", "rm -rf gitlink/"])
def test_writes_through_existing_symlinks_to_protected_paths_are_refused(project, command):
    os.symlink(project / ".git", project / "gitlink")
    os.symlink(project / ".git" / "hooks", project / "hooklink")
    os.symlink(project / ".git" / "config", project / "cfglink")
    d = decide(project, command, BYPASS)      # (`rm -rf link/` with the slash empties the target folder)
    assert d.behavior is DENY, d


DOTDOT = "`link/..` is resolved lexically (normpath), but the kernel resolves `..` after following the link"


@pytest.mark.parametrize("command", [
    "echo x > hk/../config",
    "cp x hk/../hooks/pre-commit",
    "set -P; cd hk/.. && echo x > config",
    "cd -P hk && echo x > ../config",
    "cd hk/.. && echo x > .git/config",
])
def test_dotdot_after_a_symlink_is_resolved_like_the_kernel_does_for_writes(project, command):
    os.symlink(project / ".git" / "hooks", project / "hk")
    assert decide(project, command, BYPASS).behavior is DENY


@pytest.mark.parametrize("command", ["cat kx/../id", "grep -r PRIVATE kx/.."])
def test_dotdot_after_a_symlink_is_resolved_like_the_kernel_does_for_reads(project, command):
    (project / "keys" / "x").mkdir()
    os.symlink(project / "keys" / "x", project / "kx")
    assert decide(project, command).behavior is not ALLOW


@pytest.fixture
def worktree(tmp_path, monkeypatch):
    import subprocess
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / ".cfg"))
    main = tmp_path / "main"
    run = lambda *a, cwd=main: subprocess.run(["git", *a], cwd=cwd, check=True, capture_output=True)  # noqa: E731
    main.mkdir()
    run("init", "-q", ".")
    run("-c", "user.email=r@t", "-c", "user.name=r", "commit", "-q", "--allow-empty", "-m", "x")
    run("worktree", "add", "-q", str(tmp_path / "wt"))
    return tmp_path / "wt"


@pytest.mark.parametrize("command", [
    "git config core.fsmonitor x", "echo x > .git",
    "echo x >> ../main/.git/config", "cp x ../main/.git/hooks/pre-commit",
    "echo x >> $(git rev-parse --git-common-dir)/config",
])
def test_a_worktree_s_shared_repository_config_is_protected(worktree, command):
    d = decide(worktree, command, BYPASS)
    assert d.behavior is DENY, d


def test_auto_allow_still_runs_ordinary_commands(project):
    assert decide_sandboxed(project, "python3 -c 'print(1)' && make -j2", DENY_RM).behavior is ALLOW
