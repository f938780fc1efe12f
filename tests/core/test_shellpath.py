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
