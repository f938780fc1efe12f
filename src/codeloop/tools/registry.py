"""Assembling the tool pool: the built-in tools, `--tools` / `--disallowedTools` selection,
lookup by name, and turning a model's raw tool input into a validated model (or a ToolError
the model can act on).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from codeloop.tools.base import Tool, ToolError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

# name, module, class — in the order the model sees them
BUILTINS: tuple[tuple[str, str, str], ...] = (
    ("Bash", "codeloop.tools.builtin.bash", "BashTool"),
    ("Glob", "codeloop.tools.builtin.glob", "GlobTool"),
    ("Grep", "codeloop.tools.builtin.grep", "GrepTool"),
    ("ExitPlanMode", "codeloop.tools.builtin.plan_mode", "ExitPlanModeTool"),
    ("Read", "codeloop.tools.builtin.read", "ReadTool"),
    ("Edit", "codeloop.tools.builtin.edit", "EditTool"),
    ("Write", "codeloop.tools.builtin.write", "WriteTool"),
    ("NotebookEdit", "codeloop.tools.builtin.notebook_edit", "NotebookEditTool"),
    ("WebFetch", "codeloop.tools.builtin.web_fetch", "WebFetchTool"),
    ("TodoWrite", "codeloop.tools.builtin.todo", "TodoWriteTool"),
    ("WebSearch", "codeloop.tools.builtin.web_search", "WebSearchTool"),
    ("AskUserQuestion", "codeloop.tools.builtin.ask_user", "AskUserQuestionTool"),
    ("Skill", "codeloop.tools.builtin.skill", "SkillTool"),
    ("TaskOutput", "codeloop.tools.builtin.task_output", "TaskOutputTool"),
    ("TaskStop", "codeloop.tools.builtin.task_output", "TaskStopTool"),
    ("ToolSearch", "codeloop.tools.builtin.tool_search", "ToolSearchTool"),
    ("TaskCreate", "codeloop.tools.builtin.task_list", "TaskCreateTool"),
    ("TaskGet", "codeloop.tools.builtin.task_list", "TaskGetTool"),
    ("TaskList", "codeloop.tools.builtin.task_list", "TaskListTool"),
    ("TaskUpdate", "codeloop.tools.builtin.task_list", "TaskUpdateTool"),
    ("CronCreate", "codeloop.tools.builtin.schedule", "CronCreateTool"),
    ("CronDelete", "codeloop.tools.builtin.schedule", "CronDeleteTool"),
    ("CronList", "codeloop.tools.builtin.schedule", "CronListTool"),
    ("ScheduleWakeup", "codeloop.tools.builtin.schedule", "ScheduleWakeupTool"),
    ("EnterWorktree", "codeloop.tools.builtin.worktree", "EnterWorktreeTool"),
    ("ExitWorktree", "codeloop.tools.builtin.worktree", "ExitWorktreeTool"),
    ("SendMessage", "codeloop.tools.builtin.send_message", "SendMessageTool"),
    ("EndConversation", "codeloop.tools.builtin.end_conversation", "EndConversationTool"),
)
# Deferred as Claude Code defers them (a default request lists them by name for ToolSearch).
DEFERRED = frozenset({"EndConversation", "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "CronCreate",
                      "CronDelete", "CronList", "EnterWorktree", "ExitWorktree", "SendMessage"})
# Claude Code's older tool names, still accepted from models, old transcripts, rules and flags.
LEGACY_NAMES = {"Task": "Agent", "BashOutput": "TaskOutput", "BashOutputTool": "TaskOutput",
                "AgentOutputTool": "TaskOutput", "AgentOutput": "TaskOutput", "KillShell": "TaskStop",
                "KillBash": "TaskStop"}


def canonical_name(name: str) -> str:
    """The current name of a tool called `name` (itself unless it is a legacy name)."""
    return LEGACY_NAMES.get(name, name)
UNBOUNDED_RESULTS = frozenset({"Read"})  # kept in step with the tools' max_result_chars (tested)
INTERRUPTIBLE = frozenset({"Glob", "Grep", "Read", "ToolSearch"})  # … and with their `interruptible` (tested)


def _end_conversation_gate(ctx: Any) -> bool:
    from codeloop.config.flags import end_conversation_enabled

    return end_conversation_enabled(entrypoint=ctx.entrypoint, model=ctx.gate_model,
                                    flags=ctx.feature_flags)


def _task_gate(ctx: Any) -> bool:
    return ctx.agent_id is None and ctx.spawn_subagent is not None


def web_search_unavailable(ctx: Any) -> str | None:
    """Why WebSearch is not offered in this session (one line for /status), or None when it is."""
    provider = ctx.side_provider
    if provider is None:
        return "WebSearch is off: this session has no model provider for side calls"
    name = getattr(provider, "name", "provider")
    if name != "anthropic":
        return f"WebSearch is off: it uses the Anthropic API's server-side web search, which the {name} provider lacks"
    return None


def _web_search_gate(ctx: Any) -> bool:
    return web_search_unavailable(ctx) is None


def _main_agent_gate(ctx: Any) -> bool:
    # Questions and plan approval go to the user; a subagent has no user to ask.
    return ctx.agent_id is None


def _skill_gate(ctx: Any) -> bool:
    from codeloop.tools.skills import session_skills

    return ctx.agent_id is None and bool(session_skills(ctx))


def _schedule_gate(ctx: Any) -> bool:
    from codeloop.tools.schedule_gate import scheduling_enabled

    return scheduling_enabled(ctx)


def _send_message_gate(ctx: Any) -> bool:
    from codeloop.tools.made_on_use import available

    return available(ctx, "background")   # a registry made or waiting to be: asking makes none


_GATES = {"SendMessage": _send_message_gate, "EnterWorktree": _main_agent_gate, "ExitWorktree": _main_agent_gate,
          "CronCreate": _schedule_gate, "CronDelete": _schedule_gate, "CronList": _schedule_gate,
          "ScheduleWakeup": _schedule_gate,
          "EndConversation": _end_conversation_gate, "Agent": _task_gate, "WebSearch": _web_search_gate,
          "AskUserQuestion": _main_agent_gate, "ExitPlanMode": _main_agent_gate, "Skill": _skill_gate}

_JSON_TYPES = {
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "str": "string",
    "string": "string",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "model": "object",
}


def builtin_tools(*, lazy: bool = False, agent_definitions: dict[str, Any] | None = None) -> list[Tool]:
    """Fresh instances of the core tools, in the order the model sees them.

    `lazy=True` (the CLI) returns stand-ins that import a tool only when it is first used and
    serve API schemas from the on-disk cache, so the first request leaves sooner.
    """
    import importlib

    if lazy:
        from codeloop.config.paths import config_dir
        from codeloop.tools.lazy import LazyTool, SchemaCache, cache_key, file_key

        here = Path(__file__).parent / "builtin"
        files = [here / (module.rsplit(".", 1)[1] + ".py") for _, module, _ in BUILTINS]
        # an input model kept apart from its tool (`bash_input.py`) shapes the cached schema too
        try:
            present = set(os.listdir(here))   # one listing rather than a stat per tool
        except OSError:
            present = set()
        files += [here / name for f in files if (name := f.stem + "_input.py") in present]
        key = cache_key(files)
        cache = SchemaCache(config_dir() / "cache" / "tool-schemas.json", key)
        tools = [LazyTool(name, module, cls, cache, gate=_GATES.get(name), should_defer=name in DEFERRED,
                          max_result_chars=float("inf") if name in UNBOUNDED_RESULTS else 100_000,
                          interruptible=name in INTERRUPTIBLE)
                 for name, module, cls in BUILTINS]
        if agent_definitions is not None:
            # Agent's description lists the agent types, so its cached schema is keyed by them too
            # (the listing itself: exact, and no hashlib on the way to the first request).
            from codeloop.tools.agents import agent_listing
            listing = agent_listing(agent_definitions)
            task_cache = SchemaCache(cache.path.with_name("task-schema.json"),
                                     key + "|" + file_key(here / "task.py") + "|" + listing)
            tools.append(LazyTool("Agent", "codeloop.tools.builtin.task", "TaskTool", task_cache,
                                  gate=_task_gate, kwargs={"definitions": agent_definitions}))
        # A LazyTool is no Tool subclass (that would import what it defers) but serves the same surface.
        return tools  # type: ignore[return-value]
    real: list[Tool] = [getattr(importlib.import_module(module), cls)() for _, module, cls in BUILTINS]
    if agent_definitions is not None:
        from codeloop.tools.builtin.task import TaskTool
        real.append(TaskTool(agent_definitions))
    return real


def select_tools(
    tools: Iterable[Tool],
    *,
    allowed: list[str] | None = None,
    disallowed: Iterable[str] = (),
) -> list[Tool]:
    """Filter by exact tool name, keeping order.

    `allowed` is the `--tools` list (None = every tool, [] = none). In `disallowed` only bare
    names remove a tool; entries such as `Bash(git:*)` are permission rules, applied elsewhere.
    """
    allowed_set = None if allowed is None else {canonical_name(a) for a in allowed}
    removed = {canonical_name(d) for d in disallowed if "(" not in d}
    return [
        t
        for t in tools
        if (allowed_set is None or t.name in allowed_set) and t.name not in removed
    ]


def is_interruptible(tools: Iterable[Tool], name: str) -> bool:
    """Whether the tool called `name` declares itself interruptible (unknown tools do not)."""
    tool = find_tool(tools, name)
    return bool(getattr(tool, "interruptible", False)) if tool is not None else False


def find_tool(tools: Iterable[Tool], name: str) -> Tool | None:
    """By name; a legacy name (`Task`, `BashOutput`, `KillShell`…) finds the tool's current one."""
    tools = list(tools)
    found = next((t for t in tools if t.name == name), None)
    if found is None and name in LEGACY_NAMES:
        found = next((t for t in tools if t.name == LEGACY_NAMES[name]), None)
    return found


def only_reads(tools: Iterable[Tool], blocks: Iterable[dict[str, Any]]) -> bool:
    """Whether every one of these tool_use blocks provably changes nothing: a known tool, an input
    it accepts, and the tool's own `is_read_only` says so (Bash's from the shell scanner). Anything
    unknown or failing counts as a change."""
    tools = list(tools)
    for block in blocks:
        tool = find_tool(tools, str(block.get("name", "")))
        if tool is None:
            return False
        try:
            if not tool.is_read_only(parse_tool_input(tool, block.get("input") or {})):
                return False
        except Exception:  # noqa: BLE001 — invalid input or a buggy predicate: treated as a change
            return False
    return True


def parse_tool_input(tool: Tool, raw: Any) -> BaseModel:
    """Validate the model's input for `tool`; errors name every failing parameter.

    A lazy built-in whose input is plain answers without pydantic (`tools.plain_input`)."""
    plain_input = getattr(type(tool), "plain_input", None)
    if plain_input is not None and (plain := plain_input(tool, raw)) is not None:
        return plain
    from pydantic import ValidationError

    if not isinstance(raw, dict):
        raise ToolError(
            f"InputValidationError: {tool.name} failed due to the following issue:\n"
            f"The input is expected as `object` but provided as `{_json_type_of(raw)}`"
        )
    # Many models send `null` for optional parameters they mean to omit.
    fields = tool.input_model.model_fields
    optional = {n for n, f in fields.items() if not f.is_required()}
    optional |= {f.alias for n, f in fields.items() if f.alias and n in optional}
    raw = {k: v for k, v in raw.items() if not (v is None and k in optional)}
    try:
        return tool.input_model.model_validate(raw)
    except ValidationError as e:
        issues = _describe_errors(tool.input_model, e)
    noun = "issue" if len(issues) == 1 else "issues"
    raise ToolError(
        f"InputValidationError: {tool.name} failed due to the following {noun}:\n" + "\n".join(issues)
    )


def _json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _field_names(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[str]:
    from pydantic import BaseModel
    """Every field name and alias in `model` and the models nested in it."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    names: set[str] = set()
    for name, info in model.model_fields.items():
        names.add(name)
        if info.alias:
            names.add(info.alias)
        for arg in _type_args(info.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                names |= _field_names(arg, seen)
    return names


def _type_args(annotation: Any) -> list[Any]:
    out, stack = [], [annotation]
    while stack:
        a = stack.pop()
        out.append(a)
        stack.extend(get_args(a))
    return out


def _param_name(loc: tuple[Any, ...], names: set[str]) -> str:
    # pydantic adds union-branch tags ("int", "none", …) to locations; keep only real fields.
    name = ""
    for part in loc:
        if isinstance(part, int):
            name += f"[{part}]"
        elif part in names:
            name += f".{part}" if name else part
    return name or ".".join(map(str, loc))


def _describe_errors(model: type[BaseModel], err: ValidationError) -> list[str]:
    names = _field_names(model)
    issues: list[str] = []
    for e in err.errors(include_url=False):
        kind = e["type"]
        if kind == "none_required":
            continue  # the None branch of an optional field; the real branch explains the problem
        loc = tuple(e["loc"])
        name = _param_name(loc, names)
        if kind == "missing":
            msg = f"The required parameter `{name}` is missing"
        elif kind == "extra_forbidden":
            parent = _param_name(loc[:-1], names) if len(loc) > 1 else ""
            name = f"{parent}.{loc[-1]}" if parent else str(loc[-1])
            msg = f"An unexpected parameter `{name}` was provided"
        elif kind.endswith(("_type", "_parsing")) or kind == "model_attributes_type":
            expected = _JSON_TYPES.get(kind.split("_", 1)[0], kind.split("_", 1)[0])
            msg = (
                f"The parameter `{name}` type is expected as `{expected}` but provided as "
                f"`{_json_type_of(e.get('input'))}`"
            )
        else:
            msg = f"The parameter `{name}` is invalid: {e['msg']}"
        if msg not in issues:
            issues.append(msg)
    return issues or [str(err)]
