"""handle_prompt_submit's five paths, executeUserInput, onQuery's concurrency, onSubmit's checks."""

import asyncio

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.abort import AbortReason
from codeloop.events import AssistantEvent, StreamEvent, UserEvent
from codeloop.input.dispatch import (ENDED_REFUSAL, BusyTracker, IdleReturnMode, QueryPhase, SubmitPath)
from codeloop.loop.queue import Priority, QueuedCommand, QueueMode
from codeloop.messages import Message, user_message
from inputhelpers import make_dispatcher


async def test_direct_execution_when_idle(tmp_path):
    api = ScriptedAPI(sse(text("hello")))
    d, front = make_dispatcher(api, tmp_path)
    assert await d.on_submit("hi") is SubmitPath.EXECUTED
    assert api.requests[0].messages[-1]["content"][-1]["text"] == "hi"
    assert not d.guard.is_active and d.guard.generation == 1 and front.finished


async def test_empty_input_is_ignored(tmp_path):
    d, _ = make_dispatcher(ScriptedAPI(), tmp_path)
    assert await d.on_submit("   ") is SubmitPath.IGNORED


@pytest.mark.parametrize("alias", ["exit", "quit", ":q", ":q!", ":wq", ":wq!"])
async def test_exit_aliases_become_slash_exit(tmp_path, alias):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    assert await d.on_submit(alias) is SubmitPath.EXIT_ALIAS
    assert front.exited


async def test_queued_commands_path_runs_them_together(tmp_path):
    api = ScriptedAPI(sse(text("both")))
    d, _ = make_dispatcher(api, tmp_path)
    path = await d.handle_prompt_submit(queued_commands=[QueuedCommand("one"), QueuedCommand("two")])
    assert path is SubmitPath.QUEUED_EXECUTED and len(api.requests) == 1
    sent = [b["text"] for m in api.requests[0].messages for b in m["content"] if b.get("type") == "text"]
    assert "one" in sent and "two" in sent


async def _busy(d, front, api_gate):
    """Start a query that blocks until `api_gate` is set; returns the task once it is running."""
    task = asyncio.create_task(d.on_submit("long job"))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if d.guard.is_active and any(isinstance(e, StreamEvent) for e in front.events):
            break
    return task


def _slow_api(*responses, delay=0.5):
    first = sse(text("working on it"))
    first.chunks[1:1] = [(delay, b": keep-alive\n\n")]
    return ScriptedAPI(first, *responses)


async def test_input_while_busy_is_enqueued_and_reaches_the_model(tmp_path):
    api = _slow_api(sse(text("got your follow-up")))
    d, front = make_dispatcher(api, tmp_path)
    task = await _busy(d, front, None)
    assert d.guard.is_active
    assert await d.on_submit("also do this") is SubmitPath.ENQUEUED
    [cmd] = front.conv.queue.peek_all()
    assert cmd.priority is Priority.NEXT and cmd.mode is QueueMode.PROMPT
    await task  # the first query ends; the queue processor runs the queued prompt
    assert len(api.requests) == 2 and "also do this" in str(api.requests[1].messages[-1])
    assert len(front.conv.queue) == 0


async def test_bash_while_busy_waits_for_the_end_and_other_modes_are_dropped(tmp_path):
    api = _slow_api()
    d, front = make_dispatcher(api, tmp_path)
    task = await _busy(d, front, None)
    assert await d.on_submit("echo queued-bash", mode=QueueMode.BASH) is SubmitPath.ENQUEUED
    assert front.conv.queue.peek_all()[0].priority is Priority.LATER
    assert await d.handle_prompt_submit("note", mode=QueueMode.TASK_NOTIFICATION) is SubmitPath.DROPPED
    await task
    texts = [m.text for m in front.conv.messages]
    assert any("queued-bash" in t and "<bash-stdout>" in t for t in texts)
    assert len(api.requests) == 1  # bash mode never calls the model


async def test_immediate_command_runs_while_busy(tmp_path):
    api = _slow_api(sse(text("<summary>s</summary>")))
    d, front = make_dispatcher(api, tmp_path)
    task = await _busy(d, front, None)
    assert await d.on_submit("/status") is SubmitPath.IMMEDIATE
    assert "Session:" in front.text() and d.guard.is_active
    assert await d.on_submit("/compact") is SubmitPath.ENQUEUED  # not immediate: waits
    await task
    assert len(api.requests) == 2 and any(getattr(e, "type", "") == "compact_boundary" for e in front.events)


async def test_enqueue_interrupts_an_interruptible_tool(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "f.txt")})), sse(text("after interrupt")))
    d, front = make_dispatcher(api, tmp_path)
    d.tracker.phase, d.tracker.running = QueryPhase.TOOLS, {"t1": "Read"}
    from codeloop.abort import AbortController
    d.abort = AbortController()
    d.guard.try_start()
    assert await d.handle_prompt_submit("stop reading") is SubmitPath.ENQUEUED
    assert d.abort.aborted and d.abort.reason is AbortReason.INTERRUPT
    d.abort = AbortController()
    d.tracker.running = {"t2": "Bash"}
    await d.handle_prompt_submit("bash keeps going")
    assert not d.abort.aborted


def test_busy_tracker_interruptibility():
    t = BusyTracker()
    t.observe(StreamEvent({"type": "message_start", "message": {}}))
    assert t.phase is QueryPhase.STREAMING
    t.observe(AssistantEvent(Message("assistant", [{"type": "tool_use", "id": "a", "name": "Grep", "input": {}}])))
    assert not t.interruptible  # still streaming
    t.observe(StreamEvent({"type": "message_stop"}))
    assert t.interruptible
    t.observe(AssistantEvent(Message("assistant", [{"type": "tool_use", "id": "b", "name": "Edit", "input": {}}])))
    assert not t.interruptible
    t.observe(UserEvent(user_message([{"type": "tool_result", "tool_use_id": "b", "content": "ok"}])))
    assert t.interruptible


async def test_on_query_while_running_enqueues_instead_of_losing(tmp_path):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    gen = d.guard.try_start()
    from codeloop.abort import AbortController
    await d.on_query([user_message("ctx", is_meta=True), user_message("lost?")], AbortController(), True)
    assert [c.value for c in front.conv.queue.peek_all()] == ["lost?"]
    assert d.guard.end(gen)


async def test_execute_user_input_releases_the_reservation_on_error(tmp_path, monkeypatch):
    d, _ = make_dispatcher(ScriptedAPI(), tmp_path)

    async def boom(*a, **k):
        raise RuntimeError("processing failed")
    monkeypatch.setattr("codeloop.input.dispatch.process_user_input", boom)
    with pytest.raises(RuntimeError):
        await d.execute_user_input([QueuedCommand("x")])
    assert not d.guard.is_active


async def test_first_command_gets_attachments_later_ones_do_not(tmp_path, monkeypatch):
    seen = []
    import codeloop.input.dispatch as dispatch
    real = dispatch.process_user_input

    async def spy(host, reg, cmd, *, skip_attachments, abort):
        seen.append((cmd.value, skip_attachments))
        return await real(host, reg, cmd, skip_attachments=skip_attachments, abort=abort)
    monkeypatch.setattr(dispatch, "process_user_input", spy)
    d, _ = make_dispatcher(ScriptedAPI(sse(text("ok"))), tmp_path)
    await d.execute_user_input([QueuedCommand("a"), QueuedCommand("b"), QueuedCommand("c")])
    assert seen == [("a", False), ("b", True), ("c", True)]


async def test_ended_session_refuses_input_until_clear(tmp_path):
    api = ScriptedAPI(sse(text("fresh start")))
    d, front = make_dispatcher(api, tmp_path)
    front.conv.ended_by_model = True
    assert await d.on_submit("hello?") is SubmitPath.REFUSED
    assert await d.on_submit("ls", mode=QueueMode.BASH) is SubmitPath.REFUSED
    assert ENDED_REFUSAL in front.text() and "Start a new session (or /clear)" in ENDED_REFUSAL
    await d.on_submit("/clear")
    assert await d.on_submit("hello again") is SubmitPath.EXECUTED and len(api.requests) == 1


async def test_interrupt_aborts_the_running_query(tmp_path):
    api = _slow_api(delay=2.0)
    d, front = make_dispatcher(api, tmp_path)
    task = await _busy(d, front, None)
    assert d.interrupt()
    await asyncio.wait_for(task, 5)
    assert front.conv.last_terminal.reason.value == "aborted_streaming" and front.finished[-1][1] is True
    assert not d.interrupt()


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


@pytest.mark.parametrize("mode", [IdleReturnMode.HINT, IdleReturnMode.OFF])
async def test_idle_return_hint(tmp_path, mode):
    clock = Clock()
    api = ScriptedAPI(sse(text("a"), input_tokens=150_000), sse(text("b")))
    d, front = make_dispatcher(api, tmp_path, idle_return=mode, clock=clock)
    await d.on_submit("first")
    clock.t += 76 * 60
    await d.on_submit("back again")
    hinted = any("/clear" in t and s == "hint" for t, s in front.shown)
    assert hinted is (mode is IdleReturnMode.HINT) and len(api.requests) == 2


async def test_idle_return_dialog_can_clear(tmp_path):
    clock = Clock()
    api = ScriptedAPI(sse(text("a"), input_tokens=150_000), sse(text("b")))
    d, front = make_dispatcher(api, tmp_path, idle_return=IdleReturnMode.DIALOG, clock=clock, choices=["clear"])
    await d.on_submit("first")
    old = front.conv.session_id
    clock.t += 80 * 60
    await d.on_submit("new topic")
    assert front.conv.session_id != old
    assert [m["content"][-1]["text"] for m in api.requests[1].messages] == ["new topic"]


async def test_no_idle_hint_for_small_contexts(tmp_path):
    clock = Clock()
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    d, front = make_dispatcher(api, tmp_path, clock=clock)
    await d.on_submit("first")
    clock.t += 200 * 60
    await d.on_submit("second")
    assert not any(s == "hint" for _, s in front.shown)


def test_idle_mode_resolution(monkeypatch):
    monkeypatch.delenv("CODELOOP_IDLE_RETURN", raising=False)
    assert IdleReturnMode.resolve(None) is IdleReturnMode.HINT
    assert IdleReturnMode.resolve("dialog") is IdleReturnMode.DIALOG
    monkeypatch.setenv("CODELOOP_IDLE_RETURN", "off")
    assert IdleReturnMode.resolve("dialog") is IdleReturnMode.OFF


async def test_typing_while_a_read_only_tool_runs_interrupts_it_and_runs_the_prompt(tmp_path):
    """End to end: the model calls an interruptible tool that would take long; the user types."""
    from codeloop.tools.builtin.grep import GrepTool

    started = asyncio.Event()

    class SlowGrep(GrepTool):
        async def call(self, inp, ctx):
            started.set()
            await asyncio.sleep(30)          # cancelled long before this ends
            raise AssertionError("an interruptible tool was not cancelled")

    api = ScriptedAPI(sse(tool_use("Grep", {"pattern": "x"}, id="g1")), sse(text("answered the new prompt")))
    d, front = make_dispatcher(api, tmp_path)
    front.conv.config.tools = [SlowGrep() if t.name == "Grep" else t for t in front.conv.config.tools]
    task = asyncio.create_task(d.on_submit("search everything"))
    await asyncio.wait_for(started.wait(), 15)
    while not d.tracker.interruptible:
        await asyncio.sleep(0.01)
    assert await d.on_submit("actually, do this instead") is SubmitPath.ENQUEUED
    await asyncio.wait_for(task, 15)
    results = [b for e in front.events if isinstance(e, UserEvent) for b in e.message.content
               if b.get("type") == "tool_result"]
    assert [r["content"] for r in results] == ["[Request interrupted by user for tool use]"]
    assert len(api.requests) == 2 and "actually, do this instead" in str(api.requests[1].messages[-1])
    assert len(front.conv.queue) == 0


async def test_a_prompt_command_sent_by_a_key_while_busy_is_queued_not_dropped(tmp_path):
    """Spec 004 §2.1: only LOCAL commands run at once from a key binding; /init asks the model."""
    api = _slow_api(sse(text("wrote CLAUDE.md")))
    d, front = make_dispatcher(api, tmp_path)
    task = await _busy(d, front, None)
    assert await d.on_submit("/init", from_keybinding=True) is SubmitPath.ENQUEUED
    [cmd] = front.conv.queue.peek_all()
    assert cmd.value == "/init" and cmd.priority is Priority.LATER
    assert await d.on_submit("/model", from_keybinding=True) is SubmitPath.IMMEDIATE   # LOCAL: at once
    await task
    assert len(api.requests) == 2 and "CLAUDE.md" in str(api.requests[1].messages[-1])
    assert len(front.conv.queue) == 0
