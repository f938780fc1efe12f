"""Issue 18's growth figure as CPU time: codeloop's own per-turn work, free of the machine's load.

    PYTHONPATH=CHECKOUT/src python bench/bench_growth_cpu.py 500 [--persist]

Runs `codeloop -p` in-process (one Bash `true` tool call a turn) against tests/fakeapi.py served
from threads, and at each request reads the CPU clock of codeloop's main thread, so other
processes and the fake server's threads do not count. The server does not parse bodies (a growing
body is the server's O(n), not codeloop's). Prints the medians of turns 2–51, 451–500 (and
951–1000, 1951–2000 when run that long) for main-thread CPU and wall time, and peak RSS (which
here includes the server threads). Never run by tests.
"""
import json as _json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import fakeapi  # noqa: E402
from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402


class _J:
    dumps = staticmethod(_json.dumps)
    @staticmethod
    def loads(b, *a, **k):
        return {} if isinstance(b, (bytes, bytearray)) and len(b) > 4096 else _json.loads(b, *a, **k)
fakeapi.json = _J
N = int(sys.argv[1])
persist = "--persist" in sys.argv
home = tempfile.mkdtemp()
clk = time.pthread_getcpuclockid(threading.main_thread().ident)
cpu, wall = [], []
def respond(req, last):
    cpu.append(time.clock_gettime(clk))
    wall.append(time.perf_counter())
    api.requests.clear()
    return sse(text("done")) if last else sse(tool_use("Bash", {"command": "true"}))
api = ScriptedAPI(*[lambda r, last=(i == N): respond(r, last) for i in range(N + 1)])
with api.serve() as url:
    os.environ.update({"ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": home, "HOME": home})
    os.chdir(home)
    from codeloop.cli.main import main
    so = sys.stdout
    sys.stdout = open(os.devnull, "w")
    try:
        main(["-p", "go", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"]
             + ([] if persist else ["--no-session-persistence"]))
    except SystemExit:
        pass
    sys.stdout = so
c = [(b - a) * 1000 for a, b in zip(cpu, cpu[1:])]
w = [(b - a) * 1000 for a, b in zip(wall, wall[1:])]
out = {"cpu": [statistics.median(c[1:51])] + [statistics.median(c[k-50:k]) for k in (500, 1000, 2000) if k <= N],
       "wall": [statistics.median(w[1:51])] + [statistics.median(w[k-50:k]) for k in (500, 1000, 2000) if k <= N],
       "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
print(_json.dumps(out))
