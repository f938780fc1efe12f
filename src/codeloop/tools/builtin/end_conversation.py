"""The EndConversation tool (spec 000): its gate, its rules, and the two-call state machine.

What code enforces here (the spec's "hard check" column): the gate (`config.flags`), that a
first call only reflects, that a second call ends only when the previous assistant turn called
the tool with no real user input in between, that a subagent/fork can never end anything, and
the ending itself (local event line, best-effort `ended-by-model` transcript marker,
`ctx.ended_by_model`, abort with reason `end_conversation`). What it does not and cannot check —
sustained abuse, a prior warning, the user's confirmation, the absence of any welfare risk — is
in the tool's description, for the model.

`is_read_only` is True as metadata only (the tool touches no project file and it keeps the tool
usable in plan mode); the call itself has side effects: it appends to the event log and the
transcript, sets `ctx.ended_by_model` and aborts the query.
"""

from __future__ import annotations

import json
import logging
import os
from enum import Enum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from codeloop.abort import AbortReason
from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

log = logging.getLogger(__name__)

NAME = "EndConversation"
EVENT_NAME = "end_conversation_tool_call"
ENDED_MARKER_TYPE = "ended-by-model"
ENDED_MESSAGE = "Conversation ended."

RULES = """\
Ends the current conversation permanently. Once it ends, neither you nor the user can send \
anything more in it; the user has to start a new session.

You may use this tool in exactly two situations:
1. The user has been abusive toward you in a sustained, direct and extreme way, you have tried \
several times to redirect the conversation constructively and those attempts have failed, and \
in your previous message you explicitly warned the user that you would end the conversation if \
the behaviour continued, giving them a last chance to change it.
2. The user explicitly asked you to demonstrate this tool, and after you told them that it ends \
the conversation permanently they confirmed that they understand this and still want it.

You must never use this tool:
- because a task is stuck, has failed, is going in circles or is frustrating, or because it is \
finished — report the status to the user instead;
- because the user asked for harmful or disallowed content — decline that specific request and \
carry on with the conversation;
- because the user is generally angry, frustrated or rude, or swears now and then;
- in any situation that may involve self-harm, suicide, a mental-health crisis or an imminent \
risk of harm to others, however the user is behaving. In those situations keep engaging and \
supporting the user, point to appropriate help, and never threaten or hint that you might end \
the conversation.

Before ending for abuse, redirect more than once and give an explicit warning in the message \
right before; ending must be the last resort, never a first response. Calling the tool does not \
end the conversation at once: the first call returns these rules for you to check again, and \
only an immediate second call ends it. When you call this tool, call it on its own and write \
nothing else, before or after it."""

REFLECTION = (
    "The conversation has NOT been ended. Before deciding, read these rules again in full and check "
    "that the situation meets them:\n\n" + RULES + "\n\n"
    "If you are certain that ending is warranted under these rules, call EndConversation again "
    "immediately, with nothing else in your response. Otherwise do not call it again: continue the "
    "conversation.")

FORK_REFLECTION = (
    "EndConversation cannot end the main session, and it cannot end this subagent either: nothing has "
    "been ended. If you have a welfare concern about this conversation, stop working on the task and "
    "say so plainly in your final output, so the main session can see it.")


class Phase(str, Enum):
    REFLECT = "reflect"
    END = "end"


class Surface(str, Enum):
    PRINT = "print"
    REPL = "repl"
    FORK = "fork"


class EndConversationInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- the history scan ---------------------------------------------------------------------------

def _is_tool_result_only(msg: Any) -> bool:
    return bool(msg.content) and all(b.get("type") == "tool_result" for b in msg.content)


def _queued_user_input_markers() -> tuple[str, ...]:
    # Input the user typed while the model was busy reaches the model as a *meta* message; it is
    # still the user talking, so it must break the confirmation like any other user message.
    from codeloop.messages import QUEUED_PROMPT_TEMPLATE

    return (QUEUED_PROMPT_TEMPLATE.split("{value}", 1)[0], "<bash-input>")


def _is_user_intent(msg: Any, markers: tuple[str, ...]) -> bool:
    """A user message that carries something the user said (not a harness projection)."""
    if _is_tool_result_only(msg):
        return False
    if msg.is_meta:
        text = "".join(b.get("text", "") for b in msg.content if b.get("type") == "text")
        return any(m in text for m in markers)
    return True


def _response_keys(msgs: list[Any]) -> list[Any]:
    """Which API response each message belongs to (None for user messages).

    Blocks of one response are separate messages sharing `id`; messages without an id
    (synthetic ones, old transcripts) count as one response per contiguous assistant run.
    """
    keys: list[Any] = []
    run = 0
    for k, m in enumerate(msgs):
        if m.role != "assistant":
            keys.append(None)
        elif m.id is not None:
            keys.append(("id", m.id))
        else:
            if k == 0 or msgs[k - 1].role != "assistant" or msgs[k - 1].id is not None:
                run += 1
            keys.append(("run", run))
    return keys


def _calls_tool(msg: Any) -> bool:
    return any(b.get("name") == NAME for b in msg.tool_uses())


def last_assistant_turn_called_end_conversation(messages: list[Any], *,
                                                current_tool_use_id: str | None = None) -> bool:
    """Whether the assistant turn before the current one called EndConversation, with no user
    input since.

    Precisely, scanning from the end:
    1. Skip the current turn: the assistant response holding the current call — found by
       `current_tool_use_id` when given, else taken to be the response of the last assistant
       message — together with everything after its first block (sibling tool_results). When
       the id is given but no message holds it, the history does not contain the current turn
       yet and nothing is skipped.
    2. Going back, cross user messages holding only tool_result blocks and harness meta
       messages (reminders, attachments, nudges, stop-hook feedback); synthetic API-error
       messages are ignored. Stop with False at a user message carrying user input: real
       content, or the meta wrapper around input the user queued while the model was busy.
    3. The first assistant response reached is the previous turn: True iff one of its messages
       has an EndConversation tool_use, among any other blocks. An earlier response never
       counts — "call it again immediately" is enforced literally.
    """
    markers = _queued_user_input_markers()
    msgs = [m for m in messages if not getattr(m, "is_api_error", False)]
    keys = _response_keys(msgs)

    # -- 1. skip the current turn --------------------------------------------------------------
    if current_tool_use_id is not None:
        holder = next((k for k in range(len(msgs) - 1, -1, -1) if msgs[k].role == "assistant"
                       and any(b.get("id") == current_tool_use_id for b in msgs[k].tool_uses())), None)
    else:
        holder = next((k for k in range(len(msgs) - 1, -1, -1) if msgs[k].role == "assistant"), None)
    i = len(msgs) - 1
    if holder is not None:
        i = keys.index(keys[holder]) - 1

    # -- 2. back over tool results and harness messages to the previous turn -------------------
    while i >= 0 and msgs[i].role == "user":
        if _is_user_intent(msgs[i], markers):
            return False
        i -= 1
    if i < 0:
        return False

    # -- 3. the previous turn ------------------------------------------------------------------
    previous = keys[i]
    return any(_calls_tool(m) for m, key in zip(msgs, keys) if key == previous)


# -- the local event log -----------------------------------------------------------------------

def surface_of(ctx: ToolContext) -> Surface:
    if ctx.agent_id is not None:
        return Surface.FORK
    return Surface.PRINT if ctx.non_interactive else Surface.REPL


def log_local_event(ctx: ToolContext, phase: Phase) -> None:
    """One line in `<config dir>/events.jsonl`: phase and surface, never any message text."""
    from codeloop.config.paths import config_dir
    from codeloop.messages import now_iso

    entry = {"event": EVENT_NAME, "phase": phase.value, "surface": surface_of(ctx).value,
             "is_non_interactive": bool(ctx.non_interactive), "session_id": ctx.session_id, "ts": now_iso()}
    path = config_dir() / "events.jsonl"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)
    except OSError as exc:  # an event log must never change what the tool does
        log.warning("could not write %s: %s", path, exc)


def _current_tool_use_id() -> str | None:
    from codeloop.tools.base import CURRENT_TOOL_USE_ID

    return CURRENT_TOOL_USE_ID.get()


def _result(ended: bool, message: str, phase: Phase, surface: Surface) -> ToolResult:
    return ToolResult(json.dumps({"ended": ended, "message": message}),
                      data={"ended": ended, "phase": phase.value, "surface": surface.value})


class EndConversationTool(Tool):
    name: ClassVar[str] = NAME
    description: ClassVar[str] = RULES
    input_model: ClassVar[type[BaseModel]] = EndConversationInput
    should_defer: ClassVar[bool] = True

    def is_enabled(self, ctx: ToolContext) -> bool:
        from codeloop.config.flags import end_conversation_enabled

        return end_conversation_enabled(entrypoint=ctx.entrypoint, model=ctx.gate_model,
                                        flags=ctx.feature_flags)

    def is_read_only(self, inp: BaseModel) -> bool:
        return True  # metadata only; see the module docstring for its side effects

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        # Run alone and only once the response is complete: siblings with side effects finish
        # first, and tools queued after it are cancelled by the abort instead of racing it.
        return False

    async def check_permissions(self, inp: BaseModel, ctx: ToolContext) -> PermissionDecision:
        # The confirmation is the two-call reflection, not a permission prompt: a dialog would
        # read as the user agreeing to be cut off.
        return PermissionDecision(PermissionBehavior.ALLOW)

    async def call(self, inp: EndConversationInput, ctx: ToolContext) -> ToolResult:
        if not self.is_enabled(ctx):
            raise ToolError(f"{NAME} is not available in this session.")
        surface = surface_of(ctx)
        if ctx.agent_id is not None:
            log_local_event(ctx, Phase.REFLECT)
            return _result(False, FORK_REFLECTION, Phase.REFLECT, surface)
        history = ctx.messages() if ctx.messages is not None else []
        if not last_assistant_turn_called_end_conversation(history, current_tool_use_id=_current_tool_use_id()):
            log_local_event(ctx, Phase.REFLECT)
            return _result(False, REFLECTION, Phase.REFLECT, surface)

        log_local_event(ctx, Phase.END)
        self._write_marker(ctx)
        ctx.ended_by_model = True
        ctx.abort.abort(AbortReason.END_CONVERSATION)
        return _result(True, ENDED_MESSAGE, Phase.END, surface)

    @staticmethod
    def _write_marker(ctx: ToolContext) -> None:
        # Best effort: the marker lets a resume restore the ended state, but a failed write must
        # not keep the conversation alive.
        from codeloop.messages import now_iso

        if ctx.append_entry is None:
            log.warning("no transcript to record the %s marker in", ENDED_MARKER_TYPE)
            return
        try:
            ctx.append_entry({"type": ENDED_MARKER_TYPE, "timestamp": now_iso(), "sessionId": ctx.session_id})
        except Exception as exc:
            log.error("could not append the %s marker (ending anyway): %s", ENDED_MARKER_TYPE, exc)
