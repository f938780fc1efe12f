"""REPL key bindings against a narrow KeyActions fake: user bindings send slash commands."""

from prompt_toolkit.keys import Keys

from codeloop.cli.repl.keys import build_bindings


class Actions:
    """Implements cli.repl_keys.KeyActions; records what the keys asked for."""
    pending = None

    def __init__(self):
        self.sent: list[str] = []

    def send_command(self, text):
        self.sent.append(text)

    def answer_choice(self, text):
        raise AssertionError("not expected")

    def interrupt(self):
        raise AssertionError("not expected")

    def ctrl_c(self, buffer):
        raise AssertionError("not expected")

    def request_exit(self):
        raise AssertionError("not expected")

    def cycle_permission_mode(self):
        raise AssertionError("not expected")

    def add_paste(self, text):
        return text

    def app_buffer_text(self):
        return ""


def press(kb, *keys):
    [binding] = kb.get_bindings_for_keys(keys)
    binding.handler(None)


def test_user_bindings_send_their_command_marked_as_from_a_key():
    actions = Actions()
    kb, problems = build_bindings(actions, {"f5": "/init", "c-x c-k": " /compact "})
    assert problems == []
    press(kb, Keys.F5)
    press(kb, Keys.ControlX, Keys.ControlK)
    assert actions.sent == ["/init", "/compact"]


def test_unusable_bindings_are_reported_and_skipped():
    actions = Actions()
    kb, problems = build_bindings(actions, {"no-such-key": "/init", "f6": "not a command", "f7": 3})
    assert len(problems) == 3 and all(p.startswith("keybindings: ") for p in problems)
    assert kb.get_bindings_for_keys((Keys.F6,)) == [] and kb.get_bindings_for_keys((Keys.F7,)) == []
