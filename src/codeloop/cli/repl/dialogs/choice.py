"""The REPL's questions: a numbered choice (permission prompts, trust, /rewind), a free-text answer
(AskUserQuestion's "Other") and a searchable picker list in the toolbar (/resume).

A choice is answered as Claude Code's dialogs are: ↑/↓ move the highlight and Enter takes it; a
digit answers at once — even while the input holds a draft, which is neither touched nor typed
into, so it is still there afterwards; y/n answer on an empty input; Esc declines. The question is
written to the scrollback (with its answer once given, the record of what was asked) and its
options live in the toolbar, the one place they are chosen from.

A free-text answer borrows the input line: the draft is put aside, the user types the answer and
Enter sends it, then the draft comes back. Esc gives no answer (the form goes back to its choices).

A mixin of `Repl`: it uses the REPL's `show`, `flash`, `_invalidate`, `pending`, `picker`,
`session` and `_choice_lock`. Parallel tools ask one question at a time (the lock).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

VISIBLE_OPTIONS = 9   # digits reach 1-9; a longer list scrolls with the highlight


@dataclass
class PendingChoice:
    """A choice shown to the user in the REPL, and the future its answer resolves. No options:
    a free-text question, answered by what is typed in the input line."""
    title: str
    options: list[tuple[str, str]]
    future: asyncio.Future[str | None]
    index: int = 0

    @property
    def free_text(self) -> bool:
        return not self.options


class ChoiceMixin:
    # What it uses of the Repl (as FlowMixin declares it): the Repl sets and defines these.
    pending: PendingChoice | None
    picker: Any                   # a repl.picker.Picker while one is open
    session: Any                  # the PromptSession (its buffer holds the draft)
    _choice_lock: asyncio.Lock

    if TYPE_CHECKING:
        def show(self, text: str, *, style: str = "") -> None: ...
        def flash(self, text: str) -> None: ...
        def _invalidate(self) -> None: ...

    async def choose(self, title: str, options: list[tuple[str, str]]) -> str | None:
        async with self._choice_lock:  # parallel tools ask one at a time
            self.show(title, style="bold")
            answer = await self._ask(PendingChoice(title, options, asyncio.get_running_loop().create_future()))
            label = next((lab for key, lab in options if key == answer), "cancelled")
            self.show(f"  ⎿  {label}", style="info")
            return answer

    async def ask_text(self, title: str) -> str | None:
        """A free-text answer typed in the input line (the draft is set aside meanwhile); None on Esc."""
        async with self._choice_lock:
            buf = self.session.default_buffer if self.session is not None else None
            draft = buf.document if buf is not None else None
            if buf is not None:
                buf.reset()
            try:
                answer = await self._ask(PendingChoice(title, [], asyncio.get_running_loop().create_future()))
            finally:
                if buf is not None and draft is not None:
                    buf.document = draft
            if answer is not None:
                self.show(f"  ⎿  {answer}", style="info")
            return answer

    async def _ask(self, choice: PendingChoice) -> str | None:
        self.pending = choice
        self._invalidate()
        try:
            return await choice.future
        finally:
            self.pending = None
            self._invalidate()

    def choice_fragments(self) -> list[tuple[str, str]]:
        """The open question in the toolbar: its title, then each option (the highlighted one marked)."""
        p = self.pending
        if p is None:
            return []
        if p.free_text:
            return [("class:choice", f"{p.title}\n"),
                    ("class:mode", "  Type your answer, then Enter · Esc to go back\n")]
        out = [("class:choice", f"{p.title}\n")]
        start = max(0, min(p.index - VISIBLE_OPTIONS // 2, len(p.options) - VISIBLE_OPTIONS))
        for i in range(start, min(start + VISIBLE_OPTIONS, len(p.options))):
            mark = "❯" if i == p.index else " "
            out.append(("class:choice" if i == p.index else "class:mode", f"{mark} {i + 1}) {p.options[i][1]}\n"))
        if len(p.options) > VISIBLE_OPTIONS:
            out.append(("class:mode", f"  … {len(p.options)} options (↑/↓)\n"))
        return out

    def move_choice(self, delta: int) -> None:
        p = self.pending
        if p is not None and p.options:
            p.index = (p.index + delta) % len(p.options)
            self._invalidate()

    def accept_choice(self) -> None:
        """Enter: the highlighted option."""
        p = self.pending
        if p is not None and p.options and not p.future.done():
            p.future.set_result(p.options[p.index][0])

    async def pick(self, title: str, items: list[tuple[str, str, str]]) -> str | None:
        """A searchable list of (key, label, preview) in the toolbar (repl.picker); the chosen key."""
        from codeloop.cli.repl.picker import PickItem, Picker

        async with self._choice_lock:
            self.picker = Picker(title, [PickItem(*it) for it in items], asyncio.get_running_loop().create_future())
            self._invalidate()
            try:
                return await self.picker.future
            finally:
                self.picker = None
                self._invalidate()

    def answer_choice(self, text: str | None) -> None:
        """A digit, y/n or a typed answer; None (Esc, Ctrl+C) declines."""
        p = self.pending
        if p is None or p.future.done():
            return
        if p.free_text:
            if text is None or text.strip():
                p.future.set_result(text.strip() if text is not None else None)
            return
        keys = [k for k, _ in p.options]
        if text is None or text.lower() in ("n", "no"):
            answer = None if text is None or "no" not in keys else "no"
        elif text.lower() in ("y", "yes"):
            answer = keys[0]
        elif text.isdigit() and 1 <= int(text) <= len(keys):
            answer = keys[int(text) - 1]
        else:
            self.flash(f"Answer 1-{len(keys)} first (Esc: no) · your text is kept")
            return
        p.future.set_result(answer)
