"""The REPL's questions: a numbered choice (permission prompts, trust, /rewind) answered by
digit, y/n or Esc, and a searchable picker list in the toolbar (/resume).

A mixin of `Repl`: it uses the REPL's `show`, `flash`, `_invalidate`, `pending`, `picker` and
`_choice_lock`. Parallel tools ask one question at a time (the lock).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any


@dataclass
class PendingChoice:
    """A choice shown to the user in the REPL, and the future its answer resolves."""
    title: str
    options: list[tuple[str, str]]
    future: asyncio.Future[str | None]


class ChoiceMixin:
    # What it uses of the Repl (as FlowMixin declares it): the Repl sets and defines these.
    pending: PendingChoice | None
    picker: Any                   # a repl.picker.Picker while one is open
    _choice_lock: asyncio.Lock

    if TYPE_CHECKING:
        def show(self, text: str, *, style: str = "") -> None: ...
        def flash(self, text: str) -> None: ...
        def _invalidate(self) -> None: ...

    async def choose(self, title: str, options: list[tuple[str, str]]) -> str | None:
        async with self._choice_lock:  # parallel tools ask one at a time
            lines = [title] + [f"  {i}) {label}" for i, (_, label) in enumerate(options, 1)]
            self.show("\n".join(lines), style="bold")
            future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
            self.pending = PendingChoice(title, options, future)
            self._invalidate()
            try:
                answer = await future
            finally:
                self.pending = None
                self._invalidate()
            label = next((lab for key, lab in options if key == answer), "cancelled")
            self.show(f"  ⎿  {label}", style="info")
            return answer

    def is_choice_answer(self, text: str) -> bool:
        keys = [k for k, _ in self.pending.options] if self.pending is not None else []
        t = text.lower()
        return t in ("y", "yes", "n", "no") or (t.isdigit() and 1 <= int(t) <= len(keys))

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
        p = self.pending
        if p is None or p.future.done():
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
