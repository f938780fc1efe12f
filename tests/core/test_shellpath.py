"""The one PATH search for codeloop's own programs: absolute entries only, so nothing planted in
the project (an empty or relative PATH entry) runs as codeloop's shell, sandbox or search."""

from __future__ import annotations

import os

from codeloop.shellpath import bash_path, find_program


def _exe(folder, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/sh\n")
    p.chmod(0o755)
    return str(p)


def test_absolute_entries_only_in_path_order(tmp_path, monkeypatch):
    project, first, second = tmp_path / "project", tmp_path / "a", tmp_path / "b"
    _exe(project, "bwrap")
    _exe(project / "bin", "rg")
    want = _exe(first, "rg")
    _exe(second, "rg")
    _exe(second, "bwrap")
    (first / "bwrap").write_text("not executable")
    monkeypatch.chdir(project)
    path = os.pathsep.join(["", ".", "bin", str(first), str(second)])
    assert find_program("rg", path) == want
    assert find_program("bwrap", path) == str(second / "bwrap")   # not executable in `first`
    assert find_program("bwrap", os.pathsep.join(["", ".", "bin"])) is None
    assert find_program("missing", path) is None


def test_bash_follows_the_process_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert bash_path() is None
    want = _exe(tmp_path, "bash")
    monkeypatch.setenv("PATH", os.pathsep + str(tmp_path))   # another PATH value: searched afresh
    assert bash_path() == want


def test_program_raises_as_a_missing_program_would(tmp_path):
    import pytest

    from codeloop.shellpath import program

    with pytest.raises(FileNotFoundError):
        program("surely-no-such-program-here")


def test_a_git_planted_in_the_project_never_answers_the_permission_checks(tmp_path, monkeypatch):
    """The permission layer asks git about paths (no approval involved): with an empty PATH entry,
    exec's own search would have run the project's `git`."""
    from codeloop.permissions import git_paths, git_programs

    project = tmp_path / "project"
    planted = _exe(project, "git")
    (project / "git").write_text(f"#!/bin/sh\ntouch {tmp_path}/planted-ran\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", os.pathsep + os.environ.get("PATH", ""))
    for module in (git_paths, git_programs):
        module._git(str(project), "rev-parse", "--show-toplevel")
    assert not (tmp_path / "planted-ran").exists(), planted
