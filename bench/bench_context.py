"""Context benchmarks (never run by the test suite).

    python bench/bench_context.py [--runs N]

Reports medians of: `ContextPipeline.run` on a 2,000-message history (target < 20 ms; first
call, when decisions are taken and files saved, reported separately from steady-state calls);
loading a 10,000-entry transcript with `load_transcript` and with `load_from_last_boundary`
(target < 300 ms), the latter for a file whose last boundary sits 500 entries from the end.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from codeloop.context.collapse import ContextCollapse  # noqa: E402
from codeloop.context.pipeline import ContextPipeline  # noqa: E402
from codeloop.session.resume import load_from_last_boundary  # noqa: E402
from codeloop.messages import Message, tool_result_message, user_message  # noqa: E402
from codeloop.session.transcript import TranscriptWriter, load_transcript  # noqa: E402

MODEL = "claude-sonnet-4-5"


def history(n: int) -> list[Message]:
    msgs: list[Message] = [user_message("work on the project")]
    i = 0
    while len(msgs) < n - 1:
        tid = f"toolu_{i:05d}"
        name = ("Read", "Bash", "Grep", "Edit")[i % 4]
        msgs.append(Message(role="assistant", id=f"msg_{i}", content=[
            {"type": "text", "text": f"Step {i}: looking at the code. " * 4},
            {"type": "tool_use", "id": tid, "name": name, "input": {"file_path": f"src/m{i}.py", "command": "ls"}}]))
        size = 40_000 if i % 97 == 0 else 1_500
        msgs.append(tool_result_message(tid, f"line {i}\n" + "x" * size))
        i += 1
    msgs[-2].usage = {"input_tokens": 90_000, "output_tokens": 300}
    msgs.append(user_message("continue"))
    return msgs


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def bench_pipeline(runs: int, tmp: Path) -> tuple[float, float]:
    msgs = history(2_000)

    def fresh_pipeline() -> ContextPipeline:
        return ContextPipeline(session_dir=tmp / "sess", collapse=ContextCollapse())

    loop = asyncio.new_event_loop()
    firsts = []
    for k in range(max(3, runs // 4)):
        pipe = ContextPipeline(session_dir=tmp / f"sess{k}", collapse=ContextCollapse())
        t0 = time.perf_counter()
        loop.run_until_complete(pipe.run(msgs, model=MODEL))
        firsts.append((time.perf_counter() - t0) * 1000)
    pipe = fresh_pipeline()
    loop.run_until_complete(pipe.run(msgs, model=MODEL))
    steady = timed(lambda: loop.run_until_complete(pipe.run(msgs, model=MODEL)), runs)
    loop.close()
    return statistics.median(firsts), statistics.median(steady)


def write_transcript(path: Path, n: int, boundary_from_end: int | None) -> None:
    w = TranscriptWriter(path, "00000000-0000-0000-0000-000000000000", "/tmp")
    msgs = history(n)
    for i, m in enumerate(msgs):
        if boundary_from_end is not None and i == n - boundary_from_end:
            w.append_entry({"type": "system", "subtype": "compact_boundary",
                            "compactMetadata": {"trigger": "auto", "preTokens": 150_000}})
        w.append_message(m)
    w.close()


def bench_resume(runs: int, tmp: Path) -> tuple[float, float, float, int]:
    plain, compacted = tmp / "plain.jsonl", tmp / "compacted.jsonl"
    write_transcript(plain, 10_000, None)
    write_transcript(compacted, 10_000, 500)
    full = statistics.median(timed(lambda: load_transcript(compacted), runs))
    tail = statistics.median(timed(lambda: load_from_last_boundary(compacted), runs))
    no_boundary = statistics.median(timed(lambda: load_from_last_boundary(plain), runs))
    return full, tail, no_boundary, compacted.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        first, steady = bench_pipeline(args.runs, tmp)
        print(f"ContextPipeline.run, 2,000 messages: first call {first:.1f} ms, "
              f"steady state {steady:.1f} ms (median; target < 20 ms)")
        full, tail, no_boundary, size = bench_resume(args.runs, tmp)
        print(f"10,000-entry transcript ({size / 1e6:.1f} MB):")
        print(f"  load_transcript (everything)            {full:.1f} ms")
        print(f"  load_from_last_boundary (500 after it)  {tail:.1f} ms")
        print(f"  load_from_last_boundary (no boundary)   {no_boundary:.1f} ms  (target < 300 ms)")


if __name__ == "__main__":
    main()
