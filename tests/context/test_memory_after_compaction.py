"""Issue 24 part 5: a nested CLAUDE.md is attached once while its attachment is in the history; a
compaction summarises it away, and it is attached again when its folder is read again — not for
the reads made before. Directly on NestedMemory, through the loop (a reactive compaction inside a
query) and through a Conversation (/compact between queries), against the scripted fake API."""

from fakeapi import ScriptedAPI, error, sse, text, tool_use
from loophelpers import make_params, run, terminal
from codeloop.context.compact import Compactor
from codeloop.context.memory import NestedMemory, QueryMemory, start_memory_prefetch
from codeloop.events import AttachmentEvent, CompactBoundary
from codeloop.loop.state import TerminalReason
from codeloop.messages import user_message
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.tools.registry import builtin_tools

RULE = "Use tabs in pkg."


def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "CLAUDE.md").write_text(RULE)
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "n.py").write_text("y = 2\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "o.py").write_text("z = 3\n")
    return tmp_path


async def settled_memory(cwd) -> NestedMemory:
    """The session's NestedMemory whose queries share one walk that has already settled, so what is
    attached does not depend on how fast the background walk runs."""
    memory = NestedMemory(cwd)
    prefetch = start_memory_prefetch(cwd)
    await prefetch.task
    memory.start = lambda: QueryMemory(prefetch, memory)
    return memory


def sent(request) -> str:
    return " ".join(str(b.get("text", "")) for m in request.messages for b in m["content"])


async def test_forgotten_after_compaction_and_back_only_for_a_new_read(tmp_path):
    cwd = project(tmp_path)
    session = await settled_memory(cwd)
    q = session.start()
    m_py, n_py, o_py = str(cwd / "pkg" / "m.py"), str(cwd / "pkg" / "n.py"), str(cwd / "other" / "o.py")
    reads = {m_py: object()}                      # a read stores a new record each time
    [(record, message)] = q.take(reads)
    assert record == {"type": "nested_memory", "path": str(cwd / "pkg" / "CLAUDE.md")} and RULE in message.text
    assert q.take(reads) == []                    # attached once…
    q.forget_missing([user_message("go"), message], reads)
    assert q.take({**reads, m_py: object()}) == []   # …while its attachment is in the history
    q.forget_missing([user_message("summary")], reads)   # a compaction dropped it
    assert q.take(reads) == []                    # the reads made before do not bring it back
    assert q.take({**reads, o_py: object()}) == []   # nor a read elsewhere
    [(_, again)] = q.take({**reads, n_py: object()})  # a new read in its folder does
    assert RULE in again.text and again.uuid != message.uuid
    assert q.take({**reads, n_py: object()}) == []


async def test_a_reactive_compaction_inside_a_query_lets_it_come_back(tmp_path):
    cwd = project(tmp_path)
    read = {"file_path": str(cwd / "pkg" / "m.py")}
    too_long = error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")
    api = ScriptedAPI(sse(tool_use("Read", read, id="r1")), too_long, sse(text("<summary>read m.py</summary>")),
                      sse(tool_use("Read", {"file_path": str(cwd / "other" / "o.py")}, id="r2")),
                      sse(tool_use("Read", read, id="r3")), sse(text("done")))
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    params = make_params(api, cwd, memory=(await settled_memory(cwd)).start,
                         reactive_compact=Compactor(provider, "claude-sonnet-4-5"))
    events = await run(params)
    assert terminal(events).reason is TerminalReason.COMPLETED
    assert sum(isinstance(e, CompactBoundary) for e in events) == 1
    assert sum(isinstance(e, AttachmentEvent) and e.attachment["type"] == "nested_memory" for e in events) == 2
    assert sent(api.requests[1]).count(RULE) == 1     # attached after the first read
    assert RULE not in sent(api.requests[3])           # compacted away; a read elsewhere does not restore it
    assert sent(api.requests[5]).count(RULE) == 1     # read in pkg/ again: attached again, once


async def test_a_manual_compact_between_queries_lets_it_come_back(tmp_path):
    cwd = project(tmp_path)
    read = {"file_path": str(cwd / "pkg" / "m.py")}
    api = ScriptedAPI(sse(tool_use("Read", read, id="r1")), sse(text("one")),
                      sse(text("<summary>we looked at pkg</summary>")),                 # /compact
                      sse(tool_use("Read", {"file_path": str(cwd / "other" / "o.py")}, id="r2")), sse(text("two")),
                      sse(tool_use("Read", read, id="r3")), sse(text("three")))
    cfg = ConversationConfig(cwd=cwd, model="claude-sonnet-4-5", tools=builtin_tools(), system_prompt=["t"],
                             user_context={}, policy=PermissionPolicy(mode=PermissionMode.BYPASS))
    conv = Conversation(cfg, AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                        session_id="11111111-2222-4333-8444-555555555555")
    conv.nested_memory = await settled_memory(cwd)
    [e async for e in conv.submit("look at pkg")]
    assert sent(api.requests[1]).count(RULE) == 1
    [e async for e in conv.compact()]
    [e async for e in conv.submit("look elsewhere")]
    assert RULE not in sent(api.requests[4])
    [e async for e in conv.submit("look at pkg again")]
    assert sent(api.requests[6]).count(RULE) == 1
    conv.close()
