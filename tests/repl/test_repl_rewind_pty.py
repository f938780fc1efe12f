"""Issue 17 item 13 in a real pty: files are checkpointed before each edit; /rewind (and Esc Esc)
restores the code and/or the conversation to an earlier prompt."""

import json

from fakeapi import ScriptedAPI, sse, text, tool_use


def entries(cwd):
    files = sorted((cwd / ".cfg" / "projects").rglob("*.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def two_prompts(tmp_path):
    a, c = tmp_path / "a.py", tmp_path / "c.py"
    return a, c, ScriptedAPI(
        sse(tool_use("Write", {"file_path": str(a), "content": "one\n"}, id="w1")), sse(text("Wrote one.")),
        sse(tool_use("Edit", {"file_path": str(a), "old_string": "one", "new_string": "two"}, id="e1"),
            tool_use("Write", {"file_path": str(c), "content": "new file\n"}, id="w2")),
        sse(text("Edited it.")),
        sse(text("Fresh answer.")))


def test_rewind_restores_code_and_conversation(tmp_path, screen):
    a, c, api = two_prompts(tmp_path)
    with api.serve() as url:
        s = screen(url, "--dangerously-skip-permissions")
        s.term.send("first prompt\r")
        s.wait_text("Wrote one.")
        s.term.send("second prompt\r")
        s.wait_text("Edited it.")
        assert a.read_text() == "two\n" and c.exists()
        s.term.send("/rewind\r")
        shown = s.wait_text("Rewind to just before which prompt?")
        assert "second prompt  (2 files changed since)" in shown
        s.term.send("1")
        # the toolbar shows the question at once; the numbered list reaches the scrollback a moment later
        shown = s.wait_text("3) Restore conversation only")
        assert "1) Restore code and conversation" in shown and "2) Restore code only" in shown
        s.term.send("1")
        s.wait_text("Restored 2 files")
        assert a.read_text() == "one\n" and not c.exists()
        s.term.send("after rewind\r")
        s.wait_text("Fresh answer.")
    last = json.dumps(api.requests[-1].messages)
    assert "first prompt" in last and "second prompt" not in last and "after rewind" in last
    snaps = [e for e in entries(tmp_path) if e.get("type") == "file-history-snapshot"]
    tracked = [e["snapshot"]["trackedFileBackups"] for e in snaps if e["snapshot"]["trackedFileBackups"]]
    assert tracked and str(a) in tracked[-1]
    assert all(e["messageId"] == e["snapshot"]["messageId"] for e in snaps)


def test_escape_escape_opens_rewind_and_code_only_keeps_the_conversation(tmp_path, screen):
    a, c, api = two_prompts(tmp_path)
    with api.serve() as url:
        s = screen(url, "--dangerously-skip-permissions")
        s.term.send("first prompt\r")
        s.wait_text("Wrote one.")
        s.term.send("second prompt\r")
        s.wait_text("Edited it.")
        s.term.send("\x1b")
        s.term.send("\x1b")
        s.wait_text("Rewind to just before which prompt?")
        s.term.send("2")   # the first prompt: before it a.py did not exist
        s.wait_text("Restore code only")
        s.term.send("2")
        s.wait_text("Restored 2 files")
        assert not a.exists() and not c.exists()
        s.term.send("go on\r")
        s.wait_text("Fresh answer.")
    last = json.dumps(api.requests[-1].messages)
    assert "second prompt" in last  # the conversation was kept
