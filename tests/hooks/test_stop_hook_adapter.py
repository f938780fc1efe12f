"""StopHookAdapter: the loop's StopHooks seam, backed by real Stop hook scripts."""

from __future__ import annotations

import asyncio

import pytest
from hooklab import group

from codeloop.hooks import HookEvent, StopHookAdapter
from codeloop.hooks.stop import StopHookOutcome
from codeloop.messages import user_message


async def test_blocking_stop_hook_feeds_its_reason_back_as_a_meta_message(lab):
    cmd = lab.script(f"cat > {lab.root}/stdin.json; echo 'tests are failing' >&2; exit 2")
    adapter = StopHookAdapter(lab.runner({"Stop": [group(cmd)]}))
    out = await asyncio.wait_for(adapter.run([user_message("hi")], stop_hook_active=True), 30)
    assert not out.prevent_continuation
    assert len(out.blocking_messages) == 1
    msg = out.blocking_messages[0]
    assert msg.role == "user" and msg.is_meta
    assert msg.text == "Stop hook feedback:\ntests are failing"
    assert lab.read_json("stdin.json")["stop_hook_active"] is True


async def test_json_block_decisions_are_joined(lab):
    a = lab.script("""echo '{"decision": "block", "reason": "lint"}'""")
    b = lab.script("""echo '{"decision": "block", "reason": "types"}'""")
    adapter = StopHookAdapter(lab.runner({"Stop": [group(a, b)]}))
    out = await asyncio.wait_for(adapter.run([], stop_hook_active=False), 30)
    assert out.blocking_messages[0].text == "Stop hook feedback:\nlint\ntypes"


async def test_continue_false_prevents_continuation(lab):
    cmd = lab.script("""echo '{"continue": false, "stopReason": "budget spent", "decision": "block", "reason": "x"}'""")
    adapter = StopHookAdapter(lab.runner({"Stop": [group(cmd)]}))
    out = await asyncio.wait_for(adapter.run([], stop_hook_active=False), 30)
    assert out == StopHookOutcome(prevent_continuation=True, stop_reason="budget spent")


async def test_passing_hooks_and_errors_let_the_turn_end(lab):
    ok = lab.script("exit 0")
    broken = lab.script("echo oops >&2; exit 1")
    adapter = StopHookAdapter(lab.runner({"Stop": [group(ok, broken)]}))
    out = await asyncio.wait_for(adapter.run([], stop_hook_active=False), 30)
    assert out.blocking_messages == [] and not out.prevent_continuation and out.stop_reason is None
    assert len(out.errors) == 1 and out.errors[0].endswith("exit code 1: oops")   # shown, not fed back


async def test_subagent_stop_adapter_runs_subagent_stop_hooks(lab):
    stop = lab.script(f"touch {lab.root}/stop")
    sub = lab.script("echo 'subagent not done' >&2; exit 2")
    adapter = StopHookAdapter(lab.runner({"Stop": [group(stop)], "SubagentStop": [group(sub)]}),
                              event=HookEvent.SUBAGENT_STOP)
    out = await asyncio.wait_for(adapter.run([], stop_hook_active=False), 30)
    assert out.blocking_messages[0].text == "Stop hook feedback:\nsubagent not done"
    assert not (lab.root / "stop").exists()


def test_adapter_refuses_non_stop_events(lab):
    with pytest.raises(ValueError):
        StopHookAdapter(lab.runner({}), event=HookEvent.PRE_TOOL_USE)


async def test_query_loop_continues_once_on_a_blocking_stop_hook(lab):
    from fakeapi import ScriptedAPI, sse, text
    from loophelpers import make_params, run, terminal

    from codeloop.loop.state import TerminalReason

    # Blocks the first stop; lets the model stop once stop_hook_active is set (the documented idiom).
    cmd = lab.script('if grep -q \'"stop_hook_active": true\'; then exit 0; fi\necho "run the tests" >&2; exit 2')
    api = ScriptedAPI(sse(text("done")), sse(text("tests pass, done")))
    adapter = StopHookAdapter(lab.runner({"Stop": [group(cmd)]}))
    events = await asyncio.wait_for(run(make_params(api, lab.cwd, stop_hooks=adapter)), 30)
    assert terminal(events).reason is TerminalReason.COMPLETED
    assert len(api.requests) == 2
    last = api.requests[1].messages[-1]
    assert last["role"] == "user"
    assert [b["text"] for b in last["content"] if b["type"] == "text"] == ["Stop hook feedback:\nrun the tests"]
