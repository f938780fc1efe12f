"""Network deadline benchmark (never run by the test suite).

    python bench/bench_network.py [--runs N] [--idle-ms MS]

A real `codeloop -p` subprocess talks to the loopback fake API, whose first response sends a
few events and then stalls with the connection open. Reports medians of: stall → the
`api_retry` line on stdout (the idle deadline firing), and stall → the retried request reaching
the server (idle deadline + first backoff delay, 0.5-0.625 s). The idle deadline is
CLAUDE_STREAM_IDLE_TIMEOUT_MS (default 90 s; --idle-ms sets it for the run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakeapi import ScriptedAPI, sse, stalled, text  # noqa: E402


def one_run(idle_ms: int) -> tuple[float, float]:
    marks: dict[str, float] = {}

    def first(_req):
        marks["stall"] = time.monotonic()   # its few chunks go out at once, then nothing
        return stalled(text("the beginning of an answer", chunks=4), after=4, stall_s=idle_ms / 1000 + 30)

    def second(_req):
        marks["retry_request"] = time.monotonic()
        return sse(text("the whole answer"))

    api = ScriptedAPI(first, second)
    with tempfile.TemporaryDirectory() as tmp, api.serve() as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_"))}
        env.update({"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": tmp,
                    "HOME": tmp, "CLAUDE_STREAM_IDLE_TIMEOUT_MS": str(idle_ms),
                    "PYTHONPATH": str(ROOT / "src")})
        proc = subprocess.Popen([sys.executable, "-m", "codeloop", "-p", "hi", "--output-format", "stream-json",
                                 "--verbose"], cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line).get("subtype") == "api_retry":
                marks["retry_line"] = time.monotonic()
        proc.wait(timeout=60)
    return marks["retry_line"] - marks["stall"], marks["retry_request"] - marks["stall"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle-ms", type=int, default=2000)
    args = ap.parse_args()
    results = [one_run(args.idle_ms) for _ in range(args.runs)]
    lines, requests = [r[0] for r in results], [r[1] for r in results]
    print(f"idle deadline {args.idle_ms} ms, {args.runs} runs")
    print(f"  stall -> api_retry shown     median {statistics.median(lines):.2f} s  (min {min(lines):.2f}, "
          f"max {max(lines):.2f})")
    print(f"  stall -> retried request     median {statistics.median(requests):.2f} s  (min {min(requests):.2f}, "
          f"max {max(requests):.2f})")


if __name__ == "__main__":
    main()
