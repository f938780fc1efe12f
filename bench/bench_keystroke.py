"""Keystroke-to-echo latency of the REPL on a long session (issue 27 item 4).

Resumes a transcript of `--messages` messages (2,000 by default) in a real pseudo-terminal, types
characters one at a time and times each from the write to the pty until its echo comes back.
Reports median and p95 against the targets (median < 16 ms, p95 < 33 ms: one and two frames at
60 Hz). `--status-line` adds a settings statusLine command (it reruns on every change, off the
keystroke path) and `--vim` types in vim's insert mode, so their cost shows in the same figures;
`--busy` types while the model streams a long answer (a turn of the 2,000-message session: the
context pipeline, the transcript and the renderer all share the loop with the prompt).
The characters typed are Cyrillic letters: they appear in no escape sequence, spinner or answer,
so the first one seen is the echo.

    python bench/bench_keystroke.py [--messages 2000] [--keys 300] [--status-line] [--vim] [--busy]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "repl"), str(ROOT / "src")]

from fakeapi import ScriptedAPI, sse, text  # noqa: E402
from ptyterm import CPR_REQUEST, Term, write_session  # noqa: E402

TARGET_MEDIAN_MS, TARGET_P95_MS = 16.0, 33.0
ALPHABET = "абвгдежзийклмнопрстуфхцчшщ"
STREAM_S = 60.0          # --busy: how long the answer streams (longer than the typing)


def echo_ms(term: Term, ch: str, timeout: float = 10) -> float:
    """Send one character; milliseconds until it is echoed (CPR requests are answered on the way)."""
    started = time.perf_counter()
    term.send(ch)
    pats = [CPR_REQUEST, re.escape(ch)]
    while True:
        if term.child.expect(pats, timeout=timeout) == 0:
            term.child.send("\x1b[1;1R")
            continue
        return (time.perf_counter() - started) * 1000


def settings(status_line: bool, vim: bool) -> dict[str, object]:
    out: dict[str, object] = {}
    if status_line:   # a typical script: reads the JSON, prints model and cost
        script = ("import json,sys; d=json.load(sys.stdin); "
                  "print(d['model']['display_name'], round(d['cost']['total_cost_usd'], 4))")
        out["statusLine"] = {"type": "command", "command": f"{sys.executable} -c \"{script}\""}
    if vim:
        out["editorMode"] = "vim"
    return out


def slow_answer() -> ScriptedAPI:
    """One long answer, streamed in 600 pieces over STREAM_S seconds, as a model writes."""
    resp = sse(text("Streaming paragraph 0123456789. " * 20 + "\n\n" + "More words, 42. " * 600, chunks=600))
    step = STREAM_S / len(resp.chunks)
    resp.chunks = [(step if i > 2 else d, c) for i, (d, c) in enumerate(resp.chunks)]
    return ScriptedAPI(resp)


def run(messages: int, keys: int, status_line: bool, vim: bool, busy: bool = False) -> list[float]:
    api = slow_answer() if busy else ScriptedAPI()
    with tempfile.TemporaryDirectory() as d, api.serve() as url:
        cwd = Path(d)
        args = ["--resume", write_session(cwd, messages)] if messages else []
        (cwd / ".cfg").mkdir(exist_ok=True)
        (cwd / ".cfg" / "settings.json").write_text(json.dumps(settings(status_line, vim)))
        term = Term(cwd, url, *args, timeout=120)
        term.child.delaybeforesend = None  # pexpect sleeps 50 ms before every send by default
        samples: list[float] = []
        try:
            term.ready()
            time.sleep(1.5)  # let the resumed history and the first status line settle
            if busy:
                term.send("write a long answer\r")
                term.expect("Streaming paragraph")
            for i in range(keys):
                samples.append(echo_ms(term, ALPHABET[i % len(ALPHABET)]))
                if i % 50 == 49:  # keep the line short: clear it and let the redraw finish
                    term.send("\x15")
                    time.sleep(0.2)
            term.send("\x03")
            time.sleep(0.1)
            term.send("\x03")
            term.wait_exit()
        finally:
            term.close()
    return samples


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--keys", type=int, default=300)
    ap.add_argument("--status-line", action="store_true")
    ap.add_argument("--vim", action="store_true")
    ap.add_argument("--busy", action="store_true")
    a = ap.parse_args()
    samples = sorted(run(a.messages, a.keys, a.status_line, a.vim, a.busy))
    median = statistics.median(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    extras = "".join(f" +{n}" for n, on in (("statusLine", a.status_line), ("vim", a.vim),
                                                       ("typing while the model streams", a.busy)) if on)
    verdict = "meets" if median < TARGET_MEDIAN_MS and p95 < TARGET_P95_MS else "MISSES"
    print(f"keystroke-to-echo, {a.messages}-message session{extras}, {len(samples)} keys: "
          f"median {median:.2f} ms, p95 {p95:.2f} ms, max {samples[-1]:.2f} ms "
          f"({verdict} the targets: median < {TARGET_MEDIAN_MS:g} ms, p95 < {TARGET_P95_MS:g} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
