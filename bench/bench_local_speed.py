"""Local-model speed (never run by the test suite): first turn against later turns, slot cache on and off.

    python bench/bench_local_speed.py [--turns 4] [--json out.json]

Starts the embedded llama.cpp server once and replays one growing conversation the way the local
profile sends it (the real tools' schemas, `LocalProvider.request_body`: system prompt, constrained
reply schema, every earlier call and result), one request per turn; each turn adds one real tool
result. Run twice: with the provider's request options (prompt cache kept warm in the one slot) and
with `cache_prompt` switched off, so every turn re-reads the whole prompt. From the server's own
`timings`: per turn the prompt tokens read, tokens served from the cache, prompt-eval and generation
tokens per second and wall time; plus this process's peak RSS (the model lives in it).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

PROMPT = "In inventory.py, rename the function total to grand_total, and update every call of it."
FILE = "def total(items):\n    return sum(i.price * i.count for i in items)\n\n\nprint(total([]))\n"
# (call, result) pairs appended one per turn: what a run of that task looks like
STEPS = [
    (("Read", {"file_path": "inventory.py"}), "\n".join(f"{n:6d}\t{line}" for n, line in
                                                        enumerate(FILE.splitlines(), 1))),
    (("Edit", {"file_path": "inventory.py", "old_string": "def total(items):",
               "new_string": "def grand_total(items):"}),
     "The file inventory.py has been updated. Here's the result of running `cat -n` on a snippet:\n"
     "     1\tdef grand_total(items):\n     2\t    return sum(i.price * i.count for i in items)"),
    (("Edit", {"file_path": "inventory.py", "old_string": "print(total([]))",
               "new_string": "print(grand_total([]))"}),
     "The file inventory.py has been updated. Here's the result of running `cat -n` on a snippet:\n"
     "     5\tprint(grand_total([]))"),
    (("Bash", {"command": "python3 inventory.py"}), "0"),
    (("Grep", {"pattern": "total"}), "inventory.py:1:def grand_total(items):\ninventory.py:5:print(grand_total([]))"),
]


def tool_schemas() -> list[dict[str, Any]]:
    from codeloop.session.local_profile import LOCAL_TOOLS
    from codeloop.tools.registry import builtin_tools

    return [t.api_schema() for t in builtin_tools() if t.name in LOCAL_TOOLS]


def conversation(turn: int) -> list[dict[str, Any]]:
    """The messages after `turn` tool calls and their results."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for i, ((name, inp), result) in enumerate(STEPS[:turn]):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name,
                                                       "input": inp}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                  "content": result}]})
    return msgs


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    import httpx

    timings: dict[str, Any] = {}
    start = time.monotonic()
    with httpx.stream("POST", url + "/chat/completions", json=body, timeout=1800) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[6:])
                timings = chunk.get("timings") or timings
    return {"wall_s": round(time.monotonic() - start, 2),
            "prompt_n": timings.get("prompt_n"), "cache_n": timings.get("cache_n"),
            "prompt_tok_s": round(timings.get("prompt_per_second") or 0, 1),
            "gen_n": timings.get("predicted_n"), "gen_tok_s": round(timings.get("predicted_per_second") or 0, 1)}


def run(provider: Any, tools: list[dict[str, Any]], turns: int, *, cache: bool) -> list[dict[str, Any]]:
    from codeloop.providers.base import ModelRequest

    rows = []
    for turn in range(turns):
        req = ModelRequest(model="local", messages=conversation(turn), tools=tools, max_tokens=96,
                           system=[{"type": "text", "text": provider_system()}])
        body = provider.request_body(req)
        if not cache:
            body["cache_prompt"] = False
        rows.append({"turn": turn + 1, **post(provider.base_url, body)})
        print(f"  cache={'on ' if cache else 'off'} turn {turn + 1}: {rows[-1]}", flush=True)
    return rows


def provider_system() -> str:
    from codeloop.session.local_profile import LOCAL_SYSTEM_PROMPT

    return LOCAL_SYSTEM_PROMPT


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=4, help=f"turns per conversation (at most {len(STEPS) + 1})")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    from codeloop.config.paths import config_dir
    from codeloop.providers.local import LocalProvider, LocalRuntime, context_size
    from codeloop.providers.local_model import resolve_model_file
    from codeloop.session.local_profile import INPUT_DEFAULTS, SHORT_DESCRIPTIONS

    path, name = resolve_model_file(None, config_dir() / "models")
    tools = tool_schemas()
    turns = min(a.turns, len(STEPS) + 1)
    out: dict[str, Any] = {}
    # a fresh server for each run, so each first turn starts cold as in a new `codeloop -p`
    for cache in (False, True):
        runtime = LocalRuntime(path, alias=name, n_ctx=context_size())
        start = time.monotonic()
        runtime.start()
        out["load_s"] = round(time.monotonic() - start, 1)
        provider = LocalProvider(runtime, descriptions=SHORT_DESCRIPTIONS, input_defaults=INPUT_DEFAULTS)
        try:
            out["cache_on" if cache else "cache_off"] = run(provider, tools, turns, cache=cache)
        finally:
            runtime.stop()
    off, on = out["cache_off"], out["cache_on"]
    rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["peak_rss_mb"] = rss_mb
    for label, rows in (("cache off", off), ("cache on", on)):
        later = rows[1:]
        print(f"{label}: first turn {rows[0]['wall_s']}s ({rows[0]['prompt_n']} prompt tokens read); later turns "
              f"mean {sum(r['wall_s'] for r in later) / max(1, len(later)):.1f}s "
              f"(mean {sum(r['prompt_n'] or 0 for r in later) / max(1, len(later)):.0f} tokens read); "
              f"prompt eval {rows[0]['prompt_tok_s']} tok/s, generation "
              f"{sum(r['gen_tok_s'] for r in rows) / len(rows):.1f} tok/s")
    print(f"model load {out['load_s']}s; peak RSS {rss_mb} MB")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
