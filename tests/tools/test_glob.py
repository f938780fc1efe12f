from __future__ import annotations

import os

import pytest

from codeloop.tools.base import ToolError
from codeloop.tools.builtin.glob import TRUNCATED_NOTE, GlobTool, glob_to_regex

glob = GlobTool()


def touch(path, mtime_s: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(path.name)
    os.utime(path, (mtime_s, mtime_s))


async def test_sorted_newest_first_absolute_paths(ctx, run, tmp_path):
    touch(tmp_path / "old.py", 1_000_000)
    touch(tmp_path / "new.py", 3_000_000)
    touch(tmp_path / "mid.py", 2_000_000)
    touch(tmp_path / "skip.txt", 4_000_000)
    r = await run(glob, ctx, pattern="*.py")
    assert r.content.splitlines() == [str(tmp_path / n) for n in ("new.py", "mid.py", "old.py")]
    assert r.data["numFiles"] == 3 and r.data["truncated"] is False


async def test_double_star_recurses_and_skips_git(ctx, run, tmp_path):
    touch(tmp_path / "top.py", 1_000)
    touch(tmp_path / "a" / "b" / "deep.py", 2_000)
    touch(tmp_path / ".git" / "hooks" / "hook.py", 3_000)
    touch(tmp_path / "a" / "not.txt", 4_000)
    r = await run(glob, ctx, pattern="**/*.py")
    assert r.content.splitlines() == [str(tmp_path / "a" / "b" / "deep.py"), str(tmp_path / "top.py")]


async def test_single_star_does_not_cross_directories(ctx, run, tmp_path):
    touch(tmp_path / "src" / "x.py", 1)
    touch(tmp_path / "src" / "sub" / "y.py", 2)
    r = await run(glob, ctx, pattern="src/*.py")
    assert r.content.splitlines() == [str(tmp_path / "src" / "x.py")]


async def test_path_argument_and_braces(ctx, run, tmp_path):
    touch(tmp_path / "pkg" / "a.ts", 1)
    touch(tmp_path / "pkg" / "b.tsx", 2)
    touch(tmp_path / "pkg" / "c.js", 3)
    touch(tmp_path / "other.ts", 4)
    r = await run(glob, ctx, pattern="*.{ts,tsx}", path="pkg")
    assert r.content.splitlines() == [str(tmp_path / "pkg" / "b.tsx"), str(tmp_path / "pkg" / "a.ts")]


async def test_absolute_pattern(ctx, run, tmp_path):
    touch(tmp_path / "d" / "f.md", 1)
    r = await run(glob, ctx, pattern=str(tmp_path / "d" / "*.md"))
    assert r.content == str(tmp_path / "d" / "f.md")


async def test_capped_at_100_with_note(ctx, run, tmp_path):
    for i in range(150):
        touch(tmp_path / f"f{i:03}.txt", 1_000 + i)
    r = await run(glob, ctx, pattern="*.txt")
    lines = r.content.splitlines()
    assert lines[-1] == TRUNCATED_NOTE
    assert len(lines) == 101
    assert lines[0] == str(tmp_path / "f149.txt")  # newest first survives the cap
    assert r.data["truncated"] is True


@pytest.mark.parametrize("use_rg", [pytest.param(False, id="python"), pytest.param(True, id="rg")])
@pytest.mark.parametrize("given", ["", "/"])
async def test_equal_mtimes_list_by_whole_path_under_the_root(ctx, run, tmp_path, use_rg, given):
    # the order is by mtime, then by path; the root is joined once, with one slash, to each listed
    names = ["b/z.py", "a.py", "b/a/y.py", "c.py", "b/a.py", "a/b.py"]
    for n in names:
        touch(tmp_path / "root" / n, 5_000)
    touch(tmp_path / "root" / "b" / "new.py", 6_000)
    r = await run(GlobTool(use_ripgrep=use_rg), ctx, pattern="**/*.py", path=str(tmp_path / "root") + given)
    root = tmp_path / "root"
    assert r.content.splitlines() == [str(root / "b" / "new.py")] + sorted(str(root / n) for n in names)


async def test_no_files_found(ctx, run, tmp_path):
    r = await run(glob, ctx, pattern="**/*.nothing")
    assert r.content == "No files found" and not r.is_error


async def test_missing_directory_is_error(ctx, run, tmp_path):
    with pytest.raises(ToolError, match="does not exist"):
        await run(glob, ctx, pattern="*", path=str(tmp_path / "nope"))


@pytest.mark.parametrize(
    "pattern,path,expected",
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "x/y/a.py", True),
        ("**", "x/y/z", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/a/b/test_a.py", True),
        ("*.py", "x/a.py", False),
        ("?.txt", "a.txt", True),
        ("[ab].txt", "c.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("*.{js,jsx}", "a.jsx", True),
    ],
)
def test_glob_dialect(pattern, path, expected):
    assert bool(glob_to_regex(pattern).match(path)) is expected
