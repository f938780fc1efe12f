"""System prompt, environment block and CLAUDE.md user context."""

import datetime as dt
import subprocess

from codeloop.context.prompt import (build_system_prompt, environment_block, git_branch, instruction_files,
                                     user_context, user_context_message)


def test_environment_block_with_git_branch(tmp_path):
    subprocess.run(["git", "init", "-q", "-b", "feature-x", str(tmp_path)], check=True)
    sub = tmp_path / "pkg"
    sub.mkdir()
    block = environment_block(sub, today=dt.date(2026, 12, 2))
    assert f"Working directory: {sub}" in block and "Is directory a git repo: Yes" in block
    assert "Current git branch: feature-x" in block and "Today's date: 2026-12-02" in block
    assert "Platform: linux" in block


def test_environment_block_outside_git(tmp_path):
    block = environment_block(tmp_path)
    assert "Is directory a git repo: No" in block and "git branch" not in block


def test_detached_head(tmp_path):
    git = tmp_path / ".git"
    git.mkdir()
    (git / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert git_branch(tmp_path) == "(detached at 0123456789ab)"


def test_a_hostile_git_head_puts_no_file_text_in_the_prompt_and_never_hangs(tmp_path):
    import os

    secret = tmp_path / "credentials"
    secret.write_text("ref: [default] aws_secret_access_key=abc\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").symlink_to(secret)
    assert git_branch(repo) is None                              # not a branch name: nothing is shown
    (repo / ".git" / "HEAD").unlink()
    (repo / ".git" / "HEAD").write_text("AKIAIOSFODNN7EXAMPLE-not-a-commit\n")
    assert git_branch(repo) is None
    (repo / ".git" / "HEAD").unlink()
    os.mkfifo(repo / ".git" / "HEAD")                            # nobody writes: must not block
    assert git_branch(repo) is None
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (repo / ".git" / "HEAD").unlink()
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/topic/x-1\n")
    (worktree / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n")   # outside: fine
    assert git_branch(worktree) == "topic/x-1"
    (worktree / ".git").write_text("gitdir: a\0b\n")                                     # no crash
    assert git_branch(worktree) is None


def test_instruction_files_order_root_first_local_after_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "CLAUDE.md").write_text("global rule")
    root = tmp_path / "repo"
    child = root / "app"
    child.mkdir(parents=True)
    (root / "CLAUDE.md").write_text("root rule")
    (child / "CLAUDE.md").write_text("child rule")
    (child / "CLAUDE.local.md").write_text("my local rule")
    (child / ".claude").mkdir()
    (child / ".claude" / "CLAUDE.md").write_text("dot-claude rule")
    texts = [t for _, t in instruction_files(child, cfg)]
    order = [next(r for r in ("global", "root", "child", "dot-claude", "my local") if r + " rule" in t) for t in texts]
    assert order == ["global", "root", "child", "dot-claude", "my local"]
    ctx = user_context(child, cfg, today=dt.date(2026, 1, 2))
    assert "IMPORTANT: These instructions OVERRIDE" in ctx["claudeMd"] and "root rule" in ctx["claudeMd"]
    assert ctx["currentDate"] == "Today's date is 2026-01-02."
    msg = user_context_message(ctx)
    assert msg.is_meta and msg.text.startswith("<system-reminder>") and "# claudeMd" in msg.text


def test_no_instructions_means_no_claude_md_section(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert "claudeMd" not in user_context(tmp_path, tmp_path / "cfg")


def test_custom_and_appended_system_prompt(tmp_path):
    default = build_system_prompt(tmp_path)
    assert default[0].startswith("You are codeloop")
    custom = build_system_prompt(tmp_path, custom="You are a pirate.", append="Always say arr.")
    assert custom[0] == "You are a pirate." and custom[-1] == "Always say arr."
    assert any("<env>" in part for part in custom)
