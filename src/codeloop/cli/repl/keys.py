"""REPL key bindings: what each key does, and only that (the actions live behind `KeyActions`).

    Enter            submit (a trailing `\\` turns it into a newline); answers a pending choice
                     (text that is not an answer stays in the prompt, it is never discarded)
    Alt/Meta+Enter   newline (also Ctrl+J)
    Esc              interrupt the running query; cancels a pending choice ("No"); in vim
                     mode (settings `editorMode`, /vim) insert mode's Esc is normal mode
    Esc Esc          on empty input: /rewind (restore code and/or conversation to an earlier prompt)
    Ctrl+C           clear the input / interrupt; twice within 2 s exits
    Ctrl+D           exit on empty input (while the model works: press twice)
    Ctrl+O           toggle the transcript view (tool output in full)
    Shift+Tab        cycle permission modes: default → acceptEdits → plan (→ bypass if started so)
    1-9, y, n        answer a pending choice (permission prompt)
    ↑/↓, Enter       move in / pick from an open list (/resume); typing searches it
    Tab              accept the highlighted completion (`/command`, `@path`); else open the menu
    ?                on empty input: show the shortcuts (not inserted)
    paste            long pastes collapse into a `[Pasted text #N +K lines]` placeholder; a pasted
                     image file path attaches the image (`[Image #N: name]`)
    Ctrl+V           paste the clipboard's image (wl-paste / xclip), or attach the image file
                     whose path is the word before the cursor

Plus the user's own: the `keybindings` setting maps prompt_toolkit key names to slash commands
(`{"c-x c-k": "/compact", "f5": "/review"}`). A command sent by a key is treated as spec 004
§2.1 says: a LOCAL one runs at once even while a query runs; any other waits in the queue.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from prompt_toolkit.filters import Condition, vi_insert_mode
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys

PASTE_COLLAPSE_CHARS = 800
DOUBLE_ESCAPE_S = 0.8
PASTE_COLLAPSE_LINES = 10


class KeyActions(Protocol):
    """What the keys may do: the narrow interface the REPL hands in (not the REPL module)."""
    pending: Any                                # a pending choice, or None
    picker: Any                                 # an open repl.picker.Picker, or None

    def answer_choice(self, text: str | None) -> None: ...
    def interrupt(self) -> None: ...
    def ctrl_c(self, buffer: Any) -> None: ...
    def request_exit(self) -> None: ...
    def ctrl_d(self) -> None: ...
    def toggle_transcript(self) -> None: ...
    def is_choice_answer(self, text: str) -> bool: ...
    def cycle_permission_mode(self) -> None: ...
    def add_paste(self, text: str) -> str: ...
    def app_buffer_text(self) -> str: ...
    def send_command(self, text: str) -> None: ...
    def keep_paste(self, entry: dict[str, Any]) -> int: ...
    def show(self, text: str, *, style: str = "") -> None: ...
    def flash(self, text: str) -> None: ...
    @property
    def cwd(self) -> Any: ...                   # where relative pasted paths are found (read only)


def build_bindings(repl: KeyActions, commands: dict[str, str] | None = None) -> tuple[KeyBindings, list[str]]:
    """The bindings, and a warning for each user binding that could not be used."""
    kb = KeyBindings()
    warnings = [_bind_command(kb, repl, keys, command) for keys, command in (commands or {}).items()]
    choosing = Condition(lambda: repl.pending is not None)

    @kb.add("enter")
    def _enter(event) -> None:
        buf = event.current_buffer
        if repl.picker is not None:
            if repl.picker.accept(buf.text):
                buf.reset()
            return
        if repl.pending is not None:
            answer = buf.text.strip()
            if answer and not repl.is_choice_answer(answer):  # a message being typed: keep it
                repl.answer_choice(answer)                     # (which says how to answer)
                return
            buf.reset()
            repl.answer_choice(answer)
            return
        if buf.document.text_before_cursor.endswith("\\"):
            buf.delete_before_cursor(1)
            buf.insert_text("\n")
            return
        buf.validate_and_handle()

    @kb.add("escape", "enter")
    @kb.add("c-j")
    def _newline(event) -> None:
        event.current_buffer.insert_text("\n")

    last_escape = [0.0]
    picking = Condition(lambda: repl.picker is not None)

    # vim mode: Esc in insert mode goes to normal mode (prompt_toolkit's vi bindings); in normal
    # mode it interrupts, as Esc does without vim. A pending choice or list is answered first.
    @kb.add("escape", filter=~vi_insert_mode | choosing | picking)
    def _escape(event) -> None:
        if repl.picker is not None:
            event.current_buffer.reset()
            repl.picker.cancel()
            return
        if repl.pending is not None:
            repl.answer_choice(None)
            return
        now = time.monotonic()
        if not event.current_buffer.text and now - last_escape[0] < DOUBLE_ESCAPE_S:
            last_escape[0] = 0.0
            repl.send_command("/rewind")  # Esc Esc on empty input: back to an earlier prompt
            return
        last_escape[0] = now
        repl.interrupt()

    @kb.add("c-c")
    @kb.add(Keys.SIGINT)
    def _ctrl_c(event) -> None:
        repl.ctrl_c(event.current_buffer)

    @kb.add("c-d")
    def _ctrl_d(event) -> None:
        buf = event.current_buffer
        if buf.text:
            buf.delete(1)
        else:
            repl.ctrl_d()

    @kb.add("c-o")
    def _transcript(event) -> None:
        repl.toggle_transcript()

    @kb.add("s-tab")
    def _cycle_mode(event) -> None:
        repl.cycle_permission_mode()

    for key in "123456789yn":
        @kb.add(key, filter=choosing & Condition(lambda: not repl.app_buffer_text()))
        def _choice(event, key=key) -> None:
            repl.answer_choice(key)

    @kb.add("up", filter=picking)
    def _up(event) -> None:
        repl.picker.move(-1)

    @kb.add("down", filter=picking)
    def _down(event) -> None:
        repl.picker.move(1)

    @kb.add("tab")
    def _complete(event) -> None:
        # Tab takes the highlighted entry, else the best match at once (even before the
        # as-you-type menu has been computed).
        from prompt_toolkit.completion import CompleteEvent

        buf = event.current_buffer
        state = buf.complete_state
        if state is not None and state.current_completion is not None:
            buf.apply_completion(state.current_completion)
            return
        if buf.completer is None:
            return
        best = next(iter(buf.completer.get_completions(buf.document, CompleteEvent(completion_requested=True))),
                    None)
        buf.cancel_completion()
        if best is not None:
            buf.apply_completion(best)

    @kb.add("?", filter=~choosing & Condition(lambda: not repl.app_buffer_text()))
    def _shortcuts(event) -> None:
        from codeloop.cli.repl.complete import SHORTCUTS
        repl.show(SHORTCUTS, style="info")

    @kb.add(Keys.BracketedPaste)
    def _paste(event) -> None:
        data = event.data.replace("\r\n", "\n").replace("\r", "\n")
        if _insert_image_file(repl, event.current_buffer, data):
            return
        if len(data) > PASTE_COLLAPSE_CHARS or data.count("\n") > PASTE_COLLAPSE_LINES:
            event.current_buffer.insert_text(repl.add_paste(data))
        else:
            event.current_buffer.insert_text(data)

    @kb.add("c-v")
    def _paste_image(event) -> None:
        from codeloop.input.process import clipboard_image

        buf = event.current_buffer
        words = buf.document.text_before_cursor.split()
        if words and _insert_image_file(repl, buf, words[-1], replace=len(words[-1])):
            return
        got = clipboard_image()
        if got is None:
            repl.flash("No image on the clipboard (needs wl-paste or xclip); paste an image file path instead")
            return
        buf.insert_text(_image_placeholder(repl, got[0], got[1], "clipboard"))

    return kb, [w for w in warnings if w]


def _insert_image_file(repl: KeyActions, buf: Any, text: str, replace: int = 0) -> bool:
    from codeloop.input.process import IMAGE_TYPES, pasted_image_path

    path = pasted_image_path(text, repl.cwd)
    if path is None:
        return False
    try:
        data = path.read_bytes()
    except OSError as exc:
        repl.flash(f"{path.name}: {exc.strerror}")
        return True
    if replace:
        buf.delete_before_cursor(replace)
    buf.insert_text(_image_placeholder(repl, data, IMAGE_TYPES[path.suffix.lower()], path.name))
    return True


def _image_placeholder(repl: KeyActions, data: bytes, media_type: str, name: str) -> str:
    """Keep a pasted image for the next submit; the placeholder the input shows for it."""
    from codeloop.input.process import image_paste

    entry = image_paste(data, media_type)
    if isinstance(entry, str):
        repl.flash(entry)
        return ""
    return f"[Image #{repl.keep_paste(entry)}: {name}] "


def _bind_command(kb: KeyBindings, repl: KeyActions, keys: Any, command: Any) -> str | None:
    if not isinstance(keys, str) or not isinstance(command, str) or not command.strip().startswith("/"):
        return f"keybindings: {keys!r} → {command!r} ignored (a key name and a /command are expected)"
    try:
        kb.add(*keys.split())(lambda event: repl.send_command(command.strip()))
    except ValueError as exc:
        return f"keybindings: {keys!r} ignored ({exc})"
    return None
