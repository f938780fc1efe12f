"""Benchmarks against the scripted fake API (never run by the test suite).

    python bench/bench_loop.py [--runs N] [--turns N]

Reports medians of: `codeloop --version` wall time; process start → first API request; and
loop overhead per tool turn over N Bash `true` turns (total time minus time inside the tool),
for the first and last tenth of the turns, to show it stays flat as the transcript grows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402


def _env(tmp: str, base_url: str = "http://127.0.0.1:9") -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE (set in some sandboxes) would make every run compile every module
    # from source (~100 ms); a normal install has its bytecode cached, so measure that.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": base_url, "CODELOOP_CONFIG_DIR": tmp})
    return env


def _codeloop_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("codeloop")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "codeloop"]


def bench_version(runs: int) -> float:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([*_codeloop_cmd(), "--version"], env=_env(tmp), capture_output=True, check=True)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def bench_first_request(runs: int) -> float:
    times = []
    bench_version(1)  # warm the bytecode cache
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            arrived: list[float] = []

            def respond(req, arrived=arrived):
                arrived.append(time.perf_counter())
                return sse(text("ok"))

            api = ScriptedAPI(respond)
            with api.serve() as url:
                t0 = time.perf_counter()
                subprocess.run([*_codeloop_cmd(), "-p", "hi", "--no-session-persistence"], cwd=tmp,
                               env=_env(tmp, url), capture_output=True, check=True)
            times.append((arrived[0] - t0) * 1000)
    return statistics.median(times)


async def _loop_overhead(turns: int) -> tuple[float, float, float]:
    from codeloop.cli.startup.options import options_from_argv
    from codeloop.session.assembly import open_session
    from codeloop.events import UserEvent
    from codeloop.providers.anthropic import AnthropicProvider

    api = ScriptedAPI(*[sse(tool_use("Bash", {"command": "true"})) for _ in range(turns)], sse(text("done")))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CODELOOP_CONFIG_DIR"] = tmp
        os.environ["ANTHROPIC_API_KEY"] = "bench"
        os.chdir(tmp)
        conv, _ = await open_session(options_from_argv(["-p", "x", "--dangerously-skip-permissions"]),
                                     provider=AnthropicProvider(api_key="k", base_url="http://fake",
                                                                transport=api.transport()))
        bash = next(t for t in conv.config.tools if t.name == "Bash")
        in_tool: list[float] = []
        real_call = bash.call

        async def timed_call(inp, ctx):
            t = time.perf_counter()
            try:
                return await real_call(inp, ctx)
            finally:
                in_tool.append(time.perf_counter() - t)

        bash.call = timed_call  # type: ignore[method-assign]
        marks = [time.perf_counter()]
        async for ev in conv.submit("go"):
            if isinstance(ev, UserEvent) and ev.message.tool_result_ids():
                marks.append(time.perf_counter())
        conv.close()
    per_turn = [(marks[i + 1] - marks[i] - in_tool[i]) * 1000 for i in range(len(in_tool))]
    tenth = max(1, turns // 10)
    return (statistics.median(per_turn), statistics.median(per_turn[:tenth]), statistics.median(per_turn[-tenth:]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--turns", type=int, default=50)
    a = ap.parse_args()
    print(f"codeloop --version            median {bench_version(a.runs):7.1f} ms  (target < 150)")
    print(f"start → first API request     median {bench_first_request(a.runs):7.1f} ms  (target < 300)")
    med, first, last = asyncio.run(_loop_overhead(a.turns))
    print(f"loop overhead per tool turn   median {med:7.2f} ms  (target < 5; "
          f"first tenth {first:.2f} ms, last tenth {last:.2f} ms over {a.turns} turns)")


if __name__ == "__main__":
    main()
