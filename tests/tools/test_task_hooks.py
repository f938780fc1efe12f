"""The task list's lifecycle hooks (issues 26, items 5 and 6 together): TaskCreated fires when the
model creates a task and a hook's exit 2 means the task never was; TaskCompleted fires when one is
marked completed and exit 2 holds it open."""

from __future__ import annotations

import json

from fakeapi import ScriptedAPI, sse, text, tool_use
from hookrec import calls, conv_for, recorder, submit


LOAD = sse(tool_use("ToolSearch", {"query": "select:TaskCreate,TaskGet,TaskList,TaskUpdate"}, id="s"))


def results(api: ScriptedAPI) -> dict[str, dict]:
    return {b["tool_use_id"]: b for r in api.requests for m in r.messages if m["role"] == "user"
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}


async def test_task_created_fires_and_a_refusal_undoes_the_task(tmp_path):
    hooks = {"TaskCreated": [recorder(tmp_path, "created", code=2)]}
    api = ScriptedAPI(LOAD, sse(tool_use("TaskCreate", {"subject": "Ship it", "description": "release"}, id="c")),
                      sse(tool_use("TaskList", {}, id="l")), sse(text("done")))
    conv = conv_for(api, tmp_path, hooks)
    await submit(conv)
    [seen] = calls(tmp_path, "created")
    assert seen["hook_event_name"] == "TaskCreated" and seen["task_subject"] == "Ship it"
    got = results(api)
    assert got["c"].get("is_error") and "refused" in json.dumps(got["c"])
    assert "Ship it" not in json.dumps(got["l"])


async def test_task_completed_fires_and_a_refusal_holds_the_task_open(tmp_path):
    hooks = {"TaskCompleted": [recorder(tmp_path, "completed", code=2)], "TaskCreated": [recorder(tmp_path, "ok")]}
    api = ScriptedAPI(LOAD, sse(tool_use("TaskCreate", {"subject": "Fix bug", "description": "the parser"}, id="c")),
                      sse(tool_use("TaskUpdate", {"taskId": "1", "status": "completed"}, id="u")),
                      sse(tool_use("TaskGet", {"taskId": "1"}, id="g")), sse(text("done")))
    conv = conv_for(api, tmp_path, hooks)
    await submit(conv)
    [seen] = calls(tmp_path, "completed")
    assert seen["hook_event_name"] == "TaskCompleted" and seen["task_id"] == "1"
    got = results(api)
    assert got["u"].get("is_error") and "not marked completed" in json.dumps(got["u"])
    assert "pending" in json.dumps(got["g"])
