"""Issue 27 item 3 in a real pty, judged on the screen: settings `editorMode: "vim"` edits the
input in vim's insert and normal modes, the mode shown in the footer; Esc in insert mode goes to
normal mode instead of interrupting; `toggle_vim` switches it for the session."""

import json
import time

from fakeapi import ScriptedAPI, sse, text


def _vim_settings(tmp_path, extra=None):
    cfg = tmp_path / ".cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "settings.json").write_text(json.dumps({"editorMode": "vim", **(extra or {})}))


def test_vim_mode_edits_in_normal_and_insert_mode(tmp_path, screen):
    _vim_settings(tmp_path)
    api = ScriptedAPI(sse(text("Got it.")))
    with api.serve() as url:
        s = screen(url)
        s.wait_text("-- INSERT --")
        s.term.send("hello world")
        s.wait_text("> hello world")
        s.term.send("\x1b")                          # Esc: normal mode
        s.wait_text("-- NORMAL --")
        time.sleep(0.2)
        s.term.send("0")                             # start of line
        s.term.send("dw")                            # delete a word
        s.wait_for(lambda scr: s.input_line() == "> world")
        s.term.send("A")                             # append at the end: insert mode again
        s.wait_text("-- INSERT --")
        s.term.send(" peace\r")
        s.wait_text("Got it.")
    assert "world peace" in json.dumps(api.requests[0].messages[-1])


def test_toggle_vim_switches_the_prompts_editing_mode(tmp_path):
    from prompt_toolkit import PromptSession
    from prompt_toolkit.enums import EditingMode
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from codeloop.cli.repl.footer import FooterMixin, toggle_vim
    from codeloop.cli.startup.options import options_from_argv

    class Host(FooterMixin):
        redraws = 0

        def _invalidate(self):
            self.redraws += 1

    with create_pipe_input() as pipe:
        host = Host()
        host.options = options_from_argv([])
        host.session = PromptSession(input=pipe, output=DummyOutput(), editing_mode=host.editing_mode())
        assert host.vim_mode() is None and host.session.editing_mode is EditingMode.EMACS
        assert toggle_vim(host) is True
        assert host.session.editing_mode is EditingMode.VI and host.vim_mode() == "INSERT"
        assert host.toggle_vim() is False
        assert host.session.editing_mode is EditingMode.EMACS and host.redraws == 2


def test_esc_leaves_insert_mode_first_and_interrupts_from_normal_mode(tmp_path, screen):
    _vim_settings(tmp_path)
    slow = sse(text("A slow answer " * 20, chunks=10))
    slow.chunks.insert(5, (5.0, b": still going\n\n"))
    api = ScriptedAPI(slow)
    with api.serve() as url:
        s = screen(url)
        s.term.send("go\r")
        s.wait_text("esc to interrupt")
        s.term.send("\x1b")                          # insert → normal: the answer goes on
        s.wait_text("-- NORMAL --")
        time.sleep(0.5)
        s.pump(0.2)
        assert "Interrupted" not in s.text()
        s.term.send("\x1b")                          # in normal mode Esc interrupts, as without vim
        s.wait_text("Interrupted")
