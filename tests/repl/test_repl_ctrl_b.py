"""Issue 27: Ctrl+B while a foreground Bash command runs moves it to the background, as in Claude
Code — the model gets the task id at once and goes on; when the command ends the idle REPL tells
the model by itself. In a real pseudo-terminal, the model faked at the HTTP layer."""

import json
import re

from fakeapi import ScriptedAPI, sse, text, tool_use


def test_ctrl_b_moves_the_running_command_to_the_background(tmp_path, screen):
    gate = tmp_path / "go"
    command = f"echo EARLY-LINE; while [ ! -e {gate} ]; do sleep 0.02; done; echo LATE-LINE"
    api = ScriptedAPI(
        sse(tool_use("Bash", {"command": command, "description": "gated build"}, id="fg")),
        sse(text("It runs in the background now.")),
        sse(text("The build finished.")))
    with api.serve() as url:
        s = screen(url, "--allowedTools", "Bash")
        s.term.send("build it\r")
        s.wait_text("EARLY-LINE")                         # its output, live under the running call
        assert "ctrl+b to run in background" in s.wait_text("ctrl+b to run in background")
        s.term.send("\x02")                               # Ctrl+B
        shown = s.wait_text("It runs in the background now.")
        assert "Running in the background (ID: b" in shown
        s.wait_for(lambda t: "esc to interrupt" not in t)  # idle: nothing typed from here on
        assert len(api.requests) == 2
        gate.touch()
        shown = s.wait_text("The build finished.")
        assert "● Background command" in shown and "completed (exit code 0)" in shown
        s.term.send("/exit\r")
        s.term.wait_exit()
    said = api.requests[1].tool_result_text("fg")
    found = re.fullmatch(r"Command was manually backgrounded by user with ID: (\w+)\. "
                         r"Output is being written to: (\S+)", said)
    assert found, said
    task_id, output_file = found.groups()
    note = json.dumps(api.requests[2].messages[-1])
    assert f"<task-id>{task_id}</task-id>" in note and "<status>completed</status>" in note
    assert "EARLY-LINE" in note and "LATE-LINE" in note
    with open(output_file) as fh:
        assert fh.read() == "EARLY-LINE\nLATE-LINE\n"


def test_ctrl_b_with_nothing_running_still_moves_the_cursor_left(tmp_path, screen):
    api = ScriptedAPI(sse(text("Got it.")))
    with api.serve() as url:
        s = screen(url)
        s.term.send("ab")
        s.wait_for(lambda t: s.input_line() == "> ab")
        s.term.send("\x02X\r")                             # Ctrl+B: back one character, as ever
        s.wait_text("Got it.")
        s.term.send("/exit\r")
        s.term.wait_exit()
    assert json.dumps(api.requests[0].messages[-1]).count("aXb") == 1
