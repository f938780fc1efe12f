"""Sandbox start-up cost per Bash call (never run by the test suite).

    python bench/bench_sandbox.py [--runs N]

Reports medians, over N calls each, of the Bash tool running `true` (a) unsandboxed, (b) inside
the bubblewrap sandbox, (c) sandboxed with a Read deny rule that must be found at any depth
(`.env`, walking a 2,000-file project), and (d) the layout planning alone; plus the cost of a
read-only command (`ls`) with the sandbox on, which takes the fast path (no bwrap). Target: the
sandbox adds < 15 ms median per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from codeloop.config.sandbox import sandbox_settings  # noqa: E402
from codeloop.sandbox.bwrap import probe  # noqa: E402
from codeloop.sandbox.runtime import Sandbox  # noqa: E402
from codeloop.tools.base import ToolContext  # noqa: E402
from codeloop.tools.builtin.bash import BashTool  # noqa: E402
from codeloop.tools.registry import parse_tool_input  # noqa: E402


def make_project(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"pkg{i % 40}" / f"mod{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text("x = 1\n")
    (root / "pkg3" / ".env").write_text("SECRET=1\n")


async def time_calls(ctx: ToolContext, command: str, runs: int) -> float:
    tool = BashTool()
    inp = parse_tool_input(tool, {"command": command})
    await tool.call(inp, ctx)                     # warm-up (probe, imports)
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        await tool.call(inp, ctx)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    if probe().error:
        sys.exit(f"bench_sandbox: {probe().error}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root, 2000)
        on = sandbox_settings({"sandbox": {"enabled": True}})
        plain = Sandbox(on, [str(root)], home=str(root / "home"), protected_dirs=[str(root / ".cfg")])
        deep = Sandbox(on, [str(root)], home=str(root / "home"), protected_dirs=[str(root / ".cfg")],
                       read_deny=lambda: [(".env", "cli")])

        async def run() -> dict[str, float]:
            def ctx(sb):
                return ToolContext(cwd=root, project_dir=root, extra={"sandbox": sb})
            out = {"unsandboxed `true`": await time_calls(ctx(None), "true", args.runs),
                   "sandboxed `true`": await time_calls(ctx(plain), "true", args.runs),
                   "sandboxed `true`, `.env` deny rule (2,000 files walked)": await time_calls(ctx(deep), "true",
                                                                                           args.runs),
                   "read-only `ls`, sandbox on (fast path)": await time_calls(ctx(plain), "ls", args.runs),
                   "read-only `ls`, sandbox off": await time_calls(ctx(None), "ls", args.runs)}
            samples = []
            for _ in range(args.runs):
                t = time.perf_counter()
                with plain.prepare(str(root), []):
                    pass
                samples.append(time.perf_counter() - t)
            out["layout + argv only"] = statistics.median(samples) * 1000
            return out

        results = asyncio.run(run())
    for name, ms in results.items():
        print(f"{name:60s} {ms:7.2f} ms")
    added = results["sandboxed `true`"] - results["unsandboxed `true`"]
    print(f"{'sandbox start-up cost per call (median difference)':60s} {added:7.2f} ms  (target < 15 ms)")


if __name__ == "__main__":
    main()
