"""The issue-18 harness figures, each measured on a real `codeloop -p` subprocess (never run by tests).

    python bench/bench_harness.py [--src CHECKOUT ...] [--rounds 5] [--only FIGURES]

Every figure of issue 18's table, against the loopback fake API (tests/fakeapi.py, TCP_NODELAY on):

- startup:  process start → first request reaching the server
- first:    first tool turn (a Bash `true` call): request 1 → request 2 at the server
- later:    median of the later tool turns of a 20-turn run (request k → k+1)
- exit:     the result line on stdout → the process reaped
- rss:      peak RSS of the 20-turn run (and of the 2,000-turn run, with `resume`), as wait4 reports
            it (this process's pages held by the child until it execs count too), and codeloop's
            own peak ("own rss": VmHWM when the result line arrives)
- growth:   median per-turn time of turns 2–51 and 451–500 of one 500-turn run
- resume:   `--resume` of a 2,000-turn session (built once per checkout) and one more tool turn:
            start → first request, that tool turn (request 1 → 2), and start → exit
- instr:    instructions executed from process start to the first request leaving (valgrind's
            callgrind; the process ends there): a start-up figure a busy machine does not skew
- instr-turn: instructions of the first tool turn (request 1 → 2) and of a later one (the mean of
            requests 11 → 31); codeloop's own, its shell children not counted: the main thread's
            (what a turn costs) and all threads' (with the warm-up thread's imports of pydantic and
            the common tools, which in valgrind's slow time land in some turn or other)
- instr-resume: instructions to the first request of a `--resume` of the 2,000-turn session

Each `--src` is a checkout (a directory holding src/codeloop), run through PYTHONPATH; give two
(e.g. a pristine "before" worktree and this one) and the rounds interleave them, so the ratios
come from one run on one machine. PYTHONDONTWRITEBYTECODE is dropped from the children's
environment: an installed codeloop has its bytecode cached, so that is what is measured.
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

from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402

FIGURES = ("startup", "first", "later", "exit", "rss", "growth", "resume", "instr", "instr-turn", "instr-resume")
# Runs codeloop's CLI as `-m codeloop` does, ending the process as its first request is written.
# CODELOOP_BENCH_STOP_AT=N ends it as its Nth request (a write starting with POST) leaves.
_STOP_AT_SEND = ("import os, runpy, socket, sys\n"
                 "_left = [int(os.environ.get('CODELOOP_BENCH_STOP_AT', '1'))]\n"
                 "_send = socket.socket.send\n"
                 "def send(self, data, *a):\n"
                 "    if self.family != socket.AF_UNIX and bytes(data[:5]) == b'POST ':\n"
                 "        _left[0] -= 1\n"
                 "        if not _left[0]:\n"
                 "            os._exit(0)\n"
                 "    return _send(self, data, *a)\n"
                 "socket.socket.send = send\n"
                 "sys.argv = ['codeloop', *sys.argv[1:]]\n"
                 "runpy.run_module('codeloop', run_name='__main__')\n")


def instructions(src: Path, home: str, requests: int = 1, extra: tuple[str, ...] = ("--no-session-persistence",)
                 ) -> tuple[float, float]:
    """Millions of instructions (callgrind's `I refs`) from process start to the moment its
    `requests`th request leaves, each answer before it a Bash `true` call: (every thread, the
    main thread alone). The second leaves out the warm-up thread, whose imports start 50 ms after a
    request if no tool call has come by then: in valgrind's slow time that is some turn or other,
    in real time (a fast answer) never, so only the main thread's figure compares turn with turn."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        return float("nan"), float("nan")
    api = ScriptedAPI(*[sse(tool_use("Bash", {"command": "true"})) for _ in range(requests - 1)], sse(text("done")))
    with api.serve() as url, tempfile.TemporaryDirectory() as out:
        env = {**_env(src, home, url), "PYTHONMALLOC": "malloc", "CODELOOP_BENCH_STOP_AT": str(requests)}
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                               f"--callgrind-out-file={out}/cg", sys.executable, "-c", _STOP_AT_SEND, "-p", "go",
                               "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash",
                               *extra], cwd=home, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)
        main_thread = float("nan")
        try:
            m1 = re.search(r"^totals:\s+(\d+)", Path(out, "cg-01").read_text(errors="replace"), re.M)
            main_thread = int(m1.group(1)) / 1e6 if m1 else float("nan")
        except OSError:
            pass
    m = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    return (int(m.group(1).replace(",", "")) / 1e6 if m else float("nan")), main_thread


def _env(src: Path, home: str, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": home,
                "HOME": home, "PYTHONPATH": str(src / "src")})
    return env


def run_session(src: Path, home: str, tool_turns: int, extra: list[str] | None = None) -> dict:
    """One `codeloop -p` process doing `tool_turns` Bash turns then answering; returns its marks."""
    arrivals: list[float] = []

    def respond(req, last: bool):
        arrivals.append(time.perf_counter())
        # Keep no request bodies: a long run's would grow this process, and a child forked from a
        # big parent reports the parent's pages in its own peak RSS before it execs.
        api.requests.clear()
        return sse(text("done")) if last else sse(tool_use("Bash", {"command": "true"}))

    api = ScriptedAPI(*[lambda r, last=(i == tool_turns): respond(r, last) for i in range(tool_turns + 1)])
    with api.serve() as url:
        cmd = [sys.executable, "-m", "codeloop", "-p", "go", "--output-format", "stream-json", "--verbose",
               "--allowedTools", "Bash", *(extra or [])]
        t0 = time.perf_counter()
        err = tempfile.TemporaryFile()
        proc = subprocess.Popen(cmd, cwd=home, env=_env(src, home, url), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        result_at, session_id, is_error, own_peak = 0.0, "", True, float("nan")
        for line in proc.stdout:
            if line.startswith(b'{"type":"result"') or b'"type": "result"' in line[:40]:
                result_at = time.perf_counter()
                own_peak = _own_peak_mb(proc.pid)
                obj = json.loads(line)
                session_id, is_error = obj.get("session_id", ""), obj.get("is_error", True)
        _, status, usage = os.wait4(proc.pid, 0)
        t_exit = time.perf_counter()
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
    if is_error or len(arrivals) != tool_turns + 1:
        err.seek(0)
        raise RuntimeError(f"{src}: run failed (exit {proc.returncode}, {len(arrivals)} requests): "
                           f"{err.read()[-2000:].decode(errors='replace')}")
    err.close()
    gaps = [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])]
    return {"startup": (arrivals[0] - t0) * 1000, "gaps": gaps, "exit": (t_exit - result_at) * 1000,
            "total": (t_exit - t0) * 1000, "rss": usage.ru_maxrss / 1024, "own rss": own_peak,
            "session_id": session_id}


def _own_peak_mb(pid: int) -> float:
    """codeloop's own peak RSS so far (VmHWM of its address space, read as its result line arrives).

    wait4's ru_maxrss also counts the pages of this harness process, which the child holds from
    fork until it execs: with the harness bigger than codeloop, that figure is the harness's."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", action="append", type=Path, help="checkout to measure (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--turns", type=int, default=20, help="tool turns of the short run")
    ap.add_argument("--growth-turns", type=int, default=500)
    ap.add_argument("--resume-turns", type=int, default=2000)
    ap.add_argument("--only", default=",".join(FIGURES), help=f"comma list of {', '.join(FIGURES)}")
    a = ap.parse_args()
    srcs = [p.resolve() for p in (a.src or [ROOT])]
    only = set(a.only.split(","))
    res: dict[Path, dict[str, list[float]]] = {s: {} for s in srcs}

    def add(src: Path, key: str, value: float) -> None:
        res[src].setdefault(key, []).append(value)

    homes = {s: tempfile.mkdtemp(prefix="bench-harness-") for s in srcs}
    for s in srcs:   # warm each checkout's bytecode cache
        run_session(s, homes[s], 1, ["--no-session-persistence"])
    if only & {"startup", "first", "later", "exit", "rss"}:
        for _ in range(a.rounds):
            for s in srcs:
                r = run_session(s, homes[s], a.turns, ["--no-session-persistence"])
                add(s, "startup", r["startup"])
                add(s, "first", r["gaps"][0])
                add(s, "later", _med(r["gaps"][1:-1]))
                add(s, "exit", r["exit"])
                add(s, "rss", r["rss"])
                if r["own rss"] == r["own rss"]:   # not NaN: read before the process was gone
                    add(s, "own rss", r["own rss"])
    if "growth" in only:
        for s in srcs:
            r = run_session(s, homes[s], a.growth_turns, ["--no-session-persistence"])
            add(s, "growth 2-51", _med(r["gaps"][1:51]))
            add(s, f"growth {a.growth_turns - 49}-{a.growth_turns}",
                _med(r["gaps"][a.growth_turns - 50:a.growth_turns]))
            add(s, f"rss @{a.growth_turns}", r["rss"])
    sessions: dict[Path, str] = {}
    if only & {"resume", "instr-resume"}:
        for s in srcs:
            r = run_session(s, homes[s], a.resume_turns)
            sessions[s] = r["session_id"]
            add(s, f"rss @{a.resume_turns}", r["rss"])
            tr = next(Path(homes[s]).rglob(f"{r['session_id']}.jsonl"), None)
            if tr is not None:
                add(s, f"transcript MB @{a.resume_turns}", tr.stat().st_size / 1e6)
    if "resume" in only:
        for _ in range(a.rounds):
            for s in srcs:
                r = run_session(s, homes[s], 1, ["--resume", sessions[s]])
                add(s, "resume: start→first request", r["startup"])
                add(s, "resume: next tool turn", r["gaps"][0])
                add(s, "resume: start→exit (1 tool turn)", r["total"])
                add(s, "resume: rss", r["rss"])
                if r["own rss"] == r["own rss"]:
                    add(s, "resume: own rss", r["own rss"])
    if "instr" in only:
        for s in srcs:
            add(s, "instructions to first request (M)", instructions(s, homes[s])[0])
    if "instr-turn" in only:
        for s in srcs:
            (a1, m1), (a2, m2), (a11, m11), (a31, m31) = (instructions(s, homes[s], n) for n in (1, 2, 11, 31))
            add(s, "instructions, first tool turn, main thread (M)", m2 - m1)
            add(s, "instructions, later tool turn, main thread (M)", (m31 - m11) / 20)
            add(s, "instructions, first tool turn, all threads (M)", a2 - a1)
            add(s, "instructions, later tool turn, all threads (M)", (a31 - a11) / 20)
    if "instr-resume" in only:
        for s in srcs:
            add(s, "instructions to first request, resume (M)",
                instructions(s, homes[s], 1, ("--resume", sessions[s]))[0])
    keys = list(dict.fromkeys(k for s in srcs for k in res[s]))
    width = max(len(k) for k in keys)
    print(f"{'figure (median)':{width}}  " + "  ".join(f"{str(s)[-24:]:>24}" for s in srcs)
          + ("   ratio last/first" if len(srcs) > 1 else ""))
    for k in keys:
        vals = [_med(res[s].get(k, [])) for s in srcs]
        unit = " MB" if "rss" in k or "MB" in k else " M " if "(M)" in k else " ms"
        line = f"{k:{width}}  " + "  ".join(f"{v:21.1f}{unit}" for v in vals)
        if len(srcs) > 1 and vals[0]:
            line += f"   {vals[-1] / vals[0]:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
