"""Issue 27 below the terminal: a task notification drained while idle runs as a turn of its own
(a meta prompt: no UserPromptSubmit, no rewind point), every notification of a batch is shown, and
a session that ends (/clear, /rewind, exit) never announces its killed tasks to its successor."""

from __future__ import annotations

import asyncio

from fakeapi import ScriptedAPI, sse, text
from inputhelpers import make_dispatcher

from codeloop.events import UserEvent
from codeloop.input.rewind import _prompts
from codeloop.loop.queue import QueuedCommand, QueueMode


def note(n: int) -> QueuedCommand:
    return QueuedCommand(f"<task-notification>\n<task-id>b{n}</task-id>\n<summary>Background command \"job {n}\" "
                         f"completed (exit code 0)</summary>\n</task-notification>", mode=QueueMode.TASK_NOTIFICATION)


async def test_notifications_drained_while_idle_run_as_one_turn_of_meta_messages(tmp_path):
    api = ScriptedAPI(sse(text("noted both")))
    d, front = make_dispatcher(api, tmp_path)
    d.conv.queue.enqueue(note(1))
    d.conv.queue.enqueue(note(2))
    await d.drain_queue()
    assert len(api.requests) == 1 and len(d.conv.queue) == 0
    sent = "".join(b.get("text", "") for m in api.requests[0].messages[-2:] for b in m["content"])
    assert "<task-id>b1</task-id>" in sent and "<task-id>b2</task-id>" in sent
    shown = [e.message for e in front.events if isinstance(e, UserEvent) and "<task-notification>" in e.message.text]
    assert [m.is_meta for m in shown] == [True, True]          # each reaches the front end, as meta
    assert _prompts(d.conv.messages) == []                       # not a prompt the user could rewind to


async def test_a_closed_session_does_not_announce_its_killed_tasks(tmp_path):
    api = ScriptedAPI()
    d, _ = make_dispatcher(api, tmp_path)
    tasks = d.conv.tool_context.background
    task = await tasks.start_shell("sleep 30", ["sh", "-c", "sleep 30"], cwd=tmp_path, env={})
    d.conv.close()
    await asyncio.wait_for(task.done.wait(), 10)
    assert len(d.conv.queue) == 0
