"""After a model fallback the tools see the model that answers; gates keep judging the primary."""

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from fakeapi import ScriptedAPI, error, sse, text, tool_use
from loophelpers import make_params, run, terminal
from codeloop.loop.state import TerminalReason
from codeloop.tools.base import Tool, ToolContext, ToolResult
from codeloop.tools.builtin.end_conversation import EndConversationTool
from codeloop.tools.deferred import enabled_tools
from codeloop.tools.registry import builtin_tools

PRIMARY, FALLBACK = "claude-opus-4-8", "claude-opus-4-7"   # EndConversation's floor sits between them


class SeenInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelProbe(Tool):
    name: ClassVar[str] = "ModelProbe"
    description: ClassVar[str] = "Reports the model it runs under."
    input_model: ClassVar[type[BaseModel]] = SeenInput
    seen: ClassVar[list[tuple[str, bool]]] = []

    def is_read_only(self, inp):
        return True

    async def call(self, inp, ctx):
        ModelProbe.seen.append((ctx.model, EndConversationTool().is_enabled(ctx)))
        return ToolResult("ok")


async def test_ctx_model_is_the_fallback_but_end_conversation_judges_the_primary(tmp_path):
    ModelProbe.seen = []
    overloaded = error(529, "overloaded_error", "Overloaded")
    api = ScriptedAPI(overloaded, overloaded, overloaded, sse(tool_use("ModelProbe", {}, id="p1")), sse(text("done")))
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, model=PRIMARY, main_model=PRIMARY, entrypoint="cli")
    ctx.feature_flags = {"end_conversation": True}
    events = await run(make_params(api, tmp_path, tools=[ModelProbe()], model=PRIMARY, tool_context=ctx,
                                   fallback_models=[FALLBACK]))
    assert terminal(events).reason is TerminalReason.COMPLETED
    assert [r.body["model"] for r in api.requests] == [PRIMARY] * 3 + [FALLBACK] * 2
    assert ModelProbe.seen == [(FALLBACK, True)]
    assert ctx.model == FALLBACK and ctx.gate_model == PRIMARY
    # the registry's gate agrees with the tool's own
    assert "EndConversation" in {t.name for t in enabled_tools(builtin_tools(lazy=True, agent_definitions={}), ctx)}
