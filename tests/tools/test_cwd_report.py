"""Bash's cwd report files are reused from call to call (tools/builtin/cwd_report.py) without ever
reporting a stale directory or writing through a file a command put in their place. Real shells."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.tools.base import ToolContext
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.registry import parse_tool_input


async def bash(ctx: ToolContext, command: str, **extra):
    tool = BashTool()
    return await tool.call(parse_tool_input(tool, {"command": command, **extra}), ctx)


def reports(session: Path) -> list[Path]:
    return sorted(session.glob("codeloop-cwd-*"))


def in_session(tmp_path: Path) -> tuple[ToolContext, Path]:
    """A context whose session folder (where the report files go) exists."""
    session = tmp_path / "session"
    session.mkdir()
    return ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=session), session


async def test_one_file_serves_many_calls_and_the_directory_follows_cd(tmp_path):
    ctx, session = in_session(tmp_path)
    deep = tmp_path / ("a-rather-long-directory-name-" * 4)
    deep.mkdir()
    (tmp_path / "b").mkdir()
    await bash(ctx, f"cd {deep}")
    assert ctx.cwd == deep
    first = reports(session)
    await bash(ctx, f"cd {tmp_path / 'b'}")          # a shorter path over a longer one
    assert ctx.cwd == tmp_path / "b"
    assert (await bash(ctx, "pwd")).content == str(tmp_path / "b")
    assert reports(session) == first and len(first) == 1   # reused, not one per call


async def test_a_shell_whose_trap_never_ran_reports_nothing_not_the_last_directory(tmp_path):
    ctx, session = in_session(tmp_path)
    (tmp_path / "x").mkdir()
    await bash(ctx, "cd x")
    assert ctx.cwd == tmp_path / "x"
    ctx.cwd = tmp_path                               # as if the session moved back
    await bash(ctx, "cd x; exec true")               # exec replaces the shell: no EXIT trap
    assert ctx.cwd == tmp_path                       # the file still held "x" from the first call


async def test_a_report_file_replaced_by_a_link_is_never_written_through(tmp_path):
    ctx, session = in_session(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    await bash(ctx, "true")
    [report] = reports(session)
    for link in (os.symlink, os.link):
        report.unlink()
        link(victim, report)
        (tmp_path / "d").mkdir(exist_ok=True)
        await bash(ctx, "cd d")
        assert ctx.cwd == tmp_path / "d"
        assert victim.read_text() == "precious\n"    # neither cleared nor written by the shell
        ctx.cwd = tmp_path
        report = next(p for p in reports(session) if not p.is_symlink() and p.stat().st_nlink == 1)


async def test_a_killed_shells_file_is_deleted_not_reused(tmp_path):
    ctx, session = in_session(tmp_path)
    await bash(ctx, "true")
    [kept] = reports(session)
    res = await bash(ctx, "sleep 30", timeout=300)
    assert res.is_error and "timed out" in res.content
    assert reports(session) == []                     # the file the killed shell had is gone
    await bash(ctx, "true")
    [fresh] = reports(session)
    assert fresh != kept


async def test_without_a_session_folder_the_temporary_folder_serves_and_its_files_are_reused(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", f"{tmp}/")            # a trailing slash, as people write it
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=None)
    for _ in range(3):
        await bash(ctx, "true")
    assert len(reports(tmp)) == 1


async def test_a_report_file_swapped_for_a_fifo_hangs_nothing(tmp_path):
    import asyncio

    ctx, session = in_session(tmp_path)
    await bash(ctx, "true")
    [report] = reports(session)
    # the command itself swaps its report file for a FIFO, then the next call takes the pool's file
    await asyncio.wait_for(bash(ctx, f"rm {report}; mkfifo {report}; exec true"), 30)
    (tmp_path / "e").mkdir()
    await asyncio.wait_for(bash(ctx, "cd e"), 30)
    assert ctx.cwd == tmp_path / "e"


async def test_a_report_file_a_command_filled_is_emptied_before_reuse(tmp_path):
    ctx, session = in_session(tmp_path)
    await bash(ctx, "true")
    [report] = reports(session)
    await bash(ctx, f"head -c 1000000 /dev/zero | tr '\\0' x >> {report}; exec true")
    assert report.stat().st_size >= 1_000_000
    (tmp_path / "f").mkdir()
    await bash(ctx, "cd f")
    assert ctx.cwd == tmp_path / "f" and report.stat().st_size < 1000
