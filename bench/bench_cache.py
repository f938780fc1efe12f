"""How much of each request the prompt cache can serve (never run by the test suite).

    python bench/bench_cache.py            # this checkout
    PYTHONPATH=/other/checkout/src python bench/bench_cache.py   # another one, to compare

Drives a session in-process against the scripted fake API: six prompts, each answered with a
Read tool call and then text, a git branch switch after the third, then `/compact`. Every
request is laid out as the API caches it (tools, then system blocks, then message blocks) and
run through a model of Anthropic's prompt cache: each `cache_control` breakpoint writes the prefix
ending there; a later request reads the longest written prefix that ends at one of its block
boundaries up to 20 blocks before one of its own breakpoints. The cacheable share of a request is
the size (JSON characters, a proxy for tokens) of that prefix over the request's whole size.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402

LOOKBACK = 20      # blocks the API checks before a breakpoint


def blocks_of(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(the block's JSON without its breakpoint, whether it carries one), in the API's cache order."""
    out: list[tuple[str, bool]] = []

    def add(block: dict[str, Any]) -> None:
        marked = "cache_control" in block
        out.append((json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True), marked))

    for tool in body.get("tools", []):
        add(tool)
    for block in body.get("system", []):
        add(block)
    for message in body["messages"]:
        for i, block in enumerate(message["content"]):
            add({"role": message["role"], "i": i, **block})   # the role is part of what is cached
    return out


class CacheModel:
    def __init__(self) -> None:
        self.written: set[str] = set()

    def serve(self, body: dict[str, Any]) -> tuple[int, int]:
        """(characters read from the cache, characters in all) for one request; then its writes."""
        blocks = blocks_of(body)
        sizes = [len(b) for b, _ in blocks]
        digests, h = [], hashlib.sha256()
        for b, _ in blocks:
            h.update(b.encode())
            digests.append(h.copy().hexdigest())
        best = 0
        for pos, (_, marked) in enumerate(blocks):
            if not marked:
                continue
            for end in range(pos, max(-1, pos - LOOKBACK - 1), -1):
                if digests[end] in self.written:
                    best = max(best, end + 1)
                    break
        for pos, (_, marked) in enumerate(blocks):
            if marked:
                self.written.add(digests[pos])
        return sum(sizes[:best]), sum(sizes)


async def run(work: Path) -> list[tuple[str, dict[str, Any]]]:
    from codeloop.cli.startup.options import options_from_argv
    from codeloop.providers.anthropic import AnthropicProvider
    from codeloop.session.assembly import open_session

    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    for i in range(6):
        (work / f"module{i}.py").write_text("".join(f"def f{i}_{j}(x):\n    return x * {j}\n" for j in range(120)))
    script = []
    for i in range(6):
        script += [sse(tool_use("Read", {"file_path": str(work / f"module{i}.py")})), sse(text(f"module{i} read"))]
    script.append(sse(text("<summary>Six modules were read, one per prompt.</summary>")))
    api = ScriptedAPI(*script)
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    conv, _ = await open_session(options_from_argv(["-p", "x"]), provider=provider)
    labels: list[str] = []
    try:
        for i in range(6):
            if i == 3:
                (work / ".git" / "HEAD").write_text("ref: refs/heads/feature\n")
            async for _ in conv.submit(f"read module{i}.py"):
                pass
            switched = " (after the branch switch)" if i == 3 else ""
            labels += [f"prompt {i + 1}{switched}", f"prompt {i + 1}, tool result"]
        async for _ in conv.compact():
            pass
        labels.append("/compact")
    finally:
        await conv.aclose()
    return list(zip(labels, [r.body for r in api.requests], strict=True))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update({"ANTHROPIC_API_KEY": "k", "CODELOOP_CONFIG_DIR": str(Path(tmp) / "cfg")})
        work = Path(tmp) / "work"
        work.mkdir()
        os.chdir(work)
        requests = asyncio.run(run(work))
    cache = CacheModel()
    print(f"{'request':40} {'chars':>8} {'cached':>8} {'share':>6}")
    shares = []
    for label, body in requests:
        hit, total = cache.serve(body)
        shares.append(hit / total)
        print(f"{label:40} {total:8d} {hit:8d} {hit / total:6.2f}")
    later = shares[1:-1]
    print(f"mean share of the turns after the first: {sum(later) / len(later):.2f}; /compact: {shares[-1]:.2f}")


if __name__ == "__main__":
    main()
