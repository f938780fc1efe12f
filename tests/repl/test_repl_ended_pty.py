"""Spec 000 flows 7–8 in the REPL, in a real pseudo-terminal against the loopback fake API: when
the model ends the session (EndConversation, twice) the REPL refuses further input until /clear
starts a new session, and leaving it ended exits 1; continuing an ended session (`--continue`,
`--resume`) prints the notice and exits 1 without opening it."""

from fakeapi import ScriptedAPI, sse, text, tool_use
from ptyterm import Term, write_session

ON = {"CODELOOP_FEATURE_END_CONVERSATION": "true"}
MODEL = ("--model", "claude-opus-4-8")


def ending_api(*after):
    return ScriptedAPI(sse(tool_use("ToolSearch", {"query": "select:EndConversation"})),
                       sse(text("I am ending this."), tool_use("EndConversation", {}, id="e1")),
                       sse(tool_use("EndConversation", {}, id="e2")), *after)


def test_an_ended_session_refuses_input_then_clear_starts_a_new_one(tmp_path, run):
    api = ending_api(sse(text("Fresh session answer.")))
    with api.serve() as url:
        t = run(url, *MODEL, env=ON)
        t.line("you are useless")
        t.expect("The model ended this conversation")
        t.ready()
        t.line("hello?")
        t.expect(r"Start a new session \(or /clear\)")
        t.line("/clear")
        t.expect("Started a new session")
        t.line("hello again")
        t.expect("Fresh session answer")
        t.line("/exit")
        assert t.wait_exit() == 0          # the new session is an ordinary one
    assert len(api.requests) == 4
    assert [m["content"][-1]["text"] for m in api.requests[3].messages] == ["hello again"]


def test_leaving_the_repl_with_the_session_ended_exits_1(tmp_path, run):
    api = ending_api()
    with api.serve() as url:
        t = run(url, *MODEL, env=ON)
        t.line("you are useless")
        t.expect("The model ended this conversation")
        t.ready()
        t.line("/exit")
        assert t.wait_exit() == 1
    assert len(api.requests) == 3


def test_continuing_an_ended_session_prints_the_notice_and_exits_1(tmp_path):
    sid = write_session(tmp_path, 4, ended=True)
    api = ScriptedAPI(sse(text("never sent")))
    with api.serve() as url:
        for args in (("--resume", sid), ("--continue",)):
            t = Term(tmp_path, url, *args)
            try:
                t.expect(f"Session {sid} was ended by the model")
                t.expect("Start a new session")
                assert t.wait_exit() == 1
            finally:
                t.close()
            assert "shift+tab to cycle" not in t.transcript      # the session was never opened
    assert api.requests == []
