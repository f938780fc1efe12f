"""Issue 24 part 5: context that holds on a long run. A 300-turn session — 300 prompts, a third of
them answered after reading a file — through a real Conversation against the scripted fake API
with a small window (CODELOOP_CONTEXT_WINDOW): the history is compacted automatically, several
times, and every turn completes with no error. And one prompt worked through in 300 tool turns,
where context collapse folds the old exchanges and compaction steps in when that is not enough.

The fake reports each request's input tokens as its size / 4, as a real server would count them,
so the autocompaction threshold is met by the history actually sent. Answers are prose (context
collapse folds only tool exchanges), so it is summary compaction that keeps the session going."""

import json
import re

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.events import AssistantEvent, CompactBoundary, SystemEvent, Terminal
from codeloop.loop.state import TerminalReason
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.tools.registry import builtin_tools

TURNS = 300
WINDOW = 40_000   # tokens: autocompact at 0.92 × (40,000 − 20,000 reserve) = 18,400


class Model:
    """Answers each prompt in a paragraph, reading a file first for every third one."""

    def __init__(self, files):
        self.files, self.requests, self.summaries, self.read = files, 0, 0, set()

    def __call__(self, req):
        tokens = len(json.dumps(req.body)) // 4
        if "Primary Request and Intent" in json.dumps(req.messages[-1]):   # the summary instructions
            self.summaries += 1
            return sse(text(f"<summary>Summary {self.summaries}: the user asks about the project's "
                            "modules one prompt at a time; every answer so far was given.</summary>"),
                       input_tokens=tokens)
        self.requests += 1
        last = req.messages[-1]["content"]    # a prompt (after a compaction, quoted last), or a tool result
        asked = re.search(r"number (\d+)$", last[-1].get("text", "")) if last[-1].get("type") == "text" else None
        n = int(asked.group(1)) if asked else 0
        if asked and n % 3 == 0 and n not in self.read:   # (a compaction may fall between the read and the answer)
            self.read.add(n)
            return sse(tool_use("Read", {"file_path": self.files[n % len(self.files)]}), input_tokens=tokens)
        answer = "Answer: the module is fine and its functions multiply as documented. " * 15
        return sse(text(answer), input_tokens=tokens)


def project_files(root):
    files = []
    for i in range(12):
        f = root / f"module_{i}.py"
        f.write_text("".join(f"def f{i}_{j}(x):\n    return x * {j}  # a line of ordinary code\n"
                             for j in range(40)))
        files.append(str(f))
    return files


def conversation(model, tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONTEXT_WINDOW", str(WINDOW))
    api = ScriptedAPI(*[model] * (TURNS * 2))
    cfg = ConversationConfig(cwd=tmp_path, model="claude-sonnet-4-5",
                             tools=[t for t in builtin_tools() if t.name == "Read"], system_prompt=["test"],
                             user_context={"claudeMd": "Rule: read every file."},
                             policy=PermissionPolicy(mode=PermissionMode.BYPASS))
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    return api, Conversation(cfg, provider, session_id="11111111-2222-4333-8444-555555555555")


def no_trouble(events):
    return (not [e for e in events if isinstance(e, AssistantEvent) and e.message.is_api_error]
            and not [e for e in events if isinstance(e, SystemEvent) and e.level != "info"])


async def test_three_hundred_turns_compact_several_times_and_complete(tmp_path, monkeypatch):
    model = Model(project_files(tmp_path))
    api, conv = conversation(model, tmp_path, monkeypatch)
    events = []
    for n in range(1, TURNS + 1):
        events += [e async for e in conv.submit(f"Question about the project, number {n}")]
    conv.close()

    terminals = [e for e in events if isinstance(e, Terminal)]
    assert len(terminals) == TURNS and {t.reason for t in terminals} == {TerminalReason.COMPLETED}
    assert model.requests == TURNS + TURNS // 3           # each prompt answered; a third after a Read
    compactions = [e for e in events if isinstance(e, CompactBoundary)]
    assert len(compactions) >= 3 and all(c.trigger == "auto" for c in compactions)
    assert model.summaries == len(compactions)
    assert no_trouble(events)
    # every request stayed under the window, and the last one carries the latest summary
    assert max(len(json.dumps(r.body)) // 4 for r in api.requests) < WINDOW
    last = " ".join(b.get("text", "") for m in api.requests[-1].messages for b in m["content"])
    assert f"Summary {model.summaries}:" in last and "Rule: read every file." in last


class Worker:
    """Works through one prompt: a file read per turn, a paragraph of notes with each, TURNS of them."""

    def __init__(self, files):
        self.files, self.turn, self.summaries = files, 0, 0

    def __call__(self, req):
        tokens = len(json.dumps(req.body)) // 4
        if "Primary Request and Intent" in json.dumps(req.messages[-1]):   # the summary instructions
            self.summaries += 1
            return sse(text(f"<summary>Summary {self.summaries}: reading every file, {self.turn} so far."
                            "</summary>"), input_tokens=tokens)
        self.turn += 1
        if self.turn > TURNS:
            return sse(text(f"All {TURNS} reads done."), input_tokens=tokens)
        note = f"Turn {self.turn}: that file looked fine; on to the next one. " * 12
        return sse(text(note), tool_use("Read", {"file_path": self.files[self.turn % len(self.files)]}),
                   input_tokens=tokens)


async def test_one_prompt_of_three_hundred_tool_turns_completes(tmp_path, monkeypatch):
    model = Worker(project_files(tmp_path))
    api, conv = conversation(model, tmp_path, monkeypatch)
    events = [e async for e in conv.submit("Read every file, one per turn.")]
    conv.close()
    terminal = events[-1]
    assert isinstance(terminal, Terminal) and terminal.reason is TerminalReason.COMPLETED, terminal
    assert terminal.turn_count == TURNS + 1 and model.turn == TURNS + 1
    assert [e.trigger for e in events if isinstance(e, CompactBoundary)] == ["auto"] * model.summaries
    assert model.summaries >= 1 and conv.collapse.committed_count > 0 and no_trouble(events)
    assert max(len(json.dumps(r.body)) // 4 for r in api.requests) < WINDOW
