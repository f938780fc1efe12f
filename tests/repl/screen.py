"""What a user sees: the pty's output fed through a terminal emulator (pyte), for assertions on
the screen as it stands rather than on the byte stream."""

from __future__ import annotations

import time

import pexpect
import pyte

from ptyterm import Term


class Screen:
    def __init__(self, term: Term, rows: int = 30, cols: int = 100) -> None:
        self.term = term
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)

    def pump(self, seconds: float = 0.2) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                data = self.term.child.read_nonblocking(65536, timeout=0.05)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                return
            # prompt_toolkit asks where the cursor is: answer with the emulated cursor, or it lays
            # its toolbar out from the wrong row and scrolls real output away.
            *before, last = data.split("\x1b[6n")
            for part in before:
                self.stream.feed(part)
                self.term.child.send(f"\x1b[{self.screen.cursor.y + 1};{self.screen.cursor.x + 1}R")
            self.stream.feed(last)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, predicate, timeout: float = 15.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump(0.15)
            if predicate(self.text()):
                return self.text()
        raise AssertionError(f"screen never matched; it shows:\n{self.text()}")

    def wait_text(self, needle: str, timeout: float = 15.0) -> str:
        return self.wait_for(lambda s: needle in s, timeout)

    def input_line(self) -> str:
        """The line holding the prompt `> ` (the last one on screen)."""
        lines = [line for line in self.text().splitlines() if line == ">" or line.startswith("> ")]
        return lines[-1] if lines else ""
