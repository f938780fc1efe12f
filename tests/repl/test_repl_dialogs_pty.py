"""Issue 27 in a real pty, judged by the emulated screen: permission dialogs take Claude Code's keys
(↑/↓ + Enter, digits even over a draft, Esc declines), AskUserQuestion's "Other" with free text,
and Esc taking back a message queued while the model works."""

import json
from contextlib import contextmanager

from fakeapi import ScriptedAPI, sse, stalled, text, tool_use


def write(tmp_path, name="notes.txt", id="w"):
    return tool_use("Write", {"file_path": str(tmp_path / name), "content": "hello\n"}, id=id)


@contextmanager
def at_write_dialog(tmp_path, screen, *answers):
    """(api, screen) with the REPL showing the permission dialog of a Write to notes.txt; the
    model answers each later request with the next of `answers`."""
    api = ScriptedAPI(sse(write(tmp_path)), *(sse(text(a)) for a in answers))
    with api.serve() as url:
        s = screen(url)
        s.term.send("write notes\r")
        s.wait_text("Do you want to create notes.txt?")
        yield api, s


def option_line(shown: str, n: int) -> str:
    return next((line for line in shown.splitlines() if f"{n}) " in line and line.lstrip()[:1] in "❯0123456789"),
                "")


def test_arrows_move_the_highlight_and_enter_takes_it(tmp_path, screen):
    with at_write_dialog(tmp_path, screen, "Wrote it.") as (api, s):
        s.wait_for(lambda shown: option_line(shown, 1).lstrip().startswith("❯ 1) Yes"))
        s.term.send("\x1b[B")                                       # ↓
        s.wait_for(lambda shown: option_line(shown, 2).lstrip().startswith("❯ 2) Yes, allow all edits"))
        s.term.send("\x1b[B\x1b[B\x1b[A")                           # ↓ ↓ (wraps to 1) ↑ → 3
        s.wait_for(lambda shown: option_line(shown, 3).lstrip().startswith("❯ 3) No"))
        s.term.send("\x1b[A")                                       # back to 2
        s.wait_for(lambda shown: option_line(shown, 2).lstrip().startswith("❯ 2)"))
        s.term.send("\r")
        s.wait_text("Wrote it.")
        s.wait_text("accept edits on")
    assert (tmp_path / "notes.txt").read_text() == "hello\n"


def test_a_digit_answers_the_dialog_and_leaves_the_draft_alone(tmp_path, screen):
    with at_write_dialog(tmp_path, screen, "Wrote it.", "Draft received.") as (api, s):
        s.term.send("draft 2 keep")   # typed while the dialog shows: `2` is a digit, so it answers…
        s.wait_text("Wrote it.")
        # …option 2 (allow all edits), and is not in the draft
        s.wait_for(lambda shown: s.input_line().rstrip() == "> draft  keep")
        assert "accept edits on" in s.text()
        s.term.send("\r")
        s.wait_text("Draft received.")
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    assert api.requests[2].messages[-1]["content"][0]["text"] == "draft  keep"


def test_a_digit_over_a_draft_typed_before_the_dialog(tmp_path, screen):
    with at_write_dialog(tmp_path, screen, "Wrote it.") as (api, s):
        s.term.send("\x1b[B")           # a highlight moved, then a draft, then `1`: the digit decides
        s.wait_for(lambda shown: option_line(shown, 2).lstrip().startswith("❯ 2)"))
        s.term.send("later")
        s.wait_for(lambda shown: s.input_line().rstrip() == "> later")
        s.term.send("1")
        s.wait_text("Wrote it.")
        s.wait_for(lambda shown: s.input_line().rstrip() == "> later")
        assert "accept edits on" not in s.text()   # option 1 (once), not the highlighted 2


def test_esc_declines_and_the_model_is_told_no(tmp_path, screen):
    with at_write_dialog(tmp_path, screen, "Understood.") as (api, s):
        s.term.send("\x1b")
        s.wait_text("Interrupted")
        s.wait_for(lambda shown: s.input_line() == ">")
        s.term.send("never mind\r")
        s.wait_text("Understood.")
    assert not (tmp_path / "notes.txt").exists()
    result = next(b for m in api.requests[1].messages for b in m["content"] if b.get("type") == "tool_result")
    assert result.get("is_error") and "doesn't want to proceed" in json.dumps(result)


QUESTION = {"question": "Which format should the report use?", "header": "Format",
            "options": [{"label": "Markdown", "description": "Plain text"},
                        {"label": "HTML", "description": "For the browser"}], "multiSelect": False}


def test_ask_user_question_other_takes_a_typed_answer(tmp_path, screen):
    api = ScriptedAPI(sse(tool_use("AskUserQuestion", {"questions": [QUESTION]}, id="q")), sse(text("AsciiDoc it is.")))
    with api.serve() as url:
        s = screen(url)
        s.term.send("draft a report\r")
        shown = s.wait_text("3) Other")
        assert "1) Markdown" in shown and "2) HTML" in shown
        s.term.send("kept")             # a draft: it waits while the answer is typed
        s.wait_for(lambda shown: s.input_line().rstrip() == "> kept")
        s.term.send("3")
        s.wait_text("your answer:")
        s.wait_for(lambda shown: s.input_line() == ">")   # the draft is set aside for the answer
        s.term.send("AsciiDoc, 2 columns\r")           # digits are text here
        s.wait_text("AsciiDoc it is.")
        s.wait_for(lambda shown: s.input_line().rstrip() == "> kept")
    result = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert '"Which format should the report use?"="AsciiDoc, 2 columns"' in json.dumps(result).replace('\\"', '"')


def test_esc_puts_the_queued_message_back_in_the_input(tmp_path, screen):
    # the first answer stalls mid-stream: the turn is still running when the user queues a message
    api = ScriptedAPI(stalled(text("Thinking about it", chunks=2), after=3, stall_s=120), sse(text("Got the edit.")))
    with api.serve() as url:
        s = screen(url)
        s.term.send("first question\r")
        s.wait_for(lambda shown: len(api.requests) == 1)   # the turn runs, its answer held open
        s.term.send("second thought\r")
        s.wait_text("1 queued")
        s.wait_for(lambda shown: s.input_line() == ">")
        s.term.send("\x1b")
        s.wait_for(lambda shown: s.input_line().rstrip() == "> second thought")
        s.wait_for(lambda shown: "1 queued" not in shown)
        s.term.send(" edited\r")
        s.wait_text("Got the edit.")
    assert len(api.requests) == 2
    sent = json.dumps(api.requests[1].messages)
    assert sent.count("second thought") == 1 and "second thought edited" in sent


def test_other_in_a_multi_select_question_and_esc_back_to_the_choices(tmp_path, screen):
    question = {"question": "Which sections should it have?", "header": "Sections",
                "options": [{"label": "Summary", "description": "One paragraph"},
                            {"label": "Charts", "description": "Figures"}], "multiSelect": True}
    api = ScriptedAPI(sse(tool_use("AskUserQuestion", {"questions": [question]}, id="q")), sse(text("Noted.")))
    with api.serve() as url:
        s = screen(url)
        s.term.send("draft a report\r")
        s.wait_text("3) Other")
        s.term.send("3")
        s.wait_text("your answer:")
        s.term.send("\x1b")                             # Esc: back to the choices, nothing answered
        s.wait_for(lambda shown: "your answer:" not in shown and "3) Other" in shown)
        s.term.send("1")                                # Summary
        s.wait_text("3) Done")                          # Charts, Other, Done
        s.term.send("\x1b[B")                           # ↓ to Other, Enter
        s.wait_for(lambda shown: option_line(shown, 2).lstrip().startswith("❯ 2) Other"))
        s.term.send("\r")
        s.wait_text("your answer:")
        s.term.send("Glossary\r")
        s.wait_text("⎿  Glossary")
        s.wait_text("3) Done")                          # Charts, Other, Done again
        s.term.send("3")
        s.wait_text("Noted.")
    result = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert '"Which sections should it have?"="Summary, Glossary"' in json.dumps(result).replace('\\"', '"')
