"""Skill discovery prefetch (spec 004 §13.2 step 4): between turns, skills relevant to the latest
tool results are attached for the next request.

Started as soon as a batch of tool results is in (`start`), it runs in a thread while the
PostToolBatch hooks, the queued commands and the nested-memory attachments are handled, and the
continuation pipeline awaits it at step 4 (`collect`), after memory and before the tool refresh.

What counts as relevant: the skills of the session (`tools.skills`, discovered once per context)
are matched against the words of the batch — each call's input and the text of its result. A
skill is relevant when every word of its name occurs there (`pdf-forms` → "pdf" and "forms"), or
at least `MIN_SHARED` distinct significant words of its description do; the best `MAX_ATTACHED`
are attached, each skill once per session (a skill already attached or loaded with the Skill
tool is not offered again). Nothing happens where the Skill tool is not offered or there are no
skills.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from typing import Any

from codeloop.messages import Message, user_message

MAX_ATTACHED = 3
MIN_SHARED = 3
MAX_SIGNAL_CHARS = 200_000     # of the batch's text: enough to judge, bounded work per turn
HEADER = "Skills relevant to the latest tool results"
_WORD = r"[a-z0-9]+"
_STOP = frozenset("""
about after also always any been before being both could does done each else even every from have here
into just like make many more most must need needs only other over same should some such than that the
their them then there these they this those under used uses using very what when where which while will
with within without would your you
""".split())


def _words(text: str) -> set[str]:
    return set(re.findall(_WORD, text.lower()))


def _name_words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_.:\s]+", name.lower()) if w]


def _significant(description: str) -> set[str]:
    return {w for w in _words(description) if len(w) >= 4 and w not in _STOP and not w.isdigit()}


def batch_text(tool_uses: list[dict[str, Any]], results: list[Message]) -> str:
    """The words the batch shows: each call's name and input, and its result's text."""
    parts: list[str] = []
    for block in tool_uses:
        parts.append(str(block.get("name", "")))
        parts.extend(str(v) for v in (block.get("input") or {}).values())
    for m in results:
        for b in m.content if isinstance(m.content, list) else []:
            content = b.get("content") if b.get("type") == "tool_result" else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return "\n".join(parts)[:MAX_SIGNAL_CHARS]


def relevant(skills: Iterable[Any], text: str, skip: set[str]) -> list[Any]:
    """The skills `text` calls for, best first: a full name match, then the most shared words."""
    seen = _words(text)
    scored = []
    for skill in skills:
        if skill.name in skip:
            continue
        named = all(w in seen for w in _name_words(skill.name))
        shared = len(_significant(skill.description) & seen)
        if named or shared >= MIN_SHARED:
            scored.append(((named, shared), skill))
    scored.sort(key=lambda pair: (-pair[0][0], -pair[0][1], pair[1].name))
    return [skill for _, skill in scored[:MAX_ATTACHED]]


def discovery_message(skills: list[Any]) -> Message:
    lines = "\n".join(f"- {s.name}: {s.description}" for s in skills)
    return user_message(f"<system-reminder>\n{HEADER} (load one with the Skill tool before acting on what it "
                        f"covers):\n{lines}\n</system-reminder>", is_meta=True)


def already_offered(history: list[Message]) -> set[str]:
    """Skills a discovery attachment named or the Skill tool loaded earlier in `history`."""
    names: set[str] = set()
    for m in history:
        if m.role == "assistant":
            names.update(str((b.get("input") or {}).get("skill", "")).strip().lstrip("/")
                         for b in m.tool_uses() if b.get("name") == "Skill")
        elif m.is_meta and HEADER in m.text:
            names.update(line[2:].split(":", 1)[0] for line in m.text.splitlines() if line.startswith("- "))
    return names


class SkillPrefetch:
    """One query's discovery prefetch: at most one pending match at a time."""

    def __init__(self, history: list[Message]) -> None:
        self.offered = already_offered(history)
        self.pending: asyncio.Task[list[Any]] | None = None

    def start(self, ctx: Any, tools: list[Any], tool_uses: list[dict[str, Any]], results: list[Message]) -> None:
        self.cancel()
        self.offered.update(str((b.get("input") or {}).get("skill", "")).strip().lstrip("/")
                            for b in tool_uses if b.get("name") == "Skill")
        if not tool_uses or ctx.skills == [] or not any(t.name == "Skill" for t in tools):
            return   # (a session without skills pays nothing past its first batch)
        skip = set(self.offered)

        def match() -> list[Any]:
            from codeloop.tools.skills import session_skills

            skills = session_skills(ctx)
            return relevant(skills, batch_text(tool_uses, results), skip) if skills else []
        self.pending = asyncio.ensure_future(asyncio.to_thread(match))

    async def collect(self) -> list[tuple[dict[str, Any], Message]]:
        """(attachment record, meta message) for what the pending match found; [] without one."""
        pending, self.pending = self.pending, None
        if pending is None:
            return []
        try:
            found = await pending
        except OSError:     # an unreadable skills folder: nothing to attach this time
            return []
        if not found:
            return []
        self.offered.update(s.name for s in found)
        record = {"type": "skill_discovery", "skills": [{"name": s.name, "description": s.description}
                                                        for s in found]}
        return [(record, discovery_message(found))]

    def cancel(self) -> None:
        if self.pending is not None and not self.pending.done():
            self.pending.cancel()
        self.pending = None
