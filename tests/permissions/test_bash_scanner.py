"""The shell scanner, wrapper stripping and the built-in read-only set (permissions/bash.py)."""

from __future__ import annotations

import pytest

from codeloop.permissions.bash import (Redirect, inner_commands, is_read_only,
                                       is_read_only_command, launcher_name, split_command,
                                       strip_wrappers, unwrap, write_targets, writes_file)


def argvs(cmd: str) -> list[list[str]]:
    return [p.argv for p in split_command(cmd).parts]


# -- splitting ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd, expected", [
    ("git status", [["git", "status"]]),
    ("a && b || c; d | e |& f & g", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"]]),
    ("a\nb\n\nc", [["a"], ["b"], ["c"]]),
    ("echo 'a b' \"c d\"", [["echo", "a b", "c d"]]),
    ("echo 'it''s'", [["echo", "its"]]),
    ('echo "a \\"q\\" \\$x \\\\ \\n"', [["echo", 'a "q" $x \\ \\n']]),
    ("echo a\\ b \\; c", [["echo", "a b", ";", "c"]]),
    ("echo $'\\x72m\\t\\'q\\''", [["echo", "rm\t'q'"]]),
    ("$'\\x72\\x6d' x", [["rm", "x"]]),
    ("echo $'\\162m' $'\\u0041'", [["echo", "rm", "A"]]),
    ("echo a # comment; rm x", [["echo", "a"]]),
    ("echo a#b", [["echo", "a#b"]]),
    ("# only a comment\nls", [["ls"]]),
    ("ls \\\n  -la", [["ls", "-la"]]),
    ("r\\\nm x", [["rm", "x"]]),
    ('e""cho x', [["echo", "x"]]),
    ("echo \"a;b|c&&d\"", [["echo", "a;b|c&&d"]]),
])
def test_split_words_and_operators(cmd, expected):
    result = split_command(cmd)
    assert argvs(cmd) == expected
    assert result.parse_error is None and not result.unbalanced


def test_parts_keep_raw_text_and_env():
    part, = split_command("  FOO=1 BAR='x y' rm -rf 'a b'  ").parts
    assert part.argv == ["rm", "-rf", "a b"]
    assert part.env == {"FOO": "1", "BAR": "x y"}
    assert part.raw == "FOO=1 BAR='x y' rm -rf 'a b'"
    assert part.raw_words == ["rm", "-rf", "'a b'"]


def test_assignment_after_command_is_an_argument():
    part, = split_command("make CC=gcc").parts
    assert part.argv == ["make", "CC=gcc"] and part.env == {}


@pytest.mark.parametrize("cmd, inner", [
    ("echo $(rm x)", ["rm", "x"]),
    ("echo `rm x`", ["rm", "x"]),
    ('echo "$(rm x)"', ["rm", "x"]),
    ('echo "`rm x`"', ["rm", "x"]),
    ("echo $(echo $(rm deep))", ["rm", "deep"]),
    ('echo "$(echo "$(rm deep)")"', ["rm", "deep"]),
    ("echo ${X:-$(rm x)}", ["rm", "x"]),
    ("cat <(rm x)", ["rm", "x"]),
    ("tee >(rm x)", ["rm", "x"]),
    ("echo $((1 + $(rm x)))", ["rm", "x"]),
    ("X=$(rm x) ls", ["rm", "x"]),
])
def test_substitutions_are_flagged_and_recursed(cmd, inner):
    result = split_command(cmd)
    assert result.has_command_substitution
    assert inner in argvs(cmd)


def test_single_quotes_hide_substitution():
    result = split_command("echo '$(rm x)' '`rm y`'")
    assert not result.has_command_substitution
    assert argvs("echo '$(rm x)' '`rm y`'") == [["echo", "$(rm x)", "`rm y`"]]


@pytest.mark.parametrize("cmd, inner", [
    ("(rm x)", ["rm", "x"]),
    ("{ rm x; }", ["rm", "x"]),
    ("ls && (cd a; rm x) | cat", ["rm", "x"]),
    ("f() { rm x; }", ["rm", "x"]),
])
def test_subshells_and_groups(cmd, inner):
    result = split_command(cmd)
    assert result.has_subshell
    assert inner in argvs(cmd)


def test_control_flow_keywords_do_not_hide_commands():
    assert ["rm", "x"] in argvs("if true; then rm x; fi")
    assert ["rm", "$f"] in argvs("for f in *; do rm $f; done")
    assert ["rm", "x"] in argvs("! rm x")


@pytest.mark.parametrize("cmd", [
    "echo 'open", 'echo "open', "echo `open", "echo $(open", "(ls", "echo ${x",
    "ls )", "echo $'open", "cat <<EOF\nno end",
])
def test_unbalanced(cmd):
    result = split_command(cmd)
    assert result.unbalanced and result.parse_error


@pytest.mark.parametrize("cmd", ["&& ls", "ls &&", "ls | | cat", "ls >"])
def test_syntax_errors(cmd):
    assert split_command(cmd).parse_error


def test_redirections_removed_from_argv_and_recorded():
    part, = split_command("ls -l > out 2>&1 >> log 2>/dev/null &> all >| clob < in <<< here 3>x").parts
    assert part.argv == ["ls", "-l"]
    assert part.redirects == [
        Redirect(">", "out"), Redirect("2>&", "1"), Redirect(">>", "log"),
        Redirect("2>", "/dev/null"), Redirect("&>", "all"), Redirect(">|", "clob"),
        Redirect("<", "in"), Redirect("<<<", "here"), Redirect("3>", "x")]


def test_redirect_without_space_and_fd_words():
    part, = split_command("echo 2 >out 2>err").parts
    assert part.argv == ["echo", "2"]
    assert part.redirects == [Redirect(">", "out"), Redirect("2>", "err")]


@pytest.mark.parametrize("redirect, writes", [
    (Redirect(">", "f"), True), (Redirect(">>", "f"), True), (Redirect("&>", "f"), True),
    (Redirect(">|", "f"), True), (Redirect("2>", "f"), True), (Redirect(">&", "f"), True),
    (Redirect(">", "/dev/null"), False), (Redirect("2>&", "1"), False),
    (Redirect(">&", "2"), False), (Redirect("<", "f"), False), (Redirect("<<<", "x"), False),
    (Redirect("2>&", "-"), False),
])
def test_writes_file(redirect, writes):
    assert writes_file(redirect) is writes


def test_write_targets_resolve_against_cwd(tmp_path):
    part, = split_command("echo > a/../b.txt 2>/dev/null >> $HOME/x").parts
    assert write_targets(part, str(tmp_path)) == [str(tmp_path / "b.txt"), None]


def test_heredoc_body_is_skipped_and_recorded():
    result = split_command("cat <<EOF > out\nrm x; ls\nEOF\necho done")
    assert result.has_heredoc
    assert argvs("cat <<EOF > out\nrm x; ls\nEOF\necho done") == [["cat"], ["echo", "done"]]
    assert result.parts[0].heredocs == ["rm x; ls"]


def test_unquoted_heredoc_body_substitutions_are_parts():
    result = split_command("cat <<EOF\n$(rm x)\nEOF")
    assert result.has_command_substitution and ["rm", "x"] in argvs("cat <<EOF\n$(rm x)\nEOF")
    quoted = split_command("cat <<'EOF'\n$(rm x)\nEOF")
    assert not quoted.has_command_substitution


def test_dash_heredoc_strips_tabs():
    result = split_command("cat <<-END\n\tbody\n\tEND\nls")
    assert argvs("cat <<-END\n\tbody\n\tEND\nls") == [["cat"], ["ls"]]
    assert result.parse_error is None


def test_dynamic_words():
    part, = split_command("find $DIR *.py '*.py' \"$X\" plain").parts
    assert part.dynamic == frozenset({1, 2, 4})


# -- wrappers and launchers -----------------------------------------------------------------------
@pytest.mark.parametrize("argv, expected", [
    (["timeout", "5", "rm", "x"], ["rm", "x"]),
    (["timeout", "-s", "KILL", "--preserve-status", "5s", "rm"], ["rm"]),
    (["nice", "-n", "10", "rm"], ["rm"]),
    (["nice", "rm"], ["rm"]),
    (["nohup", "rm"], ["rm"]),
    (["stdbuf", "-oL", "-e", "0", "rm"], ["rm"]),
    (["env", "-i", "A=1", "B=2", "rm", "x"], ["rm", "x"]),
    (["time", "-p", "rm"], ["rm"]),
    (["command", "rm"], ["rm"]),
    (["command", "-v", "rm"], ["command", "-v", "rm"]),
    (["builtin", "echo"], ["echo"]),
    (["exec", "rm"], ["rm"]),
    (["nohup", "nice", "timeout", "1", "env", "rm"], ["rm"]),
    (["/usr/bin/timeout", "5", "rm"], ["rm"]),
    (["env"], ["env"]),
    (["xargs", "rm"], ["xargs", "rm"]),
])
def test_strip_wrappers(argv, expected):
    assert strip_wrappers(argv) == expected


def test_unwrap_reports_env_and_unknown_options():
    assert unwrap(["env", "LD_PRELOAD=x", "ls"]).env == {"LD_PRELOAD": "x"}
    assert unwrap(["timeout", "--bogus", "5", "rm"]).opaque == "timeout"
    assert unwrap(["env", "-S", "rm x"]).opaque == "env"


@pytest.mark.parametrize("argv, name", [
    (["xargs", "rm"], "xargs"), (["sh", "-c", "x"], "sh"), (["bash", "s.sh"], "bash"),
    (["eval", "x"], "eval"), (["sudo", "ls"], "sudo"), ([".", "f"], "."),
    (["find", ".", "-exec", "rm", "{}", ";"], "find"), (["find", ".", "-delete"], "find"),
    (["timeout", "5", "xargs", "rm"], "xargs"), (["/bin/bash", "-c", "x"], "bash"),
    (["env", "-S", "rm x"], "env"), (["find", ".", "-name", "x"], None), (["ls"], None),
])
def test_launcher_name(argv, name):
    assert launcher_name(argv) == name


def test_inner_commands_see_through_launchers():
    def inner(cmd):
        return inner_commands(split_command(cmd).parts[-1])
    assert ["rm", "x"] in inner("sh -c 'rm x'")
    assert ["rm", "y"] in inner("bash -c 'ls; rm y'")
    assert ["rm", "x"] in inner("sudo -u root rm x")
    assert ["rm", "{}", ";"] in inner("find . -exec rm {} \\;")
    assert ["rm", "x"] in inner("sudo sh -c 'timeout 3 rm x'")
    assert ["rm", "x"] in inner("bash <<< 'rm x'")
    assert inner("ls -la") == []


# -- read-only set ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", [
    "ls -la", "cat a b", "head -5 f", "tail -f log", "wc -l f", "grep -rn x .", "rg foo",
    "find . -name '*.py'", "pwd", "echo hi", "printf '%s' x", "which python", "date",
    "file x", "stat x", "du -sh .", "df -h", "tree -L 2", "sort f", "uniq f", "diff a b",
    "git branch", "git branch -a -v", "git rev-parse HEAD", "git remote -v",
    "git config --get user.name", "git config --list", "sed -n '1,5p' f", "sed -n -e 10p f", "true", "test -f x",
    "[ -f x ]", "env", "ls > /dev/null 2>&1", "timeout 5 cat x", "ls *.py",
    "(ls; pwd)",
])
def test_read_only(cmd):
    assert is_read_only(cmd)


# Issue 12: these run programs a repository's config names (core.fsmonitor, diff.external, textconv,
# gpg.program), so they are read-only only when the sandbox contains them.
@pytest.mark.parametrize("cmd", [
    "git status", "git diff HEAD", "git log --oneline", "git show HEAD", "git ls-files", "git blame f",
    "git -C sub status", "git --no-pager log", "git status && git diff", "git log --oneline | head -5",
])
def test_git_repo_programs_read_only_only_when_sandboxed(cmd):
    assert not is_read_only(cmd)
    assert is_read_only(cmd, repo_programs_ok=True)


@pytest.mark.parametrize("cmd", [
    "rm x", "find . -exec rm {} ;", "find . -delete", "find . -fprint out", "find . -ok x ;",
    "find *", "sort -o out f", "sort -ro out f", "sort --output=o f",
    "sort --compress-program=sh f", "uniq in out", "tree -o out", "rg --pre=sh x",
    "printf -v var x", "date -s now", "file -C -m m", "git -c core.pager=evil status",
    "git --exec-path=/tmp status", "git --git-dir=/tmp/x log", "git log --output=f",
    "git diff --output=f", "git branch -d x", "git branch -D x", "git branch -m a b",
    "git branch newbranch", "git branch --delete x", "git push", "git commit -m x",
    "git config user.name x", "git remote add o u", "git $SUB", "sed -i s/a/b/ f",
    "sed s/a/b/ f", "sed -n '1w out' f", "sed -n 'e rm x' f", "sed -n -f script f",
    "echo hi > f", "cat a >> b", "ls 2> err", "./ls", "/tmp/ls", "$CMD", "echo $(ls)",
    "cat <<EOF\nx\nEOF", "cat <(ls)", "echo 'open", "LD_PRELOAD=x.so ls", "PATH=/tmp ls",
    "PATH=/tmp", "env LD_PRELOAD=x ls", "env -S 'ls'", "xargs ls", "ls; rm x",
    "sh -c ls", "command -v ls", "less f", "",
])
def test_not_read_only(cmd):
    assert not is_read_only(cmd)


def test_is_read_only_command_on_parts():
    parts = split_command("ls > out; cat x").parts
    assert [is_read_only_command(p) for p in parts] == [False, True]
