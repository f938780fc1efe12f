"""Grep / Glob on a large tree against plain ripgrep (never run by the test suite).

    python bench/bench_search.py [--files 20000] [--runs 5]

Builds a tree of N small files (every file matches), then reports medians of: the Grep tool in
content and count mode with head_limit=10, `rg PATTERN | head -10` (the floor: rg stopped as soon
as enough lines are out), the Grep tool in content mode without a limit (the whole tree), the Glob
tool for `**/*.py` (every file) and for `**/*.md` (no file: the walk alone), `rg --files -g '*.py'`,
and `find -printf '%T@ %P'` (the native floor of a listing with each file's mtime, which Glob's
newest-first order needs: one stat per match). Issue 18: a limited Grep must cost about what
`rg | head` costs, not what a whole-tree search costs; Glob must cost about what `rg --files` does.

The rg rows run the very binary the tools use (`find_rg`), started directly: an `rg` found through
a shell's PATH may be a wrapper (pyenv's shim execs a bash script first: +60 ms on this machine).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def build(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"pkg{i % 200}" / f"mod{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text(f"import os\n\ndef needle_{i}():\n    return 'needle'\n")


async def tool_ms(tool, raw: dict, root: Path, runs: int) -> float:
    from codeloop.tools.base import ToolContext
    from codeloop.tools.registry import parse_tool_input

    times = []
    for _ in range(runs):
        ctx = ToolContext(cwd=root, project_dir=root)
        t0 = time.perf_counter()
        await tool.call(parse_tool_input(tool, raw), ctx)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def shell_ms(cmd: str | list[str], root: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, shell=isinstance(cmd, str), cwd=root, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    from codeloop.tools.builtin.glob import GlobTool
    from codeloop.tools.builtin.grep import GrepTool
    from codeloop.tools.builtin.ripgrep import find_rg

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, a.files)
        grep, glob = GrepTool(), GlobTool()
        rows = [
            ("Grep content, head_limit=10", await tool_ms(grep, {"pattern": "needle", "output_mode": "content",
                                                                 "head_limit": 10}, root, a.runs)),
            ("Grep count, head_limit=10", await tool_ms(grep, {"pattern": "needle", "output_mode": "count",
                                                               "head_limit": 10}, root, a.runs)),
            ("Grep content, no limit", await tool_ms(grep, {"pattern": "needle", "output_mode": "content",
                                                            "head_limit": 10**9}, root, a.runs)),
            ("Glob **/*.py", await tool_ms(glob, {"pattern": "**/*.py"}, root, a.runs)),
            ("Glob **/*.md (no match)", await tool_ms(glob, {"pattern": "**/*.md"}, root, a.runs)),
        ]
        if (rg := find_rg()) is not None:
            print(f"rg: {rg}")
            rows += [("rg needle | head -10", shell_ms(f"{shlex.quote(rg)} -n needle . | head -10", root, a.runs)),
                     ("rg --files -g '*.py'", shell_ms([rg, "--files", "-g", "*.py"], root, a.runs)),
                     ("rg --files -g '*.md'", shell_ms([rg, "--files", "-g", "*.md"], root, a.runs))]
        if shutil.which("find"):
            rows.append(("find -name '*.py' -printf %T@", shell_ms(
                ["find", ".", "-name", "*.py", "-type", "f", "-printf", r"%T@ %P\0"], root, a.runs)))
        for name, ms in rows:
            print(f"{name:32} median {ms:8.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
