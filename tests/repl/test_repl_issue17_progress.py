"""Issue 17 items 5, 6, 9 and 11 in a real pseudo-terminal: Ctrl+O expands tool output; long
work is visible (running tool, streaming Bash output, subagent progress, tokens, cost); input is
never lost or reordered; cost survives resume; /status and the exit summary."""

import json
import re
import time


from fakeapi import ScriptedAPI, sse, text, tool_use
from ptyterm import write_session


def test_ctrl_o_expands_cut_output_also_for_bang_commands(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "seq 1 4"})), sse(text("Counted.")))
    with api.serve() as url:
        t = run(url, "--dangerously-skip-permissions")
        t.line("count")
        t.expect(r"\+1 line \(ctrl\+o to expand\)")
        t.expect("Counted")
        t.ready()
        t.line("!seq 101 112")
        t.expect(r"\+9 lines \(ctrl\+o to expand\)")
        time.sleep(0.3)
        t.send("\x0f")                      # Ctrl+O
        t.expect("transcript")
        t.expect("112")
        t.expect("end of transcript")
        t.send("\x0f")
        t.expect("collapsed")
        t.line("/exit")
        assert t.wait_exit() == 0
    expanded = t.transcript[t.transcript.index("transcript: last"):]
    assert "\n     4" in expanded.replace("\r", "") and "111" in expanded   # the cut lines, now shown


def test_running_bash_is_named_and_its_output_streams(tmp_path, run):
    cmd = "for i in 1 2 3 4; do echo tick-$i; sleep 1; done"
    api = ScriptedAPI(sse(tool_use("Bash", {"command": cmd})), sse(text("Ticked.")))
    with api.serve() as url:
        t = run(url, "--dangerously-skip-permissions")
        t.line("tick")
        t.expect(r"Running Bash\(for i in")
        t.expect("tick-2")                  # shown while the command still runs
        assert "Ticked" not in t.transcript
        t.expect("Ticked", timeout=30)
        t.line("/exit")
        assert t.wait_exit() == 0
    assert re.search(r"\d+s · ↑ [\d.k]+ ↓ [\d.k]+ tokens", t.transcript)


def test_subagent_shows_its_current_tool(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Task", {"description": "Look around", "prompt": "list files",
                                            "subagent_type": "general-purpose"})),
                      sse(tool_use("Bash", {"command": "sleep 3; echo sub-done"})),   # the subagent
                      sse(text("The subagent finished.")),                             # the subagent
                      sse(text("All done.")))
    with api.serve() as url:
        t = run(url, "--dangerously-skip-permissions")
        t.line("delegate")
        t.expect(r"Running Task\(")
        t.expect(r"⎿  Bash\(sleep 3; echo sub-done\) · 1 tool use")
        t.expect("All done", timeout=30)
        t.line("/exit")
        assert t.wait_exit() == 0


def test_spinner_shows_turn_tokens_and_session_cost_live(tmp_path, run):
    slow = sse(text("A long answer " * 40, chunks=20), input_tokens=12000)
    slow.chunks.insert(12, (3.0, b": still going\n\n"))
    api = ScriptedAPI(slow)
    with api.serve() as url:
        t = run(url)
        t.line("go")
        t.expect(r"↑ 12\.0k ↓ \d+ tokens · session \$0\.0[0-9]*[1-9]")   # before the call's usage arrives
        t.ready()
        t.line("/exit")
        assert t.wait_exit() == 0


def test_cost_survives_resume_status_and_exit_summary(tmp_path, run):
    sid = write_session(tmp_path, 6)
    (tmp_path / "CLAUDE.md").write_text("Be brief.\n")
    with ScriptedAPI().serve() as url:
        t = run(url, "--resume", sid, cols=250)
        t.line("/status")
        t.expect("Transcript:")
        t.expect("Settings")
        t.line("/exit")
        assert t.wait_exit() == 0
    screen = t.transcript.replace("\r", "")
    status = screen[screen.index("Version:"):]
    assert re.search(r"Cost so far: +\$0\.0[0-9]*[1-9]", status)
    assert str(tmp_path / "CLAUDE.md") in status and sid in status
    rows = [line for line in status.splitlines()[:8] if ":" in line]
    starts = {len(line) - len(line.split(":", 1)[1].lstrip()) for line in rows}
    assert len(rows) == 8 and len(starts) == 1, rows    # one column of values
    assert re.search(r"Total cost: +\$0\.0[0-9]*[1-9]", screen)
    assert f"codeloop --resume {sid}" in screen


def test_text_typed_during_a_permission_question_is_kept(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch hi.txt"})),
                      sse(text("Got your note.")))
    with api.serve() as url:
        t = run(url, "--no-sandbox")   # the question is the subject: no default sandbox
        t.line("greet")
        t.expect(r"Allow Bash\(touch hi.txt\)")
        time.sleep(0.3)
        t.send("please also log it")         # (Enter now would take the highlighted option, issue 27)
        time.sleep(0.2)
        t.send("\x1b")                        # Esc answers the question (No); the text stays
        t.expect("Interrupted")
        time.sleep(0.5)
        t.send("\r")                          # …and is sent now
        t.expect("Got your note")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "please also log it" in json.dumps(api.requests[-1].messages)


def test_a_message_queued_during_a_tool_is_drawn_after_its_interruption(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "sleep 20"})), sse(text("Doing the other thing.")))
    with api.serve() as url:
        t = run(url, "--dangerously-skip-permissions")
        t.line("wait a while")
        t.expect(r"Running Bash\(sleep 20\)")
        t.line("do the other thing instead")
        time.sleep(0.5)
        t.send("\x1b")                        # interrupts, and the queued message is back in the input
        t.expect("Interrupted")
        t.send("\r")                          # (issue 27: Claude Code sends it only when told to)
        t.expect("Doing the other thing", timeout=30)
        t.line("/exit")
        assert t.wait_exit() == 0
    screen = t.transcript
    assert screen.index("Interrupted") < screen.rindex("> do the other thing instead")


def test_ctrl_d_while_working_asks_first(tmp_path, run):
    slow = sse(text("Finished the slow work."))
    slow.chunks.insert(2, (3.0, b": wait\n\n"))
    api = ScriptedAPI(slow)
    with api.serve() as url:
        t = run(url)
        t.line("slow please")
        t.expect("esc to interrupt")         # the model is working
        t.send("\x04")
        t.expect("press Ctrl-D again")
        t.expect("Finished the slow work")   # the work went on
        assert t.child.isalive()
        t.ready()
        t.send("\x04")                       # idle: exits at once
        assert t.wait_exit() == 0
