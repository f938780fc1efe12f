"""File-tool memory benchmark (never run by the test suite).

    python bench/bench_file_tools.py [--dir DIR]

Peak RSS (ru_maxrss) of a fresh process that runs one tool call on a 1 GiB file, against the
same process doing the call on a one-line file (the interpreter + imports baseline). Two files:
a *sparse* 1 GiB file (20,000 text lines, then a hole of zeros) and a *real* 1 GiB text file
(short lines, all written to disk). Calls: Read (default window), Read at offset 19,999,
Grep content mode with the Python fallback and with ripgrep (no match: the whole file is
searched), and Grep with head_limit=5. Target (issue 13): < 100 MB RSS for Read and Grep.
rg's own RSS (a child process) is reported separately with RUSAGE_CHILDREN. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import asyncio, json, resource, sys
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from codeloop.tools.base import ToolContext
from codeloop.tools.builtin.grep import GrepTool
from codeloop.tools.builtin.read import ReadTool
from codeloop.tools.registry import parse_tool_input
CALLS = {
    "read": (ReadTool, {}, lambda p: {"file_path": p}),
    "read_offset": (ReadTool, {}, lambda p: {"file_path": p, "offset": 19_999, "limit": 10}),
    "grep_python": (GrepTool, {"use_ripgrep": False}, lambda p: {"pattern": "zzznomatch", "path": p,
                                                                 "output_mode": "content"}),
    "grep_rg": (GrepTool, {"use_ripgrep": True}, lambda p: {"pattern": "zzznomatch", "path": p,
                                                            "output_mode": "content"}),
    "grep_head_limit": (GrepTool, {"use_ripgrep": True}, lambda p: {"pattern": "needle", "path": p,
                                                                    "output_mode": "content", "head_limit": 5}),
}
cls, kw, raw = CALLS[sys.argv[1]]
path = Path(sys.argv[2])
async def main():
    tool = cls(**kw)
    ctx = ToolContext(cwd=path.parent, project_dir=path.parent)
    r = await tool.call(parse_tool_input(tool, raw(str(path))), ctx)
    return len(r.content) if isinstance(r.content, str) else 0
import time
t = time.perf_counter()
n = asyncio.run(main())
# VmHWM (this process image's peak RSS): ru_maxrss would include the forking parent's peak
hwm = int([line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")][0])
print(json.dumps({"self_kib": hwm,
                  "children_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "seconds": time.perf_counter() - t, "chars": n}))
"""


def make_sparse(path: Path) -> None:
    with open(path, "wb") as f:
        f.write(b"".join(b"line %d needle\n" % i for i in range(1, 20_001)))
        f.truncate(1 << 30)


def make_real(path: Path) -> None:
    line = b"the quick brown fox jumps over the lazy dog; needle %08d\n"
    with open(path, "wb") as f:
        written, i = 0, 0
        while written < (1 << 30):
            chunk = b"".join(line % (i + k) for k in range(10_000))
            f.write(chunk)
            written += len(chunk)
            i += 10_000


def probe(call: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, call, str(path), str(ROOT / "src")],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None, help="where to put the 1 GiB files (default: a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tiny = Path(d) / "tiny.txt"
        tiny.write_text("line 1 needle\n")
        sparse, real = Path(d) / "sparse.log", Path(d) / "real.log"
        make_sparse(sparse)
        t = time.perf_counter()
        make_real(real)
        print(f"(wrote the real 1 GiB file in {time.perf_counter() - t:.1f} s)")
        print(f"{'call':<16} {'baseline MB':>11} {'sparse MB':>10} {'real MB':>8} {'rg child MB':>12} {'real s':>7}")
        for call in ("read", "read_offset", "grep_python", "grep_rg", "grep_head_limit"):
            base, sp, re_ = probe(call, tiny), probe(call, sparse), probe(call, real)
            print(f"{call:<16} {base['self_kib'] / 1024:>11.1f} {sp['self_kib'] / 1024:>10.1f} "
                  f"{re_['self_kib'] / 1024:>8.1f} {max(sp['children_kib'], re_['children_kib']) / 1024:>12.1f} "
                  f"{re_['seconds']:>7.2f}")
        os.unlink(real)


if __name__ == "__main__":
    main()
