from __future__ import annotations

import os

import pytest

from codeloop.tools.base import ToolError
from codeloop.tools.builtin.grep import GrepTool
from codeloop.tools.builtin.ripgrep import find_rg

HAVE_RG = find_rg() is not None


@pytest.fixture(
    params=[
        "python",
        pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed")),
    ]
)
def grep(request) -> GrepTool:
    return GrepTool(use_ripgrep=request.param == "rg")


def write(path, text: str, mtime_s: int | None = None) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime_s is not None:
        os.utime(path, (mtime_s, mtime_s))
    return str(path)


@pytest.fixture
def tree(tmp_path):
    return {
        "a": write(tmp_path / "a.py", "import os\nTODO: fix\nprint('x')\n", 1_000),
        "b": write(tmp_path / "pkg" / "b.py", "todo later\nnothing\ntodo again\n", 3_000),
        "c": write(tmp_path / "notes.txt", "TODO in text\n", 2_000),
        "git": write(tmp_path / ".git" / "config", "TODO hidden in git\n", 4_000),
    }


async def test_files_with_matches_newest_first(grep, ctx, run, tree):
    r = await run(grep, ctx, pattern="TODO")
    assert r.content.splitlines() == ["Found 2 files", tree["c"], tree["a"]]
    assert r.data["filenames"] == [tree["c"], tree["a"]]


async def test_case_insensitive(grep, ctx, run, tree):
    r = await run(grep, ctx, pattern="todo", **{"-i": True})
    assert r.content.splitlines() == ["Found 3 files", tree["b"], tree["c"], tree["a"]]


async def test_content_mode_with_line_numbers(grep, ctx, run, tree, tmp_path):
    r = await run(grep, ctx, pattern="todo", path=str(tmp_path / "pkg"), output_mode="content")
    assert r.content.splitlines() == [f"{tree['b']}:1:todo later", f"{tree['b']}:3:todo again"]


async def test_content_without_line_numbers(grep, ctx, run, tree):
    r = await run(grep, ctx, pattern="print", output_mode="content", **{"-n": False})
    assert r.content == f"{tree['a']}:print('x')"


async def test_content_context_lines_and_separators(grep, ctx, run, tmp_path):
    p = write(tmp_path / "n.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    r = await run(grep, ctx, pattern="two|six", path=p, output_mode="content", **{"-C": 1})
    assert r.content.splitlines() == [
        f"{p}-1-one",
        f"{p}:2:two",
        f"{p}-3-three",
        "--",
        f"{p}-5-five",
        f"{p}:6:six",
        f"{p}-7-seven",
    ]


async def test_after_and_before_override_context(grep, ctx, run, tmp_path):
    p = write(tmp_path / "n.txt", "one\ntwo\nthree\nfour\n")
    r = await run(grep, ctx, pattern="two", path=p, output_mode="content", **{"-C": 2, "-A": 0})
    assert r.content.splitlines() == [f"{p}-1-one", f"{p}:2:two"]


async def test_count_mode(grep, ctx, run, tree, tmp_path):
    r = await run(grep, ctx, pattern="todo", output_mode="count", **{"-i": True})
    lines = r.content.splitlines()
    assert sorted(lines[:3]) == sorted([f"{tree['a']}:1", f"{tree['b']}:2", f"{tree['c']}:1"])
    assert lines[-1] == "Found 4 total matching lines across 3 files."
    assert r.data["numMatches"] == 4


async def test_glob_filter(grep, ctx, run, tree):
    r = await run(grep, ctx, pattern="(?i)todo", glob="*.txt")
    assert r.content.splitlines() == ["Found 1 file", tree["c"]]
    r = await run(grep, ctx, pattern="todo", glob="pkg/*.py,*.txt", **{"-i": True})
    assert sorted(r.content.splitlines()[1:]) == sorted([tree["b"], tree["c"]])


async def test_type_filter(grep, ctx, run, tree):
    r = await run(grep, ctx, pattern="todo", type="py", **{"-i": True})
    assert r.content.splitlines() == ["Found 2 files", tree["b"], tree["a"]]


async def test_head_limit(grep, ctx, run, tree):
    r = await run(grep, ctx, pattern="todo", head_limit=1, **{"-i": True})
    assert r.content.splitlines()[:2] == ["Found 1 file", tree["b"]]
    assert "head_limit" in r.content
    r = await run(grep, ctx, pattern="o", output_mode="content", head_limit=2)
    assert len([line for line in r.content.splitlines() if line.startswith("/")]) == 2


async def test_multiline(grep, ctx, run, tmp_path):
    p = write(tmp_path / "m.go", "type S struct {\n\tA int\n\tField string\n}\n")
    r = await run(grep, ctx, pattern=r"struct \{[\s\S]*?Field", path=p, output_mode="content", multiline=True)
    assert r.content.splitlines() == [f"{p}:1:type S struct {{", f"{p}:2:\tA int", f"{p}:3:\tField string"]


async def test_no_matches(grep, ctx, run, tree):
    r = await run(grep, ctx, pattern="zzz_not_here")
    assert r.content == "No files found"
    r = await run(grep, ctx, pattern="zzz_not_here", output_mode="content")
    assert r.content == "No matches found"


async def test_binary_files_skipped(grep, ctx, run, tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    t = write(tmp_path / "t.txt", "needle\n")
    r = await run(grep, ctx, pattern="needle")
    assert r.content.splitlines() == ["Found 1 file", t]


async def test_invalid_regex(grep, ctx, run, tree):
    with pytest.raises(ToolError, match="Invalid regex"):
        await run(grep, ctx, pattern="foo(")


async def test_missing_path(grep, ctx, run, tmp_path):
    with pytest.raises(ToolError, match="does not exist"):
        await run(grep, ctx, pattern="x", path=str(tmp_path / "nope"))


async def test_fallback_forced_even_when_rg_is_on_path(ctx, run, tree, monkeypatch):
    # A bogus rg on PATH: running it would fail, so passing proves the fallback was used.
    from codeloop.tools.builtin import ripgrep

    monkeypatch.setattr(ripgrep, "find_rg", lambda: "/nonexistent/bin/rg")
    r = await run(GrepTool(use_ripgrep=False), ctx, pattern="TODO")
    assert r.content.splitlines() == ["Found 2 files", tree["c"], tree["a"]]


def test_grep_is_read_only():
    g = GrepTool()
    inp = GrepTool.input_model(pattern="x")
    assert g.is_read_only(inp) and g.is_concurrency_safe(inp)


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed")
@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "a", "output_mode": "content", "-C": 1},
        {"pattern": "^x", "output_mode": "content", "-n": False, "-B": 1},
        {"pattern": "a", "output_mode": "count"},
        {"pattern": "A", "-i": True},
        {"pattern": "a", "output_mode": "content", "glob": "b/*.txt", "head_limit": 3},
    ],
)
async def test_both_backends_give_identical_output(ctx, run, tmp_path, args):
    write(tmp_path / "b" / "x.txt", "xa\nzz\nzz\nzz\nza\n", 1_000)
    write(tmp_path / "b-c.txt", "a\nxb\n", 2_000)
    write(tmp_path / "b" / "d" / "y.txt", "ya\n", 3_000)
    write(tmp_path / "crlf.txt", "xa\r\nqq\r\n", 4_000)
    py = await run(GrepTool(use_ripgrep=False), ctx, **args)
    rg = await run(GrepTool(use_ripgrep=True), ctx, **args)
    assert py.content == rg.content
    assert py.content not in ("No matches found", "No files found")


def test_an_rg_planted_in_the_project_is_never_the_search(tmp_path, monkeypatch):
    """With an empty or relative PATH entry (the project), the rg found is never the planted one."""
    import os

    from codeloop.tools.builtin import ripgrep

    planted = tmp_path / "rg"
    planted.write_text("#!/bin/sh\nexit 0\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", os.environ.get("PATH", "")]))
    monkeypatch.setattr(ripgrep, "env_rg", lambda: None)   # no rg beside this Python: PATH decides
    found = ripgrep.find_rg()
    assert found is None or (os.path.isabs(found) and not os.path.samefile(found, planted))
