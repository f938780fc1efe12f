"""Issue 17 item 7 in a real pty: the /resume list moves with ↑/↓, searches as you type, previews
the highlighted session, leaves out runs that never got a prompt, and `10` picks item 10."""

import functools
import os
import time

import pytest

from fakeapi import ScriptedAPI

TOPICS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
          "kilo", "lima"]


def write_sessions(cwd):
    """One session per topic (newest first = the order of TOPICS) and one that never got a prompt."""
    os.environ["CODELOOP_CONFIG_DIR"] = str(cwd / ".cfg")
    try:
        from codeloop.messages import Message, user_message
        from codeloop.session import store
        from codeloop.session.transcript import TranscriptWriter

        ids = {}
        now = time.time()
        for n, topic in enumerate(TOPICS):
            sid = f"{n:08d}-0000-4000-8000-000000000000"
            path = store.session_path(cwd.resolve(), sid)
            w = TranscriptWriter(path, sid, str(cwd.resolve()))
            w.append_message(user_message(f"tell me about {topic}"))
            w.append_message(Message("assistant", [{"type": "text", "text": f"{topic} is a word"}], id=f"m{n}"))
            w.sync()
            w.close()
            os.utime(path, (now - 100 * n, now - 100 * n))
            ids[topic] = sid
        empty = "ffffffff-0000-4000-8000-000000000000"
        w = TranscriptWriter(store.session_path(cwd.resolve(), empty), empty, str(cwd.resolve()))
        w.append_entry({"type": "summary", "summary": "failed run"})
        w.sync()
        w.close()
        return ids
    finally:
        os.environ.pop("CODELOOP_CONFIG_DIR", None)


@pytest.fixture
def screen(screen):
    """The shared fixture on a 40-row terminal: the picker lists more sessions than 30 rows hold."""
    return functools.partial(screen, rows=40)


def test_typing_10_picks_item_10(tmp_path, screen):
    ids = write_sessions(tmp_path)
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("/resume\r")
        shown = s.wait_text("Resume which conversation?")
        assert "tell me about alpha" in shown and "2 messages" in shown  # the preview
        assert "ffffffff" not in shown and "(no prompt)" not in shown
        s.term.send("10\r")
        s.wait_text(f"Resumed session {ids['juliet']}")
        assert s.input_line() == ">"  # no stray 0 left behind


def test_arrows_move_and_typing_searches(tmp_path, screen):
    ids = write_sessions(tmp_path)
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("/resume\r")
        s.wait_text("Resume which conversation?")
        s.term.send("\x1b[B")
        s.term.send("\x1b[B")
        s.wait_for(lambda text: "❯  3. " in text)
        s.wait_text("tell me about charlie\n")  # the preview follows the highlight
        s.term.send("\r")
        s.wait_text(f"Resumed session {ids['charlie']}")
        s.term.send("/resume\r")
        s.wait_text("Resume which conversation?")
        s.term.send("hote")
        shown = s.wait_for(lambda text: "alpha" not in text.split("Resume which conversation?")[-1])
        assert "hotel" in shown.split("Resume which conversation?")[-1]
        s.term.send("\r")
        s.wait_text(f"Resumed session {ids['hotel']}")
        s.term.send("/resume\r")
        s.wait_text("Resume which conversation?")
        s.term.send("\x1b")
        s.wait_text("Resume cancelled.")
