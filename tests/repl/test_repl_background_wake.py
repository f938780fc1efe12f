"""Issue 27: a background command or agent that ends while the REPL sits idle at the prompt wakes
the model at once — nobody types — and the screen shows the notification, then the answer. In a
real pseudo-terminal, the model faked at the HTTP layer."""

import json
import threading

from fakeapi import ScriptedAPI, sse, text, tool_use


def _notes(req) -> list[str]:
    last = req.messages[-1]
    blocks = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    return [b["text"] for b in blocks if b.get("type") == "text" and "<task-notification>" in b["text"]]


def test_a_background_command_that_ends_while_idle_wakes_the_model(tmp_path, screen):
    gate = tmp_path / "go"
    command = f"while [ ! -e {gate} ]; do sleep 0.02; done; echo BG-FINISHED"
    api = ScriptedAPI(
        sse(tool_use("Bash", {"command": command, "run_in_background": True, "description": "wait for go"},
                     id="bg")),
        sse(text("Started it in the background.")),
        sse(text("The background job finished fine.")))
    with api.serve() as url:
        s = screen(url, "--allowedTools", "Bash")
        s.term.send("run the job in the background\r")
        s.wait_text("Started it in the background.")
        s.wait_for(lambda t: "esc to interrupt" not in t)    # the turn is over: the REPL waits for input
        assert len(api.requests) == 2
        gate.touch()                                    # the job ends; nobody types
        shown = s.wait_text("The background job finished fine.")
        assert '● Background command "while [ ! -e' in shown and "completed (exit code 0)" in shown
        # the notice comes first, then the answer it prompted
        assert shown.index("completed (exit code 0)") < shown.index("The background job finished fine.")
        s.term.send("/exit\r")
        s.term.wait_exit()
    assert len(api.requests) == 3
    [note] = _notes(api.requests[2])
    assert "<status>completed</status>" in note and "BG-FINISHED" in note


def test_a_background_agent_that_ends_while_idle_wakes_the_model(tmp_path, screen):
    release = threading.Event()

    def sub(req):
        release.wait(30)                                  # the agent answers once the parent is idle
        return sse(text("SUB ANSWER 42"))

    parent = [sse(tool_use("Agent", {"description": "research", "prompt": "SUBPROMPT find it",
                                     "run_in_background": True}, id="ag")),
              sse(text("Launched the agent.")),
              sse(text("The agent reported 42."))]

    def route(req):
        first = json.dumps(req.messages[0])
        return sub(req) if "SUBPROMPT" in first else parent.pop(0)

    api = ScriptedAPI(*[route] * 4)
    with api.serve() as url:
        s = screen(url, "--allowedTools", "Agent")
        s.term.send("delegate it\r")
        s.wait_text("Launched the agent.")
        s.wait_for(lambda t: "esc to interrupt" not in t)
        release.set()
        shown = s.wait_text("The agent reported 42.")
        assert 'Background agent "research" completed' in shown
        s.term.send("/exit\r")
        s.term.wait_exit()
    parents = [q for q in api.requests if "SUBPROMPT" not in json.dumps(q.messages[0])]
    assert len(parents) == 3
    [note] = _notes(parents[2])
    assert "local_agent" in note and "SUB ANSWER 42" in note
