"""A long subagent run on a small context window (issue 24): the subagent reads 60 large files one
by one, its history fills the window again and again, and it finishes — compacted by the same
pipeline as the main thread, with no error — where the old reduced subagent loop ended in
prompt_too_long."""

from __future__ import annotations

import json

from fakeapi import Request, ScriptedAPI, sse, text, tool_use
from codeloop.cli.startup.options import options_from_argv
from codeloop.events import Terminal
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.assembly import open_session
FILES = 60
READER = {"reader": {"description": "Reads files in order", "prompt": "You read the parts in order.", "maxTurns": 80}}
SUMMARY_ASK = "Your task is to create a detailed summary of the conversation so far"


def is_compaction(req: Request) -> bool:
    return SUMMARY_ASK in json.dumps(req.messages[-1].get("content")) if req.messages else False


def is_subagent(req: Request) -> bool:
    return req.system_text.startswith("You read the parts in order.")


def tokens(req: Request) -> int:
    """What a real server would report: about four characters a token."""
    return len(json.dumps(req.body)) // 4


class LongRun:
    """Answers by request kind: the main thread launches one subagent, the subagent reads the files
    in order (however its history was compacted meanwhile), compactions get a summary. Usage is
    reported as a real server would, so the pipeline's estimates are honest."""

    def __init__(self, root) -> None:
        self.root, self.read, self.compactions, self.sub_requests = root, 0, 0, 0
        self.api = ScriptedAPI(*[self.answer] * (FILES * 3))

    def answer(self, req: Request):
        if is_compaction(req):
            self.compactions += 1
            return sse(text(f"<summary>Reading files in order; {self.read} read so far.</summary>"),
                       input_tokens=tokens(req))
        if is_subagent(req):
            self.sub_requests += 1
            if self.read < FILES:
                self.read += 1
                return sse(tool_use("Read", {"file_path": str(self.root / f"part{self.read:02}.txt")}),
                           input_tokens=tokens(req))
            return sse(text(f"Read all {FILES} parts."), input_tokens=tokens(req))
        if any(m["role"] == "assistant" for m in req.messages):
            return sse(text("The subagent read everything."))
        return sse(tool_use("Agent", {"description": "read parts", "prompt": "Read part01.txt to part60.txt",
                                      "subagent_type": "reader"}))


async def test_a_subagent_reading_sixty_large_files_compacts_and_finishes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("CODELOOP_CONTEXT_WINDOW", "30000")   # tokens: a few files fill it
    for i in range(1, FILES + 1):
        (tmp_path / f"part{i:02}.txt").write_text("\n".join(f"part {i} line {n}: " + "x" * 60 for n in range(300)))
    run = LongRun(tmp_path)
    conv, _ = await open_session(options_from_argv(["-p", "x", "--agents", json.dumps(READER)]),
                                 provider=AnthropicProvider(api_key="k", base_url="http://fake",
                                                            transport=run.api.transport()))
    events = [ev async for ev in conv.submit("read all the parts with a subagent")]
    await conv.aclose()
    terminal = [e for e in events if isinstance(e, Terminal)][-1]
    assert terminal.reason.value == "completed", terminal
    assert run.read == FILES and run.compactions >= 3
    result = conv.messages[-2].content[0]   # the Agent tool's result, before the final answer
    assert result["type"] == "tool_result" and not result.get("is_error") and f"Read all {FILES} parts." in str(result)
    assert conv.messages[-1].text == "The subagent read everything."
    # the subagent's sidechain transcript records its compactions
    side = next((conv.tool_context.session_dir / "subagents").glob("agent-*.jsonl"))
    entries = [json.loads(line) for line in side.read_text().splitlines()]
    assert sum(1 for e in entries if e.get("subtype") == "compact_boundary") == run.compactions
