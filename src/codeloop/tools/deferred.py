"""Deferred tools: which tool schemas ride in a request, and the hint for the ones that don't.

A tool with `should_defer = True` is shown to the model only by name until it is loaded through
ToolSearch; after that its full schema is part of every request. The set of loaded names lives in
`ctx.loaded_deferred` (per ToolContext, so a subagent loads its own).

Deferral changes schema residency only, never the gates: every helper here first drops tools
whose `is_enabled(ctx)` is False, so a gated-off tool is neither visible, hinted nor searchable.

Wiring (the loop/Conversation side): keep the whole pool in `ctx.tool_pool` (ToolSearch
searches it), send `request_tools(pool, ctx)` as the request's tools (and as `refresh_tools`, so a
tool loaded in one turn is sent from the next), and put `deferred_hint(...)` in the system prompt.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import Any

from codeloop.tools.base import Tool, ToolContext

log = logging.getLogger(__name__)

TOOL_SEARCH_NAME = "ToolSearch"

HINT_INTRO = (
    "The following deferred tools are available, but their full descriptions and input schemas are "
    f"not loaded yet. Before calling one of them you must load it with the {TOOL_SEARCH_NAME} tool "
    f"(for example {TOOL_SEARCH_NAME} with query \"select:<name>\"); read the guidance it returns and "
    "follow it. A deferred tool that has not been loaded cannot be called.")


def loaded_deferred(ctx: ToolContext) -> set[str]:
    """The names of deferred tools loaded in this context."""
    return ctx.loaded_deferred


def tool_pool(ctx: ToolContext) -> list[Tool]:
    return list(ctx.tool_pool)


def _enabled(tool: Tool, ctx: ToolContext | None) -> bool:
    if ctx is None:
        return True
    try:
        return bool(tool.is_enabled(ctx))
    except Exception:  # a broken gate hides its tool rather than breaking every request
        log.exception("is_enabled of %s failed; hiding the tool", getattr(tool, "name", tool))
        return False


def _defers(tool: Tool) -> bool:
    return bool(getattr(tool, "should_defer", False))


def enabled_tools(tools: Iterable[Tool], ctx: ToolContext | None) -> list[Tool]:
    return [t for t in tools if _enabled(t, ctx)]


def partition_deferred(tools: Iterable[Tool], loaded: set[str],
                       ctx: ToolContext | None = None) -> tuple[list[Tool], list[str]]:
    """(tools whose full schema is sent, names of deferred tools not loaded yet), in pool order.

    With `ctx`, tools gated off by `is_enabled(ctx)` are dropped from both lists first.
    """
    visible: list[Tool] = []
    deferred: list[str] = []
    for t in enabled_tools(tools, ctx):
        if _defers(t) and t.name not in loaded:
            deferred.append(t.name)
        else:
            visible.append(t)
    return visible, deferred


def searchable_tools(pool: Iterable[Tool], ctx: ToolContext | None) -> list[Tool]:
    """Enabled deferred tools: what ToolSearch may return (loaded or not)."""
    return [t for t in enabled_tools(pool, ctx) if _defers(t)]


def request_tools(pool: Iterable[Tool], ctx: ToolContext) -> list[Tool]:
    """The tools to send in a request: enabled, non-deferred or already loaded.

    ToolSearch itself is left out when there is nothing deferred to search for.
    """
    pool = list(pool)
    visible, _ = partition_deferred(pool, loaded_deferred(ctx), ctx)
    if not searchable_tools(pool, ctx):
        visible = [t for t in visible if t.name != TOOL_SEARCH_NAME]
    return visible


def deferred_hint(names: Iterable[str]) -> str:
    """The system-prompt paragraph naming deferred tools ("" when there are none)."""
    names = list(dict.fromkeys(names))
    if not names:
        return ""
    return HINT_INTRO + "\n" + "\n".join(f"{n} (deferred tool)" for n in names)


def hint_for(pool: Iterable[Tool], ctx: ToolContext) -> str:
    """The hint for every enabled deferred tool of the pool, loaded or not.

    Listing loaded tools too keeps the system prompt byte-identical across turns (prompt cache).
    """
    return deferred_hint(t.name for t in searchable_tools(pool, ctx))


# -- search -----------------------------------------------------------------------------------------

def _name_parts(name: str) -> list[str]:
    # EndConversation → end, conversation; mcp__server__do_thing → mcp, server, do, thing
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [p for p in re.split(r"[\s_\-]+", spaced.lower()) if p]


def _score(tool: Tool, terms: list[str]) -> int:
    name = tool.name.lower()
    parts = _name_parts(tool.name)
    desc = str(getattr(tool, "description", "") or "").lower()
    score = 0
    for term in terms:
        if term == name:
            score += 20
        elif term in parts:
            score += 10
        elif any(p.startswith(term) for p in parts):
            score += 5
        elif re.search(rf"\b{re.escape(term)}", desc):
            score += 2
    return score


def search_tools(candidates: list[Tool], query: str, max_results: int) -> tuple[list[Tool], list[str]]:
    """(matches, names asked for but not found).

    `select:A,B` picks exact names (case-sensitive first, then case-insensitive); otherwise the
    query is keywords matched against name parts and description, `+word` marking a word every
    match must contain. Ranked by score, pool order breaking ties.
    """
    query = query.strip()
    if query.lower().startswith("select:"):
        wanted = [w.strip() for w in query[len("select:"):].split(",") if w.strip()]
        by_name = {t.name: t for t in candidates}
        by_lower = {t.name.lower(): t for t in candidates}
        found: list[Tool] = []
        missing: list[str] = []
        for w in wanted:
            t = by_name.get(w) or by_lower.get(w.lower())
            if t is None:
                missing.append(w)
            elif t not in found:
                found.append(t)
        return found, missing
    words = query.lower().split()
    required = [w[1:] for w in words if w.startswith("+") and len(w) > 1]
    terms = [w.lstrip("+") for w in words if w.lstrip("+")]
    if not terms:
        return [], []
    ranked = []
    for i, t in enumerate(candidates):
        if any(_score(t, [r]) == 0 for r in required):
            continue
        s = _score(t, terms)
        if s > 0:
            ranked.append((-s, i, t))
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [t for _, _, t in ranked[:max(1, max_results)]], []


def render_functions(tools: Iterable[Tool]) -> str:
    """The `<functions>` listing: one `{"name","description","input_schema"}` JSON per tool."""
    lines = ["<functions>"]
    for t in tools:
        schema: dict[str, Any] = t.api_schema()
        entry = {"name": schema["name"], "description": schema["description"],
                 "input_schema": schema["input_schema"]}
        lines.append(f"<function>{json.dumps(entry, ensure_ascii=False)}</function>")
    lines.append("</functions>")
    return "\n".join(lines)
