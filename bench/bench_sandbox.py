"""Sandbox start-up cost per Bash call (never run by the test suite).

    python bench/bench_sandbox.py [--runs N]

Reports medians, over N interleaved calls each, of the Bash tool running `touch f` (a) unsandboxed, (b) inside
the bubblewrap sandbox, (c) sandboxed with a Read deny rule that must be found at any depth
(`.env`, walking a 2,000-file project), and (d) the layout planning alone, in a fresh git
checkout (`.mcp.json`, `.claude/`, `.codeloop/` missing: three placeholders), (e) with
`allowedDomains` (the in-sandbox proxy forwarder starts first); plus the cost of a
read-only command (`ls`) with the sandbox on, which runs inside it too (issue 25), and the scan for
configuration planted in subfolders (`sandbox/planted.py`: one lstat per folder, twice a call).
Target: the sandbox adds < 15 ms median per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from codeloop.config.sandbox import sandbox_settings  # noqa: E402
from codeloop.sandbox.bwrap import probe  # noqa: E402
from codeloop.sandbox.planted import revert, take  # noqa: E402
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


async def time_variants(variants: dict[str, tuple[ToolContext, str]], runs: int) -> dict[str, list[float]]:
    """Interleaved: one call of every variant per round, so load drift hits them all alike."""
    tool = BashTool()
    inputs = {k: (ctx, parse_tool_input(tool, {"command": cmd})) for k, (ctx, cmd) in variants.items()}
    for ctx, inp in inputs.values():
        await tool.call(inp, ctx)                 # warm-up (probe, imports)
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(runs):
        for k, (ctx, inp) in inputs.items():
            t = time.perf_counter()
            await tool.call(inp, ctx)
            samples[k].append((time.perf_counter() - t) * 1000)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    if probe().error:
        sys.exit(f"bench_sandbox: {probe().error}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"         # a git checkout; home and config dir elsewhere
        make_project(root, 2000)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        home = Path(tmp) / "home"
        on = sandbox_settings({"sandbox": {"enabled": True}})
        plain = Sandbox(on, [str(root)], home=str(home), protected_dirs=[str(home / ".codeloop")])
        deep = Sandbox(on, [str(root)], home=str(home), protected_dirs=[str(home / ".codeloop")],
                       read_deny=lambda: [(".env", "cli")])
        net = sandbox_settings({"sandbox": {"enabled": True, "network": {"allowedDomains": ["example.com"]}}})
        relay = Sandbox(net, [str(root)], home=str(home), protected_dirs=[str(home / ".codeloop")])

        async def run() -> dict[str, list[float]]:
            def ctx(sb):
                return ToolContext(cwd=root, project_dir=root, sandbox=sb)
            out = await time_variants({
                "unsandboxed `touch f`": (ctx(None), "touch f"),
                "sandboxed `touch f`": (ctx(plain), "touch f"),
                "sandboxed `touch f`, `.env` deny rule (2,000 files walked)": (ctx(deep), "touch f"),
                "sandboxed `touch f`, allowedDomains (proxy relay)": (ctx(relay), "touch f"),
                "read-only `ls`, sandbox on (inside it too)": (ctx(plain), "ls"),
                "read-only `ls`, sandbox off": (ctx(None), "ls")}, args.runs)
            layout = []
            for _ in range(args.runs):
                t = time.perf_counter()
                with plain.prepare(str(root), []):
                    pass
                layout.append((time.perf_counter() - t) * 1000)
            out["layout + argv only"] = layout
            scan, snap = [], take([str(root.resolve())])
            for _ in range(args.runs):
                t = time.perf_counter()
                before = take([str(root.resolve())], snap)
                snap = take([str(root.resolve())], before)
                revert(before, snap)
                scan.append((time.perf_counter() - t) * 1000)
            out["planted-configuration scan (before + after + compare)"] = scan
            return out

        results = asyncio.run(run())
    for name, ms in results.items():
        print(f"{name:60s} {statistics.median(ms):7.2f} ms")
    paired = [b - a for a, b in zip(results["unsandboxed `touch f`"], results["sandboxed `touch f`"])]
    print(f"{'sandbox start-up cost per call (median of paired differences)':60s} "
          f"{statistics.median(paired):7.2f} ms  (target < 15 ms)")


if __name__ == "__main__":
    main()
