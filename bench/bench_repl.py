"""Keystroke-to-screen latency of the REPL with a 500-message session loaded.

Resumes a 500-message transcript in a real pseudo-terminal, types characters one at a time and
times each until its echo appears in the terminal output. Reports median and p95.

    python bench/bench_repl.py [--messages 500] [--keys 200]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "repl"), str(ROOT / "src")]

from fakeapi import ScriptedAPI  # noqa: E402
from ptyterm import CPR_REQUEST, Term, write_session  # noqa: E402


def measure(term: Term, ch: str, timeout: float = 10) -> float:
    started = time.perf_counter()
    term.send(ch)
    pats = [CPR_REQUEST, re.escape(ch)]
    while True:
        i = term.child.expect(pats, timeout=timeout)
        if i == 0:
            term.child.send("\x1b[1;1R")
            continue
        return (time.perf_counter() - started) * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=500)
    ap.add_argument("--keys", type=int, default=200)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, ScriptedAPI().serve() as url:
        cwd = Path(d)
        args = ["--resume", write_session(cwd, a.messages)] if a.messages else []
        term = Term(cwd, url, *args, timeout=60)
        term.child.delaybeforesend = None  # pexpect sleeps 50 ms before every send by default
        try:
            term.ready()
            time.sleep(1.0)  # let the first render settle
            alphabet = "abcdefghijklmnopqrstuvwxyz"
            samples = []
            for i in range(a.keys):
                samples.append(measure(term, alphabet[i % len(alphabet)]))
                if i % 50 == 49:  # keep the line short: clear it (Ctrl+U) and let the redraw finish
                    term.send("\x15")
                    time.sleep(0.2)
            term.send("\x03")
            time.sleep(0.1)
            term.send("\x03")
            term.wait_exit()
        finally:
            term.close()
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    print(f"REPL keystroke-to-screen latency, {a.messages}-message session, {len(samples)} keys: "
          f"median {statistics.median(samples):.2f} ms, p95 {p95:.2f} ms, max {samples[-1]:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
