"""Issue 27 in a real pty, judged by the emulated screen: the `/` and `@` menus put prefix matches
first, Enter takes the highlighted entry, and the menus stay visible with the screen full of output
and after the terminal is resized."""

from fakeapi import ScriptedAPI, sse, text

MENU_ENTRY = "Show commands and keys"   # /help's description, in the `/` menu


def highlighted(s) -> str:
    """The menu entry drawn highlighted (reverse video), e.g. "/help"; "" when none is."""
    for y, line in enumerate(s.text().splitlines()):
        marked = [x for x in range(len(line)) if s.screen.buffer[y][x].reverse]
        words = line[marked[0]:marked[-1] + 1].split() if marked else []
        if words and words[0][:1] in "/@" or len(words) == 1:
            return words[0]
    return ""


def test_prefix_matches_come_first(tmp_path, screen):
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("/re")
        s.wait_text("/resume")
        s.term.send("\t")
        s.wait_for(lambda shown: s.input_line().startswith("> /re") and len(s.input_line().rstrip()) > 5)
        assert not s.input_line().startswith("> /clear")


def test_enter_runs_the_highlighted_command(tmp_path, screen):
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("/he")
        s.wait_for(lambda shown: highlighted(s) == "/help")   # the first entry, highlighted at once…
        assert s.input_line().rstrip() == "> /he"              # …and not written into the input
        s.term.send("\r")
        s.wait_text("!cmd runs a shell command")             # /help's text
        s.wait_for(lambda shown: s.input_line() == ">")
        s.term.send("/co")
        s.wait_for(lambda shown: highlighted(s).startswith("/co"))
        first = highlighted(s)
        s.term.send("\x1b[B")                                  # ↓: the next entry
        s.wait_for(lambda shown: highlighted(s) not in ("", first))
        second = highlighted(s)
        assert second.startswith("/co")
        s.term.send("\r")
        s.wait_for(lambda shown: f"> {second}" in shown.splitlines())   # what ran is what was highlighted
        s.wait_for(lambda shown: s.input_line() == ">")
        s.term.send("/rese")               # only an alias starts so: /clear (alias reset) is highlighted
        s.wait_text("/clear")
        s.term.send("\r")
        s.wait_text("Started a new session")


def test_enter_on_the_file_menu_inserts_the_path_and_sends_nothing(tmp_path, screen):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "alpha_module.py").write_text("x = 1\n")
    api = ScriptedAPI(sse(text("Looked.")))
    with api.serve() as url:
        s = screen(url)
        s.term.send("look at @alpmod")
        s.wait_for(lambda shown: highlighted(s) == "src/alpha_module.py")
        s.term.send("\r")
        s.wait_for(lambda shown: s.input_line().rstrip() == "> look at @src/alpha_module.py")
        assert api.requests == []
        s.term.send("\r")
        s.wait_text("Looked.")
    assert "alpha_module.py" in str(api.requests[0].messages)


def test_menus_show_with_the_screen_full_and_after_a_resize(tmp_path, screen):
    long = "\n".join(f"line {i} of a long answer" for i in range(80))
    api = ScriptedAPI(sse(text(long)))
    (tmp_path / "readme_notes.md").write_text("notes\n")
    with api.serve() as url:
        s = screen(url, rows=24, cols=90)
        s.term.send("tell me a lot\r")
        s.wait_text("line 79 of a long answer")        # the screen has filled and scrolled
        s.term.send("/he")
        s.wait_text(MENU_ENTRY)
        s.term.send("\x7f\x7f\x7f")
        s.wait_for(lambda shown: MENU_ENTRY not in shown)
        s.term.child.setwinsize(30, 100)
        s.screen.resize(30, 100)
        s.wait_text("shift+tab to cycle")
        s.term.send("/he")
        s.wait_text(MENU_ENTRY)
        s.term.send("\x7f\x7f\x7f")
        s.wait_for(lambda shown: MENU_ENTRY not in shown)
        s.term.child.setwinsize(12, 80)          # small: the menu takes what room there is
        s.screen.resize(12, 80)
        s.wait_text("shift+tab to cycle")
        s.term.send("see @readme")
        shown = s.wait_text("readme_notes.md")
        assert "Window too small" not in shown
