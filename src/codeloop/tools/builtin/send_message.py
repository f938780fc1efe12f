"""SendMessage: a message to a background agent of this session, or from one to the main thread.

Claude Code's name and schema (its single-session form: `to`, `summary`, `message`). The message
is queued into the recipient's conversation (`BackgroundTasks.inboxes`, which the session fills:
"main" for the main thread, and each background agent's id while it runs) and the recipient reads
it at its next turn, as a queued notification. Nothing outside this session can be reached; an
agent that has already finished cannot be (codeloop does not resume it from its transcript).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

MAX_SUMMARY = 200


class SendMessageInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    to: str = Field(max_length=300, pattern=r"^[^\n\r]*$",
                    description='Recipient: the agentId of a background agent of this session, or "main" '
                                "(from a background agent).")
    summary: str | None = Field(None, description="A 5-10 word label shown as the message's one-line preview; "
                                                  f"cut to {MAX_SUMMARY} characters.")
    message: str = Field(description="The message. Make its first line a clear sentence saying what it is about.")


class SendMessageTool(Tool):
    name: ClassVar[str] = "SendMessage"
    should_defer: ClassVar[bool] = True
    description: ClassVar[str] = (
        "Send a message to another agent of this session: to a background agent (started with the Agent tool's "
        "run_in_background) by its agentId, or, from a background agent, to \"main\", the main conversation. The "
        "recipient reads it at its next turn. Your plain text output is not visible to other agents: to tell one "
        "something while it runs, use this tool. An agent that has finished can no longer be reached; read its "
        "answer with TaskOutput instead.")
    input_model: ClassVar[type[BaseModel]] = SendMessageInput

    def is_enabled(self, ctx: ToolContext) -> bool:
        from codeloop.tools.made_on_use import available

        return available(ctx, "background")   # asking makes no registry

    async def check_permissions(self, inp: Any, ctx: ToolContext) -> PermissionDecision:
        # It only talks to agents this session started, which run under the session's own rules.
        return PermissionDecision(PermissionBehavior.ALLOW)

    async def call(self, inp: SendMessageInput, ctx: ToolContext) -> ToolResult:
        if not inp.message.strip():
            raise ToolError("message must not be empty")
        tasks = ctx.background
        if tasks is None:
            raise ToolError("This session has no agents to message.")
        to = inp.to.strip()
        sender = ctx.agent_id or "main"
        if to == sender:
            raise ToolError("You cannot send a message to yourself.")
        if to == "main" and ctx.agent_id is None:
            raise ToolError('"main" is this conversation; address a background agent by its agentId.')
        inbox = tasks.inboxes.get(to)
        if inbox is None:
            task = tasks.get(to)
            if task is not None:
                raise ToolError(f"Agent {to} is not running ({task.status.value}); nothing was delivered. "
                                "Read its answer with TaskOutput, or start a new agent.")
            raise ToolError(f"No agent named '{to}' is currently addressable. Spawn a new one or use the agent ID.")
        summary = (inp.summary or inp.message.strip().splitlines()[0])[:MAX_SUMMARY]
        inbox(f'<agent-message from="{sender}" summary="{_attr(summary)}">\n{inp.message}\n</agent-message>')
        text = f"Message sent to {to}; it reads it at its next turn."
        return ToolResult(text, data={"success": True, "message": text,
                                      "routing": {"sender": sender, "target": to, "summary": summary}})


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
