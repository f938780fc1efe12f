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
