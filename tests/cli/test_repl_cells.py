"""Issue 27 item 1, in the renderer: a tool call is drawn as its title and key argument, never as
raw JSON; a result written for the model is replaced by a line for people (kept for Ctrl+O)."""

import pytest

from codeloop.cli.repl.cells import result_line, tool_label
from codeloop.cli.repl.render import Renderer
from codeloop.events import AssistantEvent, UserEvent
from codeloop.messages import Message


@pytest.mark.parametrize("name, inp, label", [
    ("Bash", {"command": "ls   -la\n", "description": "List"}, "Bash(ls -la)"),
    ("Edit", {"file_path": "/a/b.py", "old_string": "x", "new_string": "y"}, "Edit(/a/b.py)"),
    ("Grep", {"pattern": "TODO", "path": "src"}, 'Grep("TODO" in src)'),
    ("ExitPlanMode", {"plan": "## Plan"}, "Plan"),
    ("TaskUpdate", {"taskId": "3", "status": "completed"}, "TaskUpdate(#3 completed)"),
    ("mcp__github__create_issue", {"title": "Bug", "labels": ["x"], "draft": True},
     'github - create_issue (MCP)(title: "Bug", labels: …, draft: True)'),
    ("TaskList", {}, "List tasks"),
])
def test_labels_name_the_key_argument_and_never_show_json(name, inp, label):
    assert tool_label(name, inp) == label


@pytest.mark.parametrize("name, inp, text, data, line", [
    ("ExitPlanMode", {}, "User has approved your plan. Plan mode is now off…", {"mode": "default"},
     "User approved Claude's plan · edits need approval"),
    ("ExitPlanMode", {}, "The user chose to keep planning. Stay in plan mode…", None,
     "User rejected Claude's plan · still planning"),
    ("AskUserQuestion", {}, 'User has answered your questions: "Q?"="A". You can now continue…',
     {"answers": {"Q?": "A"}}, "User answered Claude's questions:\n· Q? → A"),
    ("WebFetch", {}, "the model's summary", {"bytes": 2048, "code": 200, "codeText": "OK"}, "Received 2.0KB (200 OK)"),
    ("Glob", {}, "a.py\nb.py", {"numFiles": 2}, "Found 2 files"),
    ("Grep", {}, "a.py:1:x", {"numFiles": 1, "numMatches": 3}, "Found 3 matches across 1 file"),
    ("Skill", {"skill": "pdf"}, "Base directory for this skill: … (instructions)", {"commandName": "pdf"},
     "Loaded skill pdf"),
    ("StructuredOutput", {}, "Structured output provided successfully", {}, "Structured output returned"),
    ("Bash", {}, "Command running in background with ID: b1. Output is being written to: /x",
     {"backgroundTaskId": "b1"}, "Running in the background (ID: b1)"),
    ("Bash", {}, "hello", {"exitCode": 0}, None),                     # a command's output is for people
])
def test_results_for_the_model_become_a_line_for_people(name, inp, text, data, line):
    assert result_line(name, inp, text, data, error=name == "ExitPlanMode" and "keep planning" in text) == line


def test_the_renderer_keeps_the_models_text_for_ctrl_o_and_drops_system_reminders():
    out: list[str] = []
    r = Renderer(out.append, color=False)
    r.event(AssistantEvent(Message("assistant", [{"type": "tool_use", "id": "t1", "name": "Task",
                                                  "input": {"description": "Survey", "prompt": "look"}}])))
    r.event(UserEvent(Message("user", [{"type": "tool_result", "tool_use_id": "t1",
                                        "content": "FOR THE MODEL <system-reminder>secret note</system-reminder>"}],
                              tool_use_result={"num_turns": 2, "total_tokens": 4100})))
    printed = "".join(out)
    assert "● Task(Survey)" in printed and "Done (2 turns · 4.1k tokens)" in printed
    assert "FOR THE MODEL" not in printed and "secret note" not in printed
    r.toggle_expanded()                                             # Ctrl+O: the answer in full
    expanded = "".join(out)
    assert "FOR THE MODEL" in expanded and "secret note" not in expanded
