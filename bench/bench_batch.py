"""Benchmark of `codeloop batch` against the scripted fake API (never run by the test suite).

    python bench/bench_batch.py [--tasks 100] [--workers 4] [--backends local,ray]

For each backend: runs N trivial tasks (one model answer, no tools, an empty workspace each) as
`codeloop batch` in a subprocess and reports
- tasks/minute over the whole command (Ray's start-up included) and after the first result;
- worker overhead per task beyond the task's own model time: the task's wall time inside its
  worker (workspace, `codeloop -p` process start-up and shutdown, transcript, diff) minus the
  time the loop spent in API calls (`duration_api_ms`). Target: < 0.5 s. On a loaded machine
  that wall time mostly measures waiting for a CPU, so the CPU seconds spent per task (the batch,
  its git calls and the loop processes, from the children's rusage) are reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakeapi import ScriptedAPI, sse, text  # noqa: E402


def _env(tmp: Path, base_url: str) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE (set in some sandboxes) would make every process compile codeloop from
    # source; a normal install has its bytecode cached, so measure that.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_", "RAY_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": base_url,
                "CODELOOP_CONFIG_DIR": str(tmp / "cfg"), "HOME": str(tmp)})
    return env


def _children_cpu() -> float:
    """CPU seconds of every finished descendant (the batch, its git calls and loop processes)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def run(backend: str, n: int, workers: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp_s:
        tmp = Path(tmp_s)
        tasks = tmp / "tasks.jsonl"
        tasks.write_text("".join(json.dumps({"id": f"b{i:03d}", "prompt": "say ok"}) + "\n" for i in range(n)))
        out = tmp / "results.jsonl"
        api = ScriptedAPI(*[sse(text("ok")) for _ in range(n)])
        args = [sys.executable, "-m", "codeloop", "batch", str(tasks), "--out", str(out), "--workers", str(workers),
                "--backend", backend]
        if backend == "ray":
            args += ["--ray-task-cpus", str(max(0.1, (os.cpu_count() or 1) / workers)), "--ray-task-memory-mb", "64"]
        with api.serve() as url:
            t0, cpu0 = time.monotonic(), _children_cpu()
            proc = subprocess.run(args, cwd=tmp, env=_env(tmp, url), capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL)
            wall, cpu = time.monotonic() - t0, _children_cpu() - cpu0
        if proc.returncode != 0:
            raise SystemExit(f"{backend}: batch failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        recs = [json.loads(x) for x in out.read_text().splitlines()]
        assert len(recs) == n and all(r["outcome"] == "success" for r in recs)
        first_done = min(r["finished_at"] for r in recs)
        last_done = max(r["finished_at"] for r in recs)
        overhead = [(r["wall_ms"] - (r["duration_api_ms"] or 0)) / 1000 for r in recs]
        model = [(r["duration_api_ms"] or 0) / 1000 for r in recs]
        phases = {k: statistics.median(r["timings_ms"][k] for r in recs) / 1000
                  for k in ("workspace", "loop_process", "diff")}
        return {"wall_s": wall, "tasks_per_min": n / wall * 60,
                "tasks_per_min_steady": (n - 1) / max(last_done - first_done, 1e-6) * 60,
                "overhead_median_s": statistics.median(overhead), "overhead_p90_s": _pct(overhead, 0.9),
                "cpu_per_task_s": cpu / n, "model_median_s": statistics.median(model),
                **{f"{k}_median_s": v for k, v in phases.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--backends", default="local,ray")
    a = ap.parse_args()
    print(f"{a.tasks} trivial tasks, {a.workers} workers, {os.cpu_count()} CPUs, "
          f"load average before: {os.getloadavg()[0]:.1f}")
    for backend in a.backends.split(","):
        r = run(backend, a.tasks, a.workers)
        print(f"{backend:>5}: {r['tasks_per_min']:6.1f} tasks/min overall ({r['wall_s']:.1f} s), "
              f"{r['tasks_per_min_steady']:6.1f} tasks/min after the first result; "
              f"overhead per task beyond model time: median {r['overhead_median_s']:.3f} s, "
              f"p90 {r['overhead_p90_s']:.3f} s (model time median {r['model_median_s']:.3f} s)")
        if backend == "local":  # Ray's workers are reaped by its raylet, outside this process tree
            print(f"       CPU per task (batch + git + loop process, load-independent): {r['cpu_per_task_s']:.3f} s")
        print(f"       medians: workspace {r['workspace_median_s']:.3f} s, codeloop process "
              f"{r['loop_process_median_s']:.3f} s, diff {r['diff_median_s']:.3f} s")
    print(f"load average during the run: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
