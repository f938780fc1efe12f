"""A list picker in the REPL's toolbar (the /resume list): ↑/↓ move, typing searches, Enter picks,
Esc cancels, and the highlighted item's preview shows below the list.

The input line is the search field, so digits are text like any other: `10` + Enter picks item
10, never item 1 with a stray `0` left in the prompt.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

VISIBLE = 8


@dataclass(frozen=True)
class PickItem:
    """One entry of a picker: its key, its label and an optional preview."""
    key: str
    label: str
    preview: str = ""


@dataclass
class Picker:
    """An open filterable picker: its items, the query, the selection and the future to resolve."""
    title: str
    items: list[PickItem]
    future: asyncio.Future[str | None]
    index: int = 0
    query: str = ""
    _shown: list[PickItem] = field(default_factory=list)

    def filtered(self, query: str) -> list[PickItem]:
        if query != self.query:
            self.query, self.index = query, 0
        words = query.lower().split()
        self._shown = [it for it in self.items if all(w in f"{it.label}\n{it.preview}".lower() for w in words)]
        return self._shown

    def move(self, delta: int) -> None:
        n = len(self._shown) if self._shown or self.query else len(self.items)
        if n:
            self.index = (self.index + delta) % n

    def accept(self, query: str) -> bool:
        """Pick the highlighted item (or item N for a typed number N); False when nothing can be
        picked (an empty search result)."""
        shown = self.filtered(query)
        q = query.strip()
        if q.isdigit() and 1 <= int(q) <= len(self.items):
            chosen: PickItem | None = self.items[int(q) - 1]
        else:
            chosen = shown[self.index] if shown else None
        if chosen is None:
            return False
        if not self.future.done():
            self.future.set_result(chosen.key)
        return True

    def cancel(self) -> None:
        if not self.future.done():
            self.future.set_result(None)

    def fragments(self, query: str) -> list[tuple[str, str]]:
        """The toolbar: title, the visible window of matches (highlighted one marked), the preview."""
        shown = self.filtered(query)
        self.index = min(self.index, max(len(shown) - 1, 0))
        out = [("class:choice", f"{self.title}  (↑/↓ move · type to search · Enter pick · Esc cancel)\n")]
        if not shown:
            out.append(("class:mode", f"  no match for {query!r}\n"))
            return out
        start = max(0, min(self.index - VISIBLE // 2, len(shown) - VISIBLE))
        for i in range(start, min(start + VISIBLE, len(shown))):
            item = shown[i]
            number = self.items.index(item) + 1
            line = f"{'❯' if i == self.index else ' '} {number:>2}. {item.label}"
            out.append(("class:choice" if i == self.index else "class:mode", line + "\n"))
        if len(shown) > VISIBLE:
            out.append(("class:mode", f"    … {len(shown)} matches\n"))
        preview = shown[self.index].preview
        if preview:
            out.append(("class:status", "  " + preview.replace("\n", "\n  ") + "\n"))
        return out
