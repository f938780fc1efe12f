"""Issue 27 item 1 in a real pty, judged on the screen: tool calls are readable cells (the tool
and its key argument; ExitPlanMode's plan as markdown) and nothing written for the model — raw
JSON input, instructions in tool results — is printed."""

import time

from fakeapi import ScriptedAPI, sse, text, tool_use

PLAN = "## Rename plan\n\n1. **Rename** `old.py` to `new.py`\n2. Update the imports"


def test_plan_is_drawn_as_markdown_and_approval_as_a_human_line(tmp_path, screen):
    api = ScriptedAPI(sse(tool_use("ExitPlanMode", {"plan": PLAN}, id="p")),
                      sse(text("Starting.")))
    with api.serve() as url:
        s = screen(url, "--permission-mode", "plan", rows=60)
        s.term.send("make a plan\r")
        s.wait_text("Yes, and auto-accept edits")
        time.sleep(0.3)
        s.term.send("1")
        shown = s.wait_text("Starting.")
    cell = shown[shown.index("● Plan"):shown.index("Would you like to proceed?")]
    assert "Rename plan" in cell and "1 Rename old.py to new.py" in cell and "## Rename" not in cell.split(
        "Here is Claude's plan")[0]                          # markdown: no #, ** nor backticks in the cell
    assert "User approved Claude's plan · auto-accepting edits" in shown
    assert shown.count("Update the imports") == 1                 # the plan is drawn once
    assert "ExitPlanMode(" not in shown and '{"plan"' not in shown
    assert "Plan mode is now off" not in shown and "start coding" not in shown
    assert "Plan mode is now off" in str(api.requests[1].messages[-1])   # the model still reads it


def test_tool_cells_show_key_arguments_and_human_result_lines(tmp_path, screen):
    (tmp_path / "docs").mkdir()
    target = tmp_path / "docs" / "notes.txt"
    target.write_text("alpha\nbeta\ngamma\n")
    api = ScriptedAPI(
        sse(tool_use("Read", {"file_path": str(target)}, id="r"),
            tool_use("Grep", {"pattern": "beta", "path": str(target.parent), "output_mode": "content"}, id="g"),
            tool_use("Bash", {"command": "echo printed-by-bash", "description": "Say it"}, id="b")),
        sse(tool_use("TodoWrite", {"todos": [{"content": "Check notes", "status": "in_progress",
                                              "activeForm": "Checking notes"}]}, id="t")),
        sse(tool_use("Task", {"description": "Look around", "prompt": "list files",
                              "subagent_type": "general-purpose"}, id="a")),
        sse(text("SUBAGENT-ANSWER-FOR-THE-MODEL")),                              # the subagent
        sse(text("All checked.")))
    with api.serve() as url:
        s = screen(url, "--dangerously-skip-permissions", rows=60)
        s.term.send("check\r")
        shown = s.wait_text("All checked.")
    assert f"● Read({target})" in shown and "Read 3 lines" in shown
    assert f'● Grep("beta" in {target.parent})' in shown and "Found 1 line" in shown
    assert "● Bash(echo printed-by-bash)" in shown and "⎿  printed-by-bash" in shown
    assert "● Update Todos" in shown and "☐ Check notes" in shown
    assert "● Task(Look around)" in shown and "Done (0 tool uses · " in shown
    for model_text in ("Todos have been modified", "SUBAGENT-ANSWER-FOR-THE-MODEL", '{"', "tool_use_id"):
        assert model_text not in shown, model_text
