"""Reading a project's prompt files (issue 25, item 6): no link out of the project, no system
path, no FIFO or device, no hard link, bounded size, a swap during the open refused — and the
legitimate links (inside the project, the user's own files) still read."""

from __future__ import annotations

import os
import threading

import pytest

from codeloop.permissions import project_files as pf
from codeloop.permissions.project_files import ProjectFiles, project_root

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- hunter2"


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """A repository `proj` (with .git), a secret outside it, and a home folder elsewhere."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "src").mkdir()
    return proj, home / ".ssh" / "id_rsa"


def test_a_plain_file_and_a_link_inside_the_project_are_read(layout):
    proj, _ = layout
    (proj / "docs").mkdir()
    (proj / "docs" / "AGENTS.md").write_text("shared rules")
    (proj / "CLAUDE.md").symlink_to("docs/AGENTS.md")
    (proj / "src" / "CLAUDE.md").write_text("src rules")
    (proj / "src" / "up.md").symlink_to("../docs/AGENTS.md")   # a subfolder's link to elsewhere in the repo
    files = ProjectFiles(proj / "src")
    assert files.root == os.path.realpath(proj)
    assert files.read_text(proj / "CLAUDE.md", "instructions") == "shared rules"
    assert files.read_text(proj / "src" / "CLAUDE.md", "instructions") == "src rules"
    assert files.read_text(proj / "src" / "up.md", "instructions") == "shared rules"
    assert files.read_text(proj / "absent.md", "instructions") is None
    assert files.drain() == []


def test_a_link_to_a_secret_outside_is_skipped_and_warned_once(layout):
    proj, secret = layout
    (proj / "CLAUDE.md").symlink_to(secret)
    files = ProjectFiles(proj)
    assert files.read_text(proj / "CLAUDE.md", "instructions") is None
    assert files.read_text(proj / "CLAUDE.md", "instructions") is None   # read again: said once
    warnings = files.drain()
    assert len(warnings) == 1 and str(proj / "CLAUDE.md") in warnings[0]
    assert "outside the project" in warnings[0] and "\n" not in warnings[0]
    assert SECRET not in warnings[0]
    files.read_text(proj / "CLAUDE.md", "instructions")
    assert files.drain() == []


def test_a_link_through_a_folder_outside_is_skipped(layout):
    proj, secret = layout
    (proj / "vendor").symlink_to(secret.parent)      # the folder is the link, the file name is innocent
    files = ProjectFiles(proj)
    assert files.read_text(proj / "vendor" / "id_rsa", "instructions") is None
    assert "outside the project" in files.drain()[0]


@pytest.mark.parametrize("target", ["/proc/self/environ", "/proc/self/cmdline", "/dev/zero", "/dev/stdin"])
def test_system_paths_are_skipped(layout, target):
    if not os.path.exists(target):
        pytest.skip(f"{target} does not exist here")
    proj, _ = layout
    (proj / "CLAUDE.md").symlink_to(target)
    files = ProjectFiles(proj)
    assert files.read_text(proj / "CLAUDE.md", "instructions") is None
    assert "a system path" in files.drain()[0]


def test_a_project_at_the_filesystem_root_still_refuses_proc(monkeypatch, tmp_path):
    files = ProjectFiles(tmp_path)
    files.root = "/"                          # as if codeloop were started in /
    assert files.read_text("/proc/self/environ", "instructions") is None
    assert "a system path" in files.drain()[0]


def test_a_fifo_does_not_hang_and_is_skipped(layout):
    proj, _ = layout
    os.mkfifo(proj / "CLAUDE.md")                    # nobody ever writes to it
    files = ProjectFiles(proj)
    done = threading.Event()
    out: list[object] = []

    def read() -> None:
        out.append(files.read_text(proj / "CLAUDE.md", "instructions"))
        done.set()
    threading.Thread(target=read, daemon=True).start()
    assert done.wait(10), "reading a FIFO hung"
    assert out == [None] and "not a regular file" in files.drain()[0]


def test_a_directory_is_not_read(layout):
    proj, _ = layout
    (proj / "CLAUDE.md").mkdir()
    files = ProjectFiles(proj)
    assert files.read_text(proj / "CLAUDE.md", "instructions") is None
    assert "not a regular file" in files.drain()[0]


def test_a_hard_link_is_refused(layout):
    proj, secret = layout
    try:
        os.link(secret, proj / "CLAUDE.md")
    except OSError as exc:
        pytest.skip(f"cannot hard-link here: {exc}")
    files = ProjectFiles(proj)
    assert files.read_text(proj / "CLAUDE.md", "instructions") is None
    assert "2 hard links" in files.drain()[0]


def test_a_huge_file_is_read_only_up_to_the_bound(layout):
    proj, _ = layout
    with open(proj / "CLAUDE.md", "wb") as f:
        f.truncate(64 << 20)                         # 64 MiB of zeros, sparse
    files = ProjectFiles(proj, limit=1000)
    text = files.read_text(proj / "CLAUDE.md", "instructions")
    assert text is not None and len(text) == 1000
    assert "first 1,000 bytes" in files.drain()[0]
    assert len(ProjectFiles(proj).read_text(proj / "CLAUDE.md", "instructions") or "") == pf.MAX_FILE_BYTES


def test_a_cut_in_the_middle_of_a_character_is_not_an_error(layout):
    proj, _ = layout
    (proj / "CLAUDE.md").write_text("é" * 10)        # two bytes each
    files = ProjectFiles(proj, limit=5)
    assert files.read_text(proj / "CLAUDE.md", "instructions", errors="strict") == "éé"


def test_a_folder_swapped_for_a_link_between_check_and_open_is_refused(layout, monkeypatch):
    """The realpath is checked, then opened with no link followed: a swap in between fails."""
    proj, secret = layout
    docs = proj / "docs"
    docs.mkdir()
    (docs / "id_rsa").write_text("harmless")
    real_open = pf.open_no_symlinks

    def swap_then_open(path, flags):
        os.rename(docs, proj / "docs.old")
        os.symlink(secret.parent, docs)              # the checked folder now leads to ~/.ssh
        return real_open(path, flags)
    monkeypatch.setattr(pf, "open_no_symlinks", swap_then_open)
    files = ProjectFiles(proj)
    assert files.read_text(docs / "id_rsa", "instructions") is None
    assert "changed while being opened" in files.drain()[0]


def test_the_users_own_files_follow_their_links_but_are_bounded_and_regular(layout, tmp_path):
    proj, _ = layout
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.md").write_text("my global rules")
    user = tmp_path / "home" / ".claude"
    user.mkdir()
    (user / "CLAUDE.md").symlink_to(dotfiles / "claude.md")
    files = ProjectFiles(proj, limit=4)
    assert files.read_user_text(user / "CLAUDE.md", "user instructions") == "my g"   # bounded (4 bytes)
    files.limit = pf.MAX_FILE_BYTES
    assert files.read_user_text(user / "CLAUDE.md", "user instructions") == "my global rules"
    os.mkfifo(user / "fifo.md")
    assert files.read_user_text(user / "fifo.md", "user instructions") is None
    assert any("not a regular file" in w for w in files.drain())


def test_the_project_is_the_git_tree_but_never_home_or_root(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)               # a dotfiles repository in ~
    monkeypatch.setenv("HOME", str(home))
    loose = home / "downloads" / "untarred" / "sub"
    loose.mkdir(parents=True)
    assert project_root(loose) == os.path.realpath(loose)       # ~ never becomes the project
    assert project_root(home) == os.path.realpath(home)         # … unless started there
    repo = home / "src" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    assert project_root(repo / "a" / "b") == os.path.realpath(repo)
    (repo / "a" / ".git").write_text("gitdir: elsewhere")        # a submodule is its own project
    assert project_root(repo / "a" / "b") == os.path.realpath(repo / "a")


def test_an_ancestor_above_the_project_may_point_only_within_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    top = tmp_path / "top"
    cwd = top / "work"
    cwd.mkdir(parents=True)                           # no git: the project is the working folder
    (top / "notes.md").write_text("top rules")
    (tmp_path / "secret.txt").write_text(SECRET)
    (top / "CLAUDE.md").symlink_to(top / "notes.md")
    (top / "CLAUDE.local.md").symlink_to(tmp_path / "secret.txt")
    files = ProjectFiles(cwd)
    assert files.boundary(top) == os.path.realpath(top) and files.boundary(cwd) == os.path.realpath(cwd)
    assert files.read_text(top / "CLAUDE.md", "instructions", directory=top) == "top rules"
    assert files.read_text(top / "CLAUDE.local.md", "instructions", directory=top) is None
    # a file of the working folder may not reach up into the ancestor
    (cwd / "CLAUDE.md").symlink_to(top / "notes.md")
    assert files.read_text(cwd / "CLAUDE.md", "instructions", directory=cwd) is None
    assert len(files.drain()) == 2


def test_a_project_folder_leading_out_is_not_listed(layout):
    proj, secret = layout
    (proj / ".claude").mkdir()
    (proj / ".claude" / "commands").symlink_to(secret.parent)
    (proj / ".claude" / "skills").mkdir()
    files = ProjectFiles(proj)
    assert files.project_dir(proj / ".claude" / "skills", "skills") is True
    assert files.project_dir(proj / ".claude" / "absent", "skills") is False
    assert files.project_dir(proj / ".claude" / "commands", "custom commands") is False
    assert "outside the project" in files.drain()[0]
