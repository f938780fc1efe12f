"""The Agent tool (formerly Task): launches a subagent and returns its final answer.

`Agent` is Claude Code's current name; `Task` (old sessions, `Task(...)` rules, `--allowedTools
Task`) resolves to it through the registry's aliases (`LEGACY_NAME`). With `run_in_background`
the subagent runs as a background task (`bash_background.BackgroundTasks.track_agent`): the call
returns its id at once, its end is announced like a background shell's, and TaskOutput reads it.

The tool owns the model-facing side: its description (listing the agent types), input schema,
gates (never inside a subagent, never in an ended session, only where the session wired a
runtime) and the result it reports. Running the nested query is the session's job: it hands
the tool a `spawn_subagent` capability on the ToolContext (`session.subagent.SubagentRuntime
.spawn`), so this module never imports the loop, the prompt builder or the transcript.

The Task's own tool_use id comes from `CURRENT_TOOL_USE_ID` (tools.base), which the tool runner
sets around each call (a contextvar, because tools run in parallel tasks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import (CURRENT_TOOL_USE_ID, PermissionBehavior, PermissionDecision, Tool, ToolContext,
                                 ToolError, ToolResult)

NAME = "Agent"
LEGACY_NAME = "Task"
ENDED_REFUSAL = "The session was ended by the model; start a new session (or /clear) to continue."
__all__ = ["CURRENT_TOOL_USE_ID", "ENDED_REFUSAL", "LEGACY_NAME", "NAME", "SubagentOutcome", "TaskInput", "TaskTool"]


DESCRIPTION = """\
Launch a subagent to handle a complex, multi-step task autonomously. The subagent starts with a \
fresh context holding only your prompt, works with its own tools, and returns one final message \
as this tool's result; the user does not see that message, so relay what matters.

When to use it: open-ended searches that may take several rounds, investigations whose details \
would flood your context, or independent pieces of work that can run in parallel (send several \
Agent calls in one response, or set `run_in_background` and keep working: you are told when a \
background agent finishes, and TaskOutput reads its answer). Do not use it to read a known file \
or look up one symbol — use Read, Grep or Glob directly.

How to use it:
- Write a complete, self-contained prompt: the goal, what you already know, and exactly what to \
report back. The subagent cannot ask you questions.
- Say whether it should change code or only research.
- Pick `subagent_type` from the available agent types."""


class TaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(description="A short (3-5 word) description of the task")
    prompt: str = Field(description="The task for the agent to perform")
    subagent_type: str = Field("general-purpose", description="The type of specialized agent to use for this task")
    # Claude Code's Agent tool also takes these; a model given here overrides the agent's own.
    model: str | None = Field(None, description="Optional model for this agent (sonnet, opus, haiku or an id)")
    run_in_background: bool | None = Field(None, description="Set to true to run this agent in the background. "
                                                             "You will be notified when it completes.")


class TaskTool(Tool):
    name: ClassVar[str] = NAME
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = TaskInput

    def __init__(self, definitions: dict[str, Any] | None = None) -> None:
        # Definitions only make the description list the agent types; calls use the runtime's.
        self._definitions = definitions

    def api_schema(self) -> dict[str, Any]:
        from codeloop.tools.agents import BUILTIN_AGENTS, agent_listing

        definitions = self._definitions or {d.name: d for d in BUILTIN_AGENTS}
        description = f"{DESCRIPTION}\n\nAvailable agent types:\n{agent_listing(definitions)}"
        return {"name": self.name, "description": description, "input_schema": self.input_schema()}

    def is_enabled(self, ctx: ToolContext) -> bool:
        # Never inside a subagent (no recursion), and only where the session wired a runtime in.
        return ctx.agent_id is None and ctx.spawn_subagent is not None

    def is_read_only(self, inp: BaseModel) -> bool:
        return False

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True  # parallel subagents are the point; each of their tools is checked on its own

    async def check_permissions(self, inp: BaseModel, ctx: ToolContext) -> PermissionDecision:
        # Launching asks nothing: every tool the subagent runs goes through can_use_tool.
        return PermissionDecision(PermissionBehavior.ALLOW)

    async def call(self, inp: TaskInput, ctx: ToolContext) -> ToolResult:
        if ctx.ended_by_model:
            raise ToolError(ENDED_REFUSAL)
        if ctx.agent_id is not None:
            raise ToolError("Subagents cannot launch subagents.")
        if ctx.spawn_subagent is None:
            raise ToolError("Subagents are not available in this session.")
        if inp.run_in_background:
            return self._background(inp, ctx)
        outcome = await ctx.spawn_subagent(inp.subagent_type, inp.prompt, ctx,
                                           parent_tool_use_id=CURRENT_TOOL_USE_ID.get(),
                                           model=inp.model, description=inp.description)
        data = {"agent_id": outcome.agent_id, "total_tokens": outcome.total_tokens,
                "num_turns": outcome.num_turns, "terminal_reason": outcome.terminal_reason}
        if not outcome.text:
            detail = f": {outcome.error}" if outcome.error else ""
            return ToolResult(f"The subagent ended without a final answer (terminal reason: "
                              f"{outcome.terminal_reason}{detail}).", is_error=True, data=data)
        return ToolResult(outcome.text, data=data)

    def _background(self, inp: TaskInput, ctx: ToolContext) -> ToolResult:
        import uuid

        from codeloop.abort import AbortController
        from codeloop.tools.builtin.bash_background import registry

        agent_id, abort = str(uuid.uuid4()), AbortController()  # its own abort: Esc on this turn spares it
        spawn, tool_use_id = ctx.spawn_subagent, CURRENT_TOOL_USE_ID.get()
        assert spawn is not None

        async def run() -> Any:
            return await spawn(inp.subagent_type, inp.prompt, ctx, parent_tool_use_id=tool_use_id,
                               model=inp.model, description=inp.description, agent_id=agent_id, abort=abort)
        task = registry(ctx).track_agent(agent_id, inp.description, run, stop=abort.abort, tool_use_id=tool_use_id)
        return ToolResult(f"Async agent launched successfully.\nagentId: {agent_id}\nThe agent is working in the "
                          f"background; you will be notified when it completes. Its answer will be in "
                          f"{task.output_file} (or call TaskOutput with this id).",
                          data={"status": "async_launched", "agentId": agent_id, "description": inp.description,
                                "prompt": inp.prompt, "outputFile": str(task.output_file)})


@dataclass
class SubagentOutcome:
    """What `ToolContext.spawn_subagent` returns: the final answer and how the run ended."""
    agent_id: str
    text: str
    terminal_reason: str
    num_turns: int
    total_tokens: int
    error: str | None = None
