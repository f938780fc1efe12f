"""The REPL renderer honours tombstones: a withdrawn response is marked, once per response."""

from codeloop.cli.repl.render import Renderer
from codeloop.events import AssistantEvent, Tombstone
from codeloop.messages import Message


def test_a_withdrawn_response_is_marked_once():
    out: list[str] = []
    r = Renderer(out.append, color=False)
    text = Message("assistant", [{"type": "text", "text": "half an answer"}], id="msg_1")
    call = Message("assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}],
                   id="msg_1")
    for m in (text, call):
        r.event(AssistantEvent(m))
    r.event(Tombstone(text))
    r.event(Tombstone(call))
    printed = "".join(out)
    assert "half an answer" in printed
    assert printed.count("withdrawn") == 1 and printed.index("half an answer") < printed.index("withdrawn")
    r.event(AssistantEvent(Message("assistant", [{"type": "text", "text": "the whole answer"}], id="msg_2")))
    assert "the whole answer" in "".join(out)


async def test_with_message_display_hooks_the_repl_prints_the_hooks_text_not_the_stream(tmp_path):
    """Issue 26: the REPL holds streamed text while MessageDisplay hooks are configured (as the app
    sets it at each query start) and prints what they answered; without hooks it streams."""
    import json

    from fakeapi import ScriptedAPI, sse, text
    from hookrec import conv_for, recorder

    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "MessageDisplay", "displayContent": "[hidden]"}})
    for hooks, shown, hidden in (({"MessageDisplay": [recorder(tmp_path, "display.log", answer)]}, "[hidden]",
                                  "hunter2"), ({}, "hunter2", "[hidden]")):
        cwd = tmp_path / f"p{len(hooks)}"
        cwd.mkdir()
        conv = conv_for(ScriptedAPI(sse(text("the password is hunter2", chunks=4))), cwd, hooks)
        out: list[str] = []
        r = Renderer(out.append, color=False)
        r.hold_text = conv.hooks.lifecycle.displays()
        r.query_started()
        async for ev in conv.submit("tell me"):
            r.event(ev)
        r.query_finished(0.0, False)
        conv.close()
        printed = "".join(out)
        assert shown in printed and hidden not in printed


def test_the_task_list_is_drawn_like_todowrite_checklist():
    from codeloop.events import UserEvent
    from codeloop.messages import tool_result_message

    out: list[str] = []
    r = Renderer(out.append, color=False)
    call = Message("assistant", [{"type": "tool_use", "id": "u1", "name": "TaskUpdate",
                                  "input": {"taskId": "2", "status": "in_progress"}}], id="m1")
    r.event(AssistantEvent(call))
    tasks = [{"id": "1", "subject": "Write tests", "status": "completed"},
             {"id": "2", "subject": "Fix parser", "status": "in_progress"},
             {"id": "3", "subject": "Ship", "status": "pending"}]
    r.event(UserEvent(tool_result_message("u1", "Updated task #2 status", tool_use_result={"tasks": tasks})))
    printed = "".join(out)
    assert "☒ Write tests" in printed and "☐ Fix parser" in printed and "☐ Ship" in printed
    assert "Updated task #2 status" not in printed
