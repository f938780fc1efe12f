from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from codeloop.abort import AbortReason
from codeloop.tools.builtin.bash import BashTool

bash = BashTool()
HANG_GUARD_S = 15  # only to fail instead of hanging; never a timing assertion


def is_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (zombies can't hold anything)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state != "Z"


async def wait_dead(pids: list[int]) -> list[int]:
    """Give the kernel a moment to tear processes down; return those still alive."""
    for _ in range(100):
        alive = [p for p in pids if is_alive(p)]
        if not alive:
            return []
        await asyncio.sleep(0.05)
    return alive


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


async def bash_run(run, ctx, **kw):
    return await asyncio.wait_for(run(bash, ctx, **kw), HANG_GUARD_S)


async def test_stdout_and_stderr(ctx, run):
    r = await bash_run(run, ctx, command="echo out; echo err >&2", description="Print stuff")
    assert r.content == "out\nerr"
    assert not r.is_error
    assert r.data["stdout"] == "out" and r.data["stderr"] == "err"
    assert r.data["exitCode"] == 0 and r.data["interrupted"] is False


async def test_nonzero_exit_is_error_with_exit_code_line(ctx, run):
    r = await bash_run(run, ctx, command="echo partial; false")
    assert r.is_error
    assert r.content.splitlines()[-1] == "Exit code 1"
    assert r.content.startswith("partial")
    assert r.data["exitCode"] == 1


async def test_no_output(ctx, run):
    r = await bash_run(run, ctx, command="true")
    assert r.content == "(no output)" and not r.is_error


async def test_stdin_is_dev_null(ctx, run):
    r = await bash_run(run, ctx, command="cat; echo done")
    assert r.content == "done"


async def test_cwd_persists_between_calls(ctx, run, tmp_path):
    (tmp_path / "sub").mkdir()
    await bash_run(run, ctx, command="cd sub")
    expected = os.path.realpath(tmp_path / "sub")
    assert str(ctx.cwd) == expected
    r = await bash_run(run, ctx, command="pwd")
    assert r.content == expected and r.data["cwd"] == expected


async def test_exit_n_still_records_cwd(ctx, run, tmp_path):
    (tmp_path / "d").mkdir()
    r = await bash_run(run, ctx, command="cd d && exit 3")
    assert r.is_error and r.content.endswith("Exit code 3") and r.data["exitCode"] == 3
    assert str(ctx.cwd) == os.path.realpath(tmp_path / "d")


async def test_cwd_not_updated_to_deleted_directory(ctx, run, tmp_path):
    before = ctx.cwd
    await bash_run(run, ctx, command="mkdir gone && cd gone && rmdir ../gone")
    assert ctx.cwd == before


async def test_long_output_truncated_keeping_head_and_tail(ctx, run):
    cmd = "python3 -c \"import sys; sys.stdout.write('a'*20000 + 'b'*20000)\""
    r = await bash_run(run, ctx, command=cmd)
    assert "... [10000 characters truncated] ..." in r.content
    assert r.content.startswith("a" * 100) and r.content.endswith("b" * 100)
    assert len(r.content) < 30_100


async def test_timeout_kills_whole_process_group(ctx, run, tmp_path):
    pidfile = tmp_path / "pids"
    cmd = f"sleep 30 & echo $! >> {pidfile}; sleep 30 & echo $! >> {pidfile}; echo $$ >> {pidfile}; wait"
    r = await bash_run(run, ctx, command=cmd, timeout=1000)
    assert r.is_error and r.data["interrupted"] is True
    assert "Command timed out after 1s" in r.content
    pids = read_pids(pidfile)
    assert len(pids) == 3
    assert await wait_dead(pids) == []


async def test_timeout_kills_children_that_ignore_sigterm(ctx, run, tmp_path):
    pidfile = tmp_path / "pids"
    cmd = f"(trap '' TERM; sleep 30) & echo $! >> {pidfile}; wait"
    r = await bash_run(run, ctx, command=cmd, timeout=500)
    assert "timed out" in r.content
    pids = read_pids(pidfile)
    assert pids and await wait_dead(pids) == []


async def test_abort_kills_whole_process_group(ctx, run, tmp_path):
    pidfile = tmp_path / "pids"
    cmd = f"sleep 30 & echo $! >> {pidfile}; sleep 30 & echo $! >> {pidfile}; wait"
    task = asyncio.ensure_future(bash_run(run, ctx, command=cmd))
    for _ in range(200):
        if len(read_pids(pidfile)) == 2:
            break
        await asyncio.sleep(0.025)
    assert len(read_pids(pidfile)) == 2
    ctx.abort.abort(AbortReason.USER)
    r = await task
    assert r.is_error and "Command was aborted" in r.content and r.data["interrupted"] is True
    assert await wait_dead(read_pids(pidfile)) == []


async def test_cancelled_call_kills_group(ctx, run, tmp_path):
    pidfile = tmp_path / "pids"
    task = asyncio.ensure_future(run(bash, ctx, command=f"sleep 30 & echo $! > {pidfile}; wait"))
    for _ in range(200):
        if read_pids(pidfile):
            break
        await asyncio.sleep(0.025)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert read_pids(pidfile) and await wait_dead(read_pids(pidfile)) == []


async def test_background_child_holding_stdout_does_not_hang(ctx, run, tmp_path):
    pidfile = tmp_path / "pids"
    r = await bash_run(run, ctx, command=f"sleep 30 & echo $! > {pidfile}; echo started")
    assert r.content.startswith("started")
    assert "background process kept its output open" in r.content
    assert not r.is_error
    assert await wait_dead(read_pids(pidfile)) == []


async def test_detached_background_child_with_redirected_output_is_left_running(ctx, run):
    r = await bash_run(run, ctx, command="sleep 30 > /dev/null 2>&1 & echo $!")
    pid = int(r.data["stdout"])
    try:
        assert is_alive(pid)
        assert "background process" not in r.content
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_timeout_above_max_is_clamped(ctx, run):
    r = await bash_run(run, ctx, command="echo ok", timeout=10_000_000)
    assert r.content == "ok"


def test_bash_is_read_only_only_for_proven_read_only_commands():
    for command in ("ls", "git branch && cat README.md"):
        inp = BashTool.input_model(command=command)
        assert bash.is_read_only(inp) is True and bash.is_concurrency_safe(inp) is True
    # issue 12: `git status` runs core.fsmonitor from repository config, so it is not read-only
    for command in ("rm -rf x", "echo hi > f", "ls; touch x", "cat $(which x)", "x='$(id)'; echo ${x@P}",
                    "git status && cat README.md"):
        inp = BashTool.input_model(command=command)
        assert bash.is_read_only(inp) is False and bash.is_concurrency_safe(inp) is False
