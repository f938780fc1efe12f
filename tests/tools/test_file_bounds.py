"""Bounded, non-blocking, cancellable file tools (issue 13 items 1 and 6, the tool side).

Real FIFOs, sockets, symlinks to /dev/zero and a sparse 1 GiB file in tmp_path; both Grep back
ends. A watchdog (`finishes`) turns a hang into a failure instead of a stuck suite; no test
asserts how fast anything is (figures are in bench/bench_file_tools.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from codeloop.tools.base import ToolContext, ToolError
from codeloop.tools.builtin import grep_fallback, linewindow
from codeloop.tools.builtin import ripgrep as ripgrep_mod
from codeloop.tools.builtin.glob import GlobTool
from codeloop.tools.builtin.grep import GrepTool
from codeloop.tools.builtin.read import ReadTool
from codeloop.tools.registry import parse_tool_input

BACKENDS = [pytest.param(False, id="python"), pytest.param(True, id="rg")]
read = ReadTool()


async def finishes(coro, what="the tool call"):
    """Hang guard only: a call that blocks forever fails the test instead of stalling the run."""
    try:
        return await asyncio.wait_for(coro, 120)
    except TimeoutError:
        pytest.fail(f"{what} did not return (blocked)")


async def call(tool, ctx, **raw):
    return await finishes(tool.call(parse_tool_input(tool, raw), ctx))


@pytest.fixture
def hostile_tree(tmp_path):
    (tmp_path / "a.txt").write_text("needle in a\n")
    os.mkfifo(tmp_path / "pipe")              # nobody ever writes: opening it to read would block
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "random").symlink_to("/dev/urandom")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(tmp_path / "sock"))
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "needle.fifo")
    yield tmp_path
    sock.close()


# -- special files ------------------------------------------------------------------------------
@pytest.mark.parametrize("rg", BACKENDS)
@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_grep_skips_fifos_sockets_and_device_links(ctx, hostile_tree, rg, mode):
    r = await call(GrepTool(use_ripgrep=rg), ctx, pattern="needle", output_mode=mode)
    a = str(hostile_tree / "a.txt")
    expected = {"files_with_matches": f"Found 1 file\n{a}", "content": f"{a}:1:needle in a",
                "count": f"{a}:1\n\nFound 1 total matching line across 1 file."}[mode]
    assert r.content == expected


@pytest.mark.parametrize("rg", BACKENDS)
async def test_grep_refuses_a_fifo_or_device_as_its_path(ctx, hostile_tree, rg):
    with pytest.raises(ToolError, match="not a regular file or a directory"):
        await call(GrepTool(use_ripgrep=rg), ctx, pattern="x", path=str(hostile_tree / "pipe"))
    for dev in ("/dev/zero", str(hostile_tree / "zero"), str(hostile_tree / "random")):
        with pytest.raises(ToolError, match="device path"):
            await call(GrepTool(use_ripgrep=rg), ctx, pattern="x", path=dev)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/stdin", "zero", "random"])
async def test_read_refuses_devices(ctx, hostile_tree, path):
    with pytest.raises(ToolError, match="device path|not a regular file"):
        await call(read, ctx, file_path=path)


async def test_read_refuses_fifo_and_socket(ctx, hostile_tree):
    for name in ("pipe", "sock"):
        with pytest.raises(ToolError, match="not a regular file"):
            await call(read, ctx, file_path=str(hostile_tree / name))


@pytest.mark.parametrize("rg", BACKENDS)
async def test_glob_lists_regular_files_only_and_refuses_dev(ctx, hostile_tree, rg):
    r = await call(GlobTool(use_ripgrep=rg), ctx, pattern="**/*")
    assert r.content == str(hostile_tree / "a.txt")
    with pytest.raises(ToolError, match="device path"):
        await call(GlobTool(use_ripgrep=rg), ctx, pattern="*", path="/dev")


@pytest.mark.parametrize("args", [
    {"pattern": "**/*.py"}, {"pattern": "*"}, {"pattern": "src/*.{py,txt}"}, {"pattern": "**/[ab]*"},
    {"pattern": "**/.hidden/*"}, {"pattern": "src/**"},
])
async def test_glob_backends_agree(ctx, tmp_path, args):
    for i, rel in enumerate(["a.py", "b.txt", "src/a.py", "src/b.txt", "src/deep/c.py", ".hidden/x.py",
                             ".git/config", "src/.git/HEAD"]):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(rel)
        os.utime(p, (1000 + i, 1000 + i))
    (tmp_path / "src" / "link.py").symlink_to(tmp_path / "a.py")
    py = await call(GlobTool(use_ripgrep=False), ctx, **args)
    rg = await call(GlobTool(use_ripgrep=True), ctx, **args)
    assert py.content == rg.content and py.content != "No files found"


# -- bytes that are not UTF-8 -------------------------------------------------------------------
@pytest.mark.parametrize("rg", BACKENDS)
async def test_grep_marks_bytes_that_are_not_utf8(ctx, tmp_path, rg):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9 needle\nplain needle\n")
    r = await call(GrepTool(use_ripgrep=rg), ctx, pattern="needle", output_mode="content")
    lines = r.content.split("\n\n")[0].splitlines()
    assert lines == [f"{tmp_path / 'latin.txt'}:1:caf\\xe9 needle", f"{tmp_path / 'latin.txt'}:2:plain needle"]
    assert "not valid UTF-8" in r.content
    json.dumps(r.content, ensure_ascii=False).encode("utf-8")  # encodable as a request body


@pytest.mark.parametrize("rg", BACKENDS)
async def test_non_utf8_file_names_are_escaped_not_crashing(ctx, tmp_path, rg):
    raw = os.fsencode(str(tmp_path)) + b"/caf\xe9.txt"
    with open(raw, "wb") as f:
        f.write(b"needle\n")
    g = await call(GrepTool(use_ripgrep=rg), ctx, pattern="needle")
    assert g.content.splitlines()[1] == f"{tmp_path}/caf\\xe9.txt"
    gl = await call(GlobTool(use_ripgrep=rg), ctx, pattern="*.txt")
    assert gl.content == f"{tmp_path}/caf\\xe9.txt"
    for result in (g, gl):
        json.dumps({"c": result.content, "d": result.data}, ensure_ascii=False).encode("utf-8")


# -- bounded memory and work --------------------------------------------------------------------
@pytest.fixture
def sparse_gib(tmp_path) -> Path:
    """20,000 text lines, then a hole up to 1 GiB (zeros that take no disk)."""
    p = tmp_path / "huge.log"
    with open(p, "wb") as f:
        f.write(b"".join(b"line %d needle\n" % i for i in range(1, 20_001)))
        f.truncate(1 << 30)
    return p


async def test_read_stops_at_its_limit_on_a_1gib_file(ctx, sparse_gib):
    r = await call(read, ctx, file_path=str(sparse_gib))
    body, note = r.content.split("\n\n", 1)
    assert len(body.splitlines()) == 2000 and body.splitlines()[-1] == "  2000\tline 2000 needle"
    assert "offset=2001" in note and "not read further" in note and "1.0 GB" in note
    assert r.data["totalLines"] is None and ctx.read_files[str(sparse_gib)].partial
    r = await call(read, ctx, file_path=str(sparse_gib), offset=19_999, limit=1)
    assert r.content.startswith(" 19999\tline 19999 needle")


async def test_read_output_is_capped_in_bytes(ctx, tmp_path):
    p = tmp_path / "wide.txt"
    p.write_text(("y" * 1500 + "\n") * 1000)
    r = await call(read, ctx, file_path=str(p))
    assert "capped at 256 KB" in r.content and r.data["numLines"] < 1000
    assert f"offset={r.data['numLines'] + 1}" in r.content


async def test_read_of_one_endless_line_keeps_only_its_head(ctx, tmp_path):
    p = tmp_path / "oneline.txt"
    with open(p, "wb") as f:
        f.write(b"z" * (64 * 1024 * 1024))
    r = await call(read, ctx, file_path=str(p))
    assert r.content == "     1\t" + "z" * 2000 + "... [line truncated]"


@pytest.mark.parametrize("rg", BACKENDS)
async def test_grep_on_a_1gib_file_stops_at_head_limit(ctx, sparse_gib, rg):
    r = await call(GrepTool(use_ripgrep=rg), ctx, pattern="needle", path=str(sparse_gib),
                   output_mode="content", head_limit=3)
    assert r.content.splitlines()[:3] == [f"{sparse_gib}:{i}:line {i} needle" for i in (1, 2, 3)]
    assert "limited to the first 3" in r.content


async def test_rg_is_stopped_once_head_limit_is_reached(ctx, tmp_path, monkeypatch):
    for i in range(5):  # far more output than a pipe holds: rg must still be running when we have enough
        (tmp_path / f"f{i:02}.txt").write_text("needle\n" * 50_000)
    runs = []
    real_run = ripgrep_mod.run_rg

    async def spy(*a, **k):
        runs.append(await real_run(*a, **k))
        return runs[-1]
    monkeypatch.setattr(ripgrep_mod, "run_rg", spy)
    r = await call(GrepTool(use_ripgrep=True), ctx, pattern="needle", output_mode="content", head_limit=2)
    assert r.content.splitlines()[:2] == [f"{tmp_path / 'f00.txt'}:1:needle", f"{tmp_path / 'f00.txt'}:2:needle"]
    assert runs[0].stopped_early and runs[0].returncode != 0  # killed, not run to the end


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc for VmHWM")
def test_memory_stays_bounded_on_a_1gib_file(sparse_gib, tmp_path):
    """Peak RSS of a fresh process doing Read and both Greps on the 1 GiB file (issue: <100 MB)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from codeloop.tools.base import ToolContext\n"
        "from codeloop.tools.builtin.read import ReadTool\n"
        "from codeloop.tools.builtin.grep import GrepTool\n"
        "from codeloop.tools.registry import parse_tool_input\n"
        "async def main(p):\n"
        "    ctx = ToolContext(cwd=p.parent, project_dir=p.parent)\n"
        "    for tool, raw in [(ReadTool(), {'file_path': str(p)}),\n"
        "                      (GrepTool(use_ripgrep=False), {'pattern': 'nomatch', 'path': str(p)}),\n"
        "                      (GrepTool(use_ripgrep=True), {'pattern': 'nomatch', 'path': str(p)})]:\n"
        "        await tool.call(parse_tool_input(tool, raw), ctx)\n"
        "asyncio.run(main(Path(sys.argv[1])))\n"
        # VmHWM, not ru_maxrss: Linux carries the forking parent's (pytest's) peak into ru_maxrss
        "print([line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')][0])\n")
    out = subprocess.run([sys.executable, str(script), str(sparse_gib)], capture_output=True, text=True, check=True)
    peak_kib = int(out.stdout.strip())
    assert peak_kib < 100 * 1024, f"peak RSS {peak_kib} KiB"


# -- cancellation -------------------------------------------------------------------------------
def _stuck(monkeypatch, module, name, gate: threading.Event):
    """Make `module.name` block the way a read stuck in the kernel would, until `gate` opens."""
    def blocked(*a, **k):
        gate.wait()
        raise OSError("released")
    monkeypatch.setattr(module, name, blocked)


async def test_abort_returns_from_a_stuck_read_and_leaves_only_daemon_threads(tmp_path, monkeypatch):
    (tmp_path / "f.txt").write_text("x\n")
    gate = threading.Event()
    _stuck(monkeypatch, linewindow.io, "BufferedReader", gate)
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    task = asyncio.ensure_future(read.call(parse_tool_input(read, {"file_path": str(tmp_path / "f.txt")}), ctx))
    await asyncio.sleep(0.05)
    ctx.abort.abort()
    with pytest.raises(ToolError, match="aborted"):
        await finishes(task)
    workers = [t for t in threading.enumerate() if t.name.startswith("codeloop-")]
    assert workers and all(t.daemon for t in workers)
    gate.set()


async def test_cancelling_a_stuck_fallback_grep_returns_at_once(tmp_path, monkeypatch):
    (tmp_path / "f.txt").write_text("needle\n")
    gate = threading.Event()
    _stuck(monkeypatch, grep_fallback.io, "BufferedReader", gate)
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    grep = GrepTool(use_ripgrep=False)
    task = asyncio.ensure_future(grep.call(parse_tool_input(grep, {"pattern": "needle", "output_mode": "count"}), ctx))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await finishes(task)
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("codeloop-"))
    gate.set()


async def test_abort_kills_ripgrep(tmp_path, monkeypatch):
    pid_file = tmp_path / "rg.pid"
    fake = tmp_path / "fake-rg"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    fake.chmod(0o755)
    monkeypatch.setattr(GrepTool, "_rg", lambda self: str(fake))
    (tmp_path / "f.txt").write_text("needle\n")
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    grep = GrepTool()
    task = asyncio.ensure_future(grep.call(parse_tool_input(grep, {"pattern": "needle"}), ctx))
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.02)
    ctx.abort.abort()
    with pytest.raises(ToolError, match="aborted"):
        await finishes(task)
    assert not Path(f"/proc/{pid_file.read_text().strip()}").exists()


# -- ripgrep comes with the package -------------------------------------------------------------
def test_rg_of_this_environment_is_preferred(tmp_path, monkeypatch):
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(ripgrep_mod.sysconfig, "get_path", lambda *a, **k: str(tmp_path))
    ripgrep_mod.env_rg.cache_clear()
    try:
        assert ripgrep_mod.find_rg() == str(fake)
    finally:
        ripgrep_mod.env_rg.cache_clear()


def test_ripgrep_dependency_installs_rg_beside_python():
    rg = ripgrep_mod.env_rg()
    assert rg is not None, "the `ripgrep` package (a dependency) should put rg in this environment"
    out = subprocess.run([rg, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("ripgrep ")


async def test_fallback_says_when_a_file_was_searched_only_in_part(ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(grep_fallback, "MAX_FILE_BYTES", 1000)
    (tmp_path / "big.txt").write_text("early needle\n" + "filler\n" * 500 + "late needle\n")
    r = await call(GrepTool(use_ripgrep=False), ctx, pattern="needle", output_mode="content")
    assert r.content.startswith(f"{tmp_path / 'big.txt'}:1:early needle\n\n")
    assert "late needle" not in r.content and "1 file larger than" in r.content
