"""An untrusted repository's prompt files (issue 25, item 6): CLAUDE.md, CLAUDE.local.md,
.claude/CLAUDE.md, nested CLAUDE.md and output styles that are links to secrets are skipped with
one warning; links inside the project and the user's own linked files still work."""

from __future__ import annotations

import asyncio
import os

import pytest

from codeloop.context.memory import NestedMemory
from codeloop.context.output_styles import resolve_output_style, style_dirs
from codeloop.context.prompt import context_loader, instruction_files, user_context
from codeloop.permissions.project_files import ProjectFiles

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A cloned repository, a home folder with secrets and the user's own config folder."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    repo = tmp_path / "clone"
    (repo / ".git").mkdir(parents=True)
    return repo, home / ".aws" / "credentials", tmp_path / "cfg"


def texts(found):
    return "\n".join(t for _, t in found)


@pytest.mark.parametrize("name", ["CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md"])
def test_an_instruction_file_linking_to_a_secret_is_not_sent(repo, name):
    root, secret, cfg = repo
    (root / name).parent.mkdir(exist_ok=True)
    (root / name).symlink_to(secret)
    (root / "README.md").write_text("x")
    files = ProjectFiles(root)
    found = instruction_files(root, cfg, files=files)
    assert SECRET not in texts(found) and found == []
    [warning] = files.drain()
    assert str(root / name) in warning and "outside the project" in warning


def test_instructions_linking_to_proc_environ_are_not_sent(repo, monkeypatch):
    root, _, cfg = repo
    monkeypatch.setenv("CANARY_TOKEN", "env-canary-123")
    (root / "CLAUDE.md").symlink_to("/proc/self/environ")
    files = ProjectFiles(root)
    ctx = user_context(root, cfg, files=files)
    assert "claudeMd" not in ctx and "env-canary-123" not in str(ctx)
    assert "a system path" in files.drain()[0]


def test_a_link_inside_the_project_still_works(repo):
    root, _, cfg = repo
    (root / "docs").mkdir()
    (root / "docs" / "AGENTS.md").write_text("use tabs")
    (root / "CLAUDE.md").symlink_to("docs/AGENTS.md")
    sub = root / "pkg"
    sub.mkdir()
    (sub / "CLAUDE.md").symlink_to("../docs/AGENTS.md")   # started in a subfolder: the repo is the project
    files = ProjectFiles(sub)
    found = instruction_files(sub, cfg, files=files)
    assert [p for p, _ in found] == [root / "CLAUDE.md", sub / "CLAUDE.md"]
    assert texts(found).count("use tabs") == 2 and files.drain() == []


def test_the_users_own_linked_claude_md_still_works(repo, tmp_path):
    root, _, cfg = repo
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "global.md").write_text("my global rule")
    (tmp_path / "home" / ".claude").mkdir()
    (tmp_path / "home" / ".claude" / "CLAUDE.md").symlink_to(dotfiles / "global.md")
    cfg.mkdir()
    (cfg / "CLAUDE.md").symlink_to(dotfiles / "global.md")
    files = ProjectFiles(root)
    found = instruction_files(root, cfg, files=files)
    assert [p for p, _ in found] == [cfg / "CLAUDE.md", tmp_path / "home" / ".claude" / "CLAUDE.md"]
    assert texts(found).count("my global rule") == 2 and files.drain() == []


def test_started_in_home_the_users_claude_md_is_read_once_as_theirs(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "dotfiles.md").write_text("mine")
    (home / ".claude" / "CLAUDE.md").symlink_to(tmp_path / "dotfiles.md")   # outside ~, and still theirs
    files = ProjectFiles(home)
    found = instruction_files(home, tmp_path / "cfg", files=files)
    assert [p for p, _ in found] == [home / ".claude" / "CLAUDE.md"] and files.drain() == []


def test_a_huge_claude_md_is_bounded(repo):
    root, _, cfg = repo
    with open(root / "CLAUDE.md", "wb") as f:
        f.truncate(50 << 20)
    files = ProjectFiles(root, limit=10_000)
    [(_, text)] = instruction_files(root, cfg, files=files)
    assert len(text) < 11_000 and "first 10,000 bytes" in files.drain()[0]


def test_a_fifo_claude_md_does_not_hang_the_loader(repo):
    root, _, cfg = repo
    os.mkfifo(root / "CLAUDE.local.md")
    (root / "CLAUDE.md").symlink_to("CLAUDE.local.md")   # a link makes it a candidate: judged when read
    files = ProjectFiles(root)
    assert instruction_files(root, cfg, files=files) == []
    assert "not a regular file" in files.drain()[0]


def test_bare_reads_no_instruction_file(repo):
    root, secret, cfg = repo
    (root / "CLAUDE.md").symlink_to(secret)
    files = ProjectFiles(root)
    _, ctx = context_loader(root, cfg, claude_md=False, files=files)()
    assert "claudeMd" not in ctx and files.drain() == []


def _attach(memory: NestedMemory, read: list[str]):
    async def go():
        q = memory.start()
        await q.prefetch.task
        try:
            return q.take(read)
        finally:
            q.close()
    return asyncio.run(go())


def test_a_nested_claude_md_linking_to_a_secret_is_not_attached(repo):
    root, secret, _ = repo
    (root / "api").mkdir()
    (root / "api" / "handler.py").write_text("x")
    (root / "api" / "CLAUDE.md").symlink_to(secret)
    (root / "web").mkdir()
    (root / "web" / "CLAUDE.local.md").symlink_to("/proc/self/environ")
    (root / "web" / "app.ts").write_text("x")
    files = ProjectFiles(root)
    memory = NestedMemory(root, files)
    out = _attach(memory, [str(root / "api" / "handler.py"), str(root / "web" / "app.ts")])
    assert out == [] and memory.attached == {}
    warnings = files.drain()
    assert len(warnings) == 2 and all("nested instructions" in w for w in warnings)
    assert _attach(memory, [str(root / "api" / "handler.py")]) == [] and files.drain() == []   # said once


def test_a_nested_claude_md_linking_inside_the_project_is_attached(repo):
    root, _, _ = repo
    (root / "docs").mkdir()
    (root / "docs" / "api-rules.md").write_text("validate every input")
    (root / "api").mkdir()
    (root / "api" / "handler.py").write_text("x")
    (root / "api" / "CLAUDE.md").symlink_to("../docs/api-rules.md")
    files = ProjectFiles(root)
    [(att, message)] = _attach(NestedMemory(root, files), [str(root / "api" / "handler.py")])
    assert att["path"] == str(root / "api" / "CLAUDE.md") and "validate every input" in message.text
    assert files.drain() == []


def test_an_output_style_linking_to_a_secret_is_not_used(repo, tmp_path):
    root, secret, _ = repo
    styles = root / ".claude" / "output-styles"
    styles.mkdir(parents=True)
    (styles / "pirate.md").symlink_to(secret)
    (tmp_path / "mine").mkdir()
    (root / "style-src.md").write_text("---\nname: terse\n---\nAnswer in one line.")
    (styles / "terse.md").symlink_to("../../style-src.md")   # inside the project: fine
    files = ProjectFiles(root)
    style, warnings = resolve_output_style("pirate", style_dirs(root, [tmp_path / "mine"]), files)
    assert style is None and SECRET not in str(warnings)
    [skipped] = files.drain()
    assert "output style" in skipped and "outside the project" in skipped
    style, _ = resolve_output_style("terse", style_dirs(root, [tmp_path / "mine"]), files)
    assert style is not None and style.instructions == "Answer in one line."


def test_an_output_styles_folder_linking_out_is_not_listed_and_user_styles_follow_links(repo, tmp_path):
    root, secret, _ = repo
    (root / ".claude").mkdir()
    (root / ".claude" / "output-styles").symlink_to(secret.parent)
    user = tmp_path / "userdir"
    (user / "output-styles").mkdir(parents=True)
    (tmp_path / "shared-style.md").write_text("Be brief.")
    (user / "output-styles" / "brief.md").symlink_to(tmp_path / "shared-style.md")   # the user's own link
    style, warnings = resolve_output_style("brief", style_dirs(root, [user]))          # no reader: warnings returned
    assert style is not None and style.instructions == "Be brief."
    assert any("output styles" in w and "outside the project" in w for w in warnings)
