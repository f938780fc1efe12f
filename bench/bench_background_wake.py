"""Background-completion wake-up latency of the idle REPL (issue 27).

The REPL runs in a real pseudo-terminal against the scripted fake API. Each round the model
starts a background Bash command that waits for a gate file; once the turn is over and the REPL
sits idle at the prompt, the gate is created, the command writes its end time (`date +%s.%N`) and
exits. The fake server records when the next request arrives: that request is the model being
told, with nobody typing. Reports the median (and max) of end → request.

    python bench/bench_background_wake.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "repl"), str(ROOT / "src")]

from fakeapi import Request, ScriptedAPI, sse, text, tool_use  # noqa: E402
from ptyterm import Term  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    arrivals: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as d:
        cwd = Path(d)
        script = []
        for i in range(a.runs):
            gate, end = cwd / f"go{i}", cwd / f"end{i}"
            command = f"while [ ! -e {gate} ]; do sleep 0.005; done; date +%s.%N > {end}"
            script += [sse(tool_use("Bash", {"command": command, "run_in_background": True}, id=f"bg{i}")),
                       sse(text(f"started {i}"))]

            def woke(req: Request, i: int = i) -> object:
                arrivals[i] = time.time()
                return sse(text(f"woke {i}"))
            script.append(woke)
        api = ScriptedAPI(*script)
        with api.serve() as url:
            term = Term(cwd, url, "--allowedTools", "Bash", timeout=60)
            term.child.delaybeforesend = None
            samples = []
            try:
                term.ready()
                for i in range(a.runs):
                    term.line(f"round {i}")
                    term.expect(f"started {i}")
                    time.sleep(0.3)          # let the turn end: the REPL is idle at the prompt
                    (cwd / f"go{i}").touch()
                    term.expect(f"woke {i}")
                    ended = float((cwd / f"end{i}").read_text())
                    samples.append((arrivals[i] - ended) * 1000)
                term.line("/exit")
                term.wait_exit()
            finally:
                term.close()
    samples.sort()
    print(f"idle REPL, background command end → the model's next request, {len(samples)} runs: "
          f"median {statistics.median(samples):.1f} ms, min {samples[0]:.1f} ms, max {samples[-1]:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
