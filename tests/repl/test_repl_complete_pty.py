"""Issue 17 items 3 and 4 in a real pty, judged by the emulated screen: `/` and `@` completion
menus, Tab, `?` for shortcuts and the Ctrl-C hint that goes away."""

import time

from fakeapi import ScriptedAPI


def test_slash_opens_the_command_menu_with_descriptions_and_tab_completes(tmp_path, screen):
    cmds = tmp_path / ".claude" / "commands"
    cmds.mkdir(parents=True)
    (cmds / "review.md").write_text("---\ndescription: Review a file carefully\n---\nReview $ARGUMENTS\n")
    with ScriptedAPI().serve() as url:
        # HOME elsewhere: started in ~, ~/.claude/commands would be the user's own folder
        s = screen(url, "--trust", env={"HOME": str(tmp_path / "home")})
        s.term.send("/")
        shown = s.wait_text("Show commands and keys")
        assert "/help" in shown and "/compact" in shown
        s.term.send("rev")
        shown = s.wait_text("Review a file carefully")
        assert "(project)" in shown
        s.term.send("\t")
        s.wait_for(lambda screen_text: s.input_line().rstrip() == "> /review")
        for _ in range(7):
            s.term.send("\x7f")
        s.term.send("/hel\t")
        s.wait_for(lambda screen_text: s.input_line().rstrip() == "> /help")
        s.term.send("\r")
        s.wait_text("Keys: Enter send")   # the end of /help (its start scrolls past 30 rows)


def test_at_fuzzy_matches_files_and_respects_gitignore(tmp_path, screen):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "alpha_module.py").write_text("x = 1\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "alpha_module_copy.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("build/\n.cfg/\n")
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("look at @alpmod")
        shown = s.wait_text("src/alpha_module.py")
        assert "alpha_module_copy" not in shown  # ignored by .gitignore
        s.term.send("\t")
        s.wait_for(lambda screen_text: s.input_line().rstrip() == "> look at @src/alpha_module.py")


def test_question_mark_on_empty_input_shows_shortcuts_and_is_not_inserted(tmp_path, screen):
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("?")
        shown = s.wait_text("! for bash mode")
        assert "@ for file paths" in shown and "/ for commands" in shown
        assert "Ctrl+B  background a command" in shown and "# to remember" in shown
        s.wait_for(lambda text: s.input_line() == ">")
        s.term.send("why?")  # in text, `?` is just a character
        s.wait_for(lambda screen_text: s.input_line().rstrip() == "> why?")


def test_ctrl_c_hint_expires(tmp_path, screen):
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("\x03")
        s.wait_text("Press Ctrl-C again to exit")
        time.sleep(2.5)  # longer than the exit window
        s.wait_for(lambda text: "Press Ctrl-C again" not in text)
        s.term.send("\x03")  # a lone Ctrl-C again: the hint again, not an exit
        s.wait_text("Press Ctrl-C again to exit")
        assert s.term.child.isalive()
