"""SendMessage through the real loop with the fake model (the CLI test drives a live background agent)."""

from __future__ import annotations

from fakeapi import ScriptedAPI, sse, text, tool_use
from loophelpers import make_params, run

from codeloop.tools.base import ToolContext
from codeloop.tools.registry import builtin_tools, find_tool


def results(api, i):
    out = []
    for b in api.requests[i].messages[-1]["content"]:
        if b.get("type") == "tool_result":
            c = b["content"]
            out.append((b.get("is_error", False), c if isinstance(c, str) else "".join(x.get("text", "") for x in c)))
    return out


async def test_send_message_from_a_background_agent_to_main(tmp_path):
    from codeloop.tools.builtin.bash_background import BackgroundTasks

    got: list[str] = []
    tasks = BackgroundTasks(tmp_path)
    tasks.inboxes["main"] = got.append
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, background=tasks, agent_id="agent-1")
    api = ScriptedAPI(
        sse(tool_use("SendMessage", {"to": "main", "summary": "progress", "message": "half done\nmore later"}, id="s1"),
            tool_use("SendMessage", {"to": "agent-1", "message": "me?"}, id="s2"),
            tool_use("SendMessage", {"to": "main", "message": "  "}, id="s3"), stop="tool_use"),
        sse(text("ok")))
    await run(make_params(api, tmp_path, tool_context=ctx))
    (e1, sent), (e2, self_), (e3, empty) = results(api, 1)
    assert not e1 and sent == "Message sent to main; it reads it at its next turn."
    assert got == ['<agent-message from="agent-1" summary="progress">\nhalf done\nmore later\n</agent-message>']
    assert e2 and "yourself" in self_
    assert e3 and "must not be empty" in empty
    assert find_tool(builtin_tools(), "SendMessage").is_enabled(ToolContext(cwd=tmp_path, project_dir=tmp_path)) \
        is False   # no background registry: nobody to message
