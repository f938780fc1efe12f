"""The query loop driven by the scripted fake API, with real tools on real files."""

import asyncio


from fakeapi import ScriptedAPI, error, sse, text, tool_use
from codeloop.abort import AbortReason
from codeloop.events import AssistantEvent, AttachmentEvent, PermissionDenied, UserEvent
from codeloop.loop.query import query
from loophelpers import make_params, run, terminal
from codeloop.loop.state import TerminalReason
from codeloop.permissions.policy import PermissionMode, PermissionPolicy


async def test_text_answer_completes_and_sends_context(tmp_path):
    api = ScriptedAPI(sse(text("Hello there")))
    events = await run(make_params(api, tmp_path))
    assert terminal(events).reason is TerminalReason.COMPLETED
    assistants = [e.message for e in events if isinstance(e, AssistantEvent)]
    assert [m.text for m in assistants] == ["Hello there"]
    req = api.requests[0]
    assert req.system_text == "You are a test."
    first = req.messages[0]
    assert first["role"] == "user" and "Always be brief." in first["content"][0]["text"]
    assert first["content"][-1]["text"] == "do it"  # context and prompt merge into one user turn
    assert set(req.tool_names) >= {"Bash", "Read", "Edit", "Write", "Glob", "Grep", "TodoWrite"}


async def test_one_tool_turn_reads_a_real_file(tmp_path):
    (tmp_path / "foo.py").write_text("def foo():\n    return 1\n")
    api = ScriptedAPI(sse(text("Reading."), tool_use("Read", {"file_path": str(tmp_path / "foo.py")}, id="t1")),
                      sse(text("It returns 1.")))
    events = await run(make_params(api, tmp_path))
    assert terminal(events).reason is TerminalReason.COMPLETED
    second = api.requests[1].messages
    # the per-block assistant messages of one response are merged back into one API message
    assert second[1]["role"] == "assistant"
    assert [b["type"] for b in second[1]["content"]] == ["text", "tool_use"]
    result = second[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "t1"
    assert "return 1" in result["content"] and not result.get("is_error")


async def test_many_tool_turns_then_answer(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("Bash", {"command": "echo one > a.txt"})),
        sse(tool_use("Bash", {"command": "cat a.txt"})),
        sse(tool_use("Write", {"file_path": str(tmp_path / "b.txt"), "content": "two"})),
        sse(text("done")))
    events = await run(make_params(api, tmp_path))
    t = terminal(events)
    assert t.reason is TerminalReason.COMPLETED and t.turn_count == 4
    assert (tmp_path / "a.txt").read_text() == "one\n" and (tmp_path / "b.txt").read_text() == "two"
    cat_result = api.requests[2].messages[-1]["content"][0]
    assert "one" in cat_result["content"]


async def test_schema_error_names_the_field_and_loop_continues(tmp_path):
    api = ScriptedAPI(sse(tool_use("Read", {"offset": 3}, id="bad")), sse(text("sorry")))
    events = await run(make_params(api, tmp_path))
    assert terminal(events).reason is TerminalReason.COMPLETED
    result = api.requests[1].messages[-1]["content"][0]
    assert result["is_error"] is True and "file_path" in result["content"]


async def test_unknown_tool_gets_error_result(tmp_path):
    api = ScriptedAPI(sse(tool_use("Teleport", {}, id="x")), sse(text("ok")))
    events = await run(make_params(api, tmp_path))
    results = [e.message for e in events if isinstance(e, UserEvent)]
    assert "No such tool available: Teleport" in results[0].content[0]["content"]


async def test_max_turns_stops_with_attachment(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "true"})), sse(tool_use("Bash", {"command": "true"})))
    events = await run(make_params(api, tmp_path, max_turns=1))
    t = terminal(events)
    assert t.reason is TerminalReason.MAX_TURNS and t.turn_count == 2
    att = [e.attachment for e in events if isinstance(e, AttachmentEvent)]
    assert att == [{"type": "max_turns_reached", "maxTurns": 1, "turnCount": 2}]
    assert len(api.requests) == 1
    # the tool of the last allowed turn still ran and was answered
    assert isinstance(events[-3], UserEvent) and events[-3].message.tool_result_ids()


async def test_permission_denial_is_reported(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch x"}, id="b1")), sse(text("ok")))
    events = await run(make_params(api, tmp_path, policy=PermissionPolicy(mode=PermissionMode.DEFAULT)))
    denials = [e for e in events if isinstance(e, PermissionDenied)]
    assert [(d.tool_name, d.tool_use_id, d.tool_input) for d in denials] == [("Bash", "b1", {"command": "touch x"})]
    assert not (tmp_path / "x").exists()
    assert api.requests[1].messages[-1]["content"][0]["is_error"] is True


async def test_non_retryable_api_error_ends_with_api_error(tmp_path):
    api = ScriptedAPI(error(400, "invalid_request_error", "messages: roles must alternate"))
    events = await run(make_params(api, tmp_path))
    t = terminal(events)
    assert t.reason is TerminalReason.API_ERROR and "roles must alternate" in t.error
    err = [e.message for e in events if isinstance(e, AssistantEvent)][-1]
    assert err.is_api_error and "roles must alternate" in err.text


async def test_abort_during_tools_kills_and_answers(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "sleep 30"}, id="s1"),
                          tool_use("Bash", {"command": "touch never"}, id="s2")))
    params = make_params(api, tmp_path, max_turns=1)
    abort = params.tool_context.abort

    async def consume():
        return [ev async for ev in query(params)]

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)
    abort.abort(AbortReason.USER)
    events = await asyncio.wait_for(task, 20)
    t = terminal(events)
    assert t.reason is TerminalReason.ABORTED_TOOLS
    answered = [tid for e in events if isinstance(e, UserEvent) for tid in e.message.tool_result_ids()]
    assert sorted(answered) == ["s1", "s2"]
    assert not (tmp_path / "never").exists()
    texts = [e.message.content[0].get("text") for e in events if isinstance(e, UserEvent)]
    assert "[Request interrupted by user for tool use]" in texts
    assert any(isinstance(e, AttachmentEvent) and e.attachment["type"] == "max_turns_reached" for e in events)


async def test_abort_during_streaming(tmp_path):
    api = ScriptedAPI(sse(text("start"), text("later", delay=30)))
    params = make_params(api, tmp_path)

    async def consume():
        return [ev async for ev in query(params)]

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.3)
    params.tool_context.abort.abort(AbortReason.INTERRUPT)
    events = await asyncio.wait_for(task, 10)
    assert terminal(events).reason is TerminalReason.ABORTED_STREAMING
    # reason "interrupt" (new input submitted) skips the interruption message
    assert not [e for e in events if isinstance(e, UserEvent)]
