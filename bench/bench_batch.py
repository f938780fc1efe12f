"""Benchmark of `codeloop batch` against the scripted fake API (never run by the test suite).

    python bench/bench_batch.py [--tasks 200] [--workers 4,8] [--backends local,ray] [--json FILE]

For each backend and worker count: runs N trivial tasks (one model answer, no tools, an empty
workspace each) as `codeloop batch` in a subprocess and reports
- tasks/minute over the whole command (Ray's start-up included) and after the first result;
- overhead per task beyond the task's own model time, wall: the task's wall time inside its
  worker (workspace, `codeloop -p` process start-up and shutdown, transcript, diff, cleanup)
  minus the time the loop spent in API calls (`duration_api_ms`). On a loaded machine that wall
  time mostly measures waiting for a CPU, so CPU is reported too:
- CPU per task: local, every finished descendant of this script (the batch, its git calls and
  loop processes) from the children's rusage; Ray, the same for the driver (and the Ray services
  it reaps) plus each task's own figure (`cpu_ms`: its Ray worker and that worker's children),
  since Ray's worker processes are not in this process tree;
- the driver's memory: the batch process's peak resident set (VmHWM), sampled while it runs.
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


def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


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
            proc = subprocess.Popen(args, cwd=tmp, env=_env(tmp, url), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
            peak = 0.0
            while proc.poll() is None:  # VmHWM only grows: the last reading is the peak, near enough
                peak = max(peak, _peak_rss_mb(proc.pid) or 0.0)
                time.sleep(0.1)
            _, stderr = proc.communicate()
            wall, cpu = time.monotonic() - t0, _children_cpu() - cpu0
        if proc.returncode != 0:
            raise SystemExit(f"{backend}: batch failed ({proc.returncode}):\n{stderr[-2000:]}")
        recs = [json.loads(x) for x in out.read_text().splitlines()]
        assert len(recs) == n and all(r["outcome"] == "success" for r in recs)
        if backend == "ray":
            cpu += sum(r.get("cpu_ms") or 0 for r in recs) / 1000
        first_done = min(r["finished_at"] for r in recs)
        last_done = max(r["finished_at"] for r in recs)
        overhead = [(r["wall_ms"] - (r["duration_api_ms"] or 0)) / 1000 for r in recs]
        model = [(r["duration_api_ms"] or 0) / 1000 for r in recs]
        phases = {k: statistics.median(r["timings_ms"].get(k, 0) for r in recs) / 1000
                  for k in ("workspace", "loop_process", "diff", "cleanup")}
        return {"backend": backend, "workers": workers, "tasks": n, "wall_s": wall, "tasks_per_min": n / wall * 60,
                "tasks_per_min_steady": (n - 1) / max(last_done - first_done, 1e-6) * 60,
                "overhead_median_s": statistics.median(overhead), "overhead_p90_s": _pct(overhead, 0.9),
                "cpu_per_task_s": cpu / n, "model_median_s": statistics.median(model), "driver_peak_rss_mb": peak,
                **{f"{k}_median_s": v for k, v in phases.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--workers", default="4,8", help="worker counts, comma-separated")
    ap.add_argument("--backends", default="local,ray")
    ap.add_argument("--json", type=Path, help="also write every figure to this file")
    a = ap.parse_args()
    print(f"{a.tasks} trivial tasks, {os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.1f}")
    rows = []
    for workers in (int(w) for w in a.workers.split(",")):
        for backend in a.backends.split(","):
            r = run(backend, a.tasks, workers)
            rows.append(r)
            print(f"{backend:>5} x{workers}: {r['tasks_per_min']:6.1f} tasks/min overall ({r['wall_s']:.1f} s), "
                  f"{r['tasks_per_min_steady']:6.1f} after the first result; overhead per task beyond model time: "
                  f"wall median {r['overhead_median_s']:.3f} s (p90 {r['overhead_p90_s']:.3f} s), "
                  f"CPU {r['cpu_per_task_s']:.3f} s; model time median {r['model_median_s']:.3f} s; "
                  f"driver peak RSS {r['driver_peak_rss_mb']:.0f} MB")
            print(f"          medians: workspace {r['workspace_median_s']:.3f} s, codeloop process "
                  f"{r['loop_process_median_s']:.3f} s, diff {r['diff_median_s']:.3f} s, "
                  f"cleanup {r['cleanup_median_s']:.3f} s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
