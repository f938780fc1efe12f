"""/context: what fills the context window, by category, as a grid of cells plus figures.

Categories, as Claude Code shows them: system prompt, system tools, MCP tools, memory files
(the CLAUDE.md text of the user context), messages, free space and the autocompact buffer (the
part of the window autocompaction keeps clear: output reserve plus the margin above its
threshold). Figures come from the session itself: the prompt, tool schemas and memory are
estimated locally (`context.tokens.TokenCounter`) from exactly what the next request sends; the
total is the API's last reported usage plus an estimate of what came after it, so messages are
that total minus the fixed parts (estimated alone when no response has been counted yet).

The grid is 10 × 10 cells, each a hundredth of the window; every category that is present gets
at least one cell, and each has its own glyph so the picture reads without colour.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeloop.input.commands import CommandHost, CommandOutcome
    from codeloop.session.conversation import Conversation

GRID_SIDE = 10


class Category(str, Enum):
    SYSTEM_PROMPT = "System prompt"
    SYSTEM_TOOLS = "System tools"
    MCP_TOOLS = "MCP tools"
    MEMORY = "Memory files"
    MESSAGES = "Messages"
    FREE = "Free space"
    BUFFER = "Autocompact buffer"


GLYPHS = {Category.SYSTEM_PROMPT: "■", Category.SYSTEM_TOOLS: "▣", Category.MCP_TOOLS: "▦",
          Category.MEMORY: "◆", Category.MESSAGES: "●", Category.FREE: "⛶", Category.BUFFER: "⛝"}


@dataclass(frozen=True)
class ContextUsage:
    """Tokens per category for one model's window, and the memory files and MCP servers behind them."""
    model: str
    window: int
    tokens: dict[Category, int]
    memory_files: tuple[tuple[str, int], ...] = ()   # (path, tokens)
    mcp_servers: tuple[tuple[str, int], ...] = ()    # (server, tokens of its tool schemas)
    tools: tuple[tuple[str, str, int], ...] = ()     # (tool, its MCP server or "", tokens of its schema)
    compact_at: int = 0                              # the autocompact threshold, in tokens

    @property
    def used(self) -> int:
        return sum(v for k, v in self.tokens.items() if k not in (Category.FREE, Category.BUFFER))


def measure(conv: Conversation) -> ContextUsage:
    """The session's context now, by category (see the module docstring for where figures come from)."""
    from codeloop.context.autocompact import autocompact_threshold
    from codeloop.context.tokens import TokenCounter
    from codeloop.providers.models import context_window
    from codeloop.tools.deferred import request_tools

    counter = TokenCounter()
    model = conv.model
    window = context_window(model)
    system = counter.estimate_text("\n\n".join(conv.config.system_prompt))
    builtin = 0
    servers: dict[str, int] = {}
    tools: list[tuple[str, str, int]] = []
    for tool in request_tools(conv.tool_pool(), conv.tool_context):
        cost = counter.estimate_blocks([{"type": "tool_use", "input": tool.api_schema()}])
        server = ""
        if tool.name.startswith("mcp__"):
            server = getattr(tool, "server", None) or tool.name.split("__")[1]
            servers[server] = servers.get(server, 0) + cost
        else:
            builtin += cost
        tools.append((tool.name, server, cost))
    mcp = sum(servers.values())
    claude_md = conv.config.user_context.get("claudeMd", "")
    memory = counter.estimate_text(claude_md)
    files = tuple((path, counter.estimate_text(body)) for path, body in memory_sections(claude_md))
    fixed = system + builtin + mcp + memory
    total = counter.estimate_next(conv.messages)
    has_usage = any(m.role == "assistant" and m.usage for m in conv.messages)
    messages = max(0, total - fixed) if has_usage else total
    compact_at = autocompact_threshold(model)
    buffer = max(0, window - compact_at)
    free = max(0, window - fixed - messages - buffer)
    return ContextUsage(model, window, {
        Category.SYSTEM_PROMPT: system, Category.SYSTEM_TOOLS: builtin, Category.MCP_TOOLS: mcp,
        Category.MEMORY: memory, Category.MESSAGES: messages, Category.FREE: free, Category.BUFFER: buffer},
        files, tuple(servers.items()), tuple(tools), compact_at)


def memory_sections(claude_md: str) -> list[tuple[str, str]]:
    """(path, text) of each instruction file in the user context's CLAUDE.md text."""
    import re

    marks = list(re.finditer(r"^Contents of (.+) \((?:[^()]*)\):$", claude_md, re.MULTILINE))
    return [(m.group(1), claude_md[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(claude_md)])
            for i, m in enumerate(marks)]


def cells(usage: ContextUsage, total_cells: int = GRID_SIDE * GRID_SIDE) -> list[Category]:
    """One category per cell: used categories in order, then free space, the buffer last."""
    per_cell = usage.window / total_cells
    counts: dict[Category, int] = {}
    for cat, tokens in usage.tokens.items():
        if cat is Category.FREE:
            continue
        counts[cat] = max(1, round(tokens / per_cell)) if tokens > 0 else 0
    over = sum(counts.values()) - total_cells
    while over > 0:  # a window over full: take from the largest used category, never below one cell
        biggest = max((c for c in counts if c is not Category.BUFFER), key=lambda c: counts[c])
        if counts[biggest] <= 1:
            counts[Category.BUFFER] = max(0, counts.get(Category.BUFFER, 0) - over)
            break
        counts[biggest] -= 1
        over -= 1
    counts[Category.FREE] = max(0, total_cells - sum(counts.values()))
    order = [c for c in Category if c not in (Category.FREE, Category.BUFFER)] + [Category.FREE, Category.BUFFER]
    out = [c for c in order for _ in range(counts.get(c, 0))]
    return out[:total_cells]


def short(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def render(usage: ContextUsage) -> str:
    grid = cells(usage)
    rows = [" ".join(GLYPHS[c] for c in grid[i:i + GRID_SIDE]) for i in range(0, len(grid), GRID_SIDE)]
    pct = usage.used / usage.window * 100 if usage.window else 0.0
    legend = [f"{usage.model} · {short(usage.used)}/{short(usage.window)} tokens ({pct:.0f}%)", ""]
    for cat in Category:
        tokens = usage.tokens[cat]
        if cat is Category.MCP_TOOLS and tokens == 0:
            continue
        share = tokens / usage.window * 100 if usage.window else 0.0
        legend.append(f"{GLYPHS[cat]} {cat.value}: {short(tokens)} tokens ({share:.1f}%)")
    lines = ["Context Usage"]
    for i in range(max(len(rows), len(legend))):
        left = rows[i] if i < len(rows) else " " * (GRID_SIDE * 2 - 1)
        right = legend[i] if i < len(legend) else ""
        lines.append(f"  {left}   {right}".rstrip())
    if usage.memory_files:
        lines += ["", "Memory files · /memory", *(f"  └ {p}: {short(n)} tokens" for p, n in usage.memory_files)]
    if usage.mcp_servers:
        lines += ["", "MCP tools · /mcp", *(f"  └ {name}: {short(n)} tokens" for name, n in usage.mcp_servers)]
    return "\n".join(lines)


def usage_json(usage: ContextUsage) -> str:
    """The figures as JSON (`/context json`): for scripts and the SDK's get_context_usage."""
    return json.dumps({"model": usage.model, "maxTokens": usage.window, "totalTokens": usage.used,
                       "categories": [{"name": c.value, "tokens": usage.tokens[c]} for c in Category]})


COLORS = {Category.SYSTEM_PROMPT: "#9ca3af", Category.SYSTEM_TOOLS: "#8b5cf6", Category.MCP_TOOLS: "#06b6d4",
          Category.MEMORY: "#f59e0b", Category.MESSAGES: "#a855f7", Category.FREE: "#e5e7eb",
          Category.BUFFER: "#6b7280"}


def sdk_response(usage: ContextUsage, *, agents: list[dict[str, object]] | None = None,
                 memory_types: dict[str, str] | None = None) -> dict[str, object]:
    """The SDK's ContextUsageResponse (`ClaudeSDKClient.get_context_usage()`): what /context shows.
    `memory_types`: path → User / Project / Local (context.prompt.loaded_instruction_files)."""
    grid = cells(usage)
    per_cell = usage.window / len(grid) if grid else 0
    rows = [[{"color": COLORS[c], "isFilled": c is not Category.FREE, "categoryName": c.value,
              "tokens": round(per_cell)} for c in grid[i:i + GRID_SIDE]] for i in range(0, len(grid), GRID_SIDE)]
    return {
        "categories": [{"name": c.value, "tokens": usage.tokens[c], "color": COLORS[c]} for c in Category
                       if not (c is Category.MCP_TOOLS and usage.tokens[c] == 0)],
        "totalTokens": usage.used, "maxTokens": usage.compact_at or usage.window, "rawMaxTokens": usage.window,
        "percentage": round(usage.used / usage.window * 100, 1) if usage.window else 0.0,
        "model": usage.model, "isAutoCompactEnabled": True, "autoCompactThreshold": usage.compact_at,
        "memoryFiles": [{"path": p, "type": (memory_types or {}).get(p, "Project"), "tokens": n}
                        for p, n in usage.memory_files],
        "mcpTools": [{"name": t, "serverName": srv, "tokens": n, "isLoaded": True}
                     for t, srv, n in usage.tools if srv],
        "systemTools": [{"name": t, "tokens": n} for t, srv, n in usage.tools if not srv],
        "agents": agents or [], "gridRows": rows,
    }


async def context_command(host: CommandHost, args: str) -> CommandOutcome:
    from codeloop.input.commands import CommandOutcome

    usage = measure(host.conv)
    return CommandOutcome(usage_json(usage) if args.strip() == "json" else render(usage))
