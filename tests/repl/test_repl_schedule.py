"""A scheduled prompt fires in the idle REPL (issue 26), in a real pseudo-terminal."""

from fakeapi import ScriptedAPI, sse, text, tool_use
from ptyterm import Term


def test_a_wakeup_runs_as_a_new_turn_while_the_repl_waits_for_input(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("ScheduleWakeup", {"delaySeconds": 1.5, "reason": "check soon", "prompt": "WAKE-PROMPT",
                                        "noop": False}, id="w1"), stop="tool_use"),
        sse(text("Scheduled.")),
        sse(text("Woke up and checked.")))
    with api.serve() as url:
        t = Term(tmp_path, url, env={"CODELOOP_WAKEUP_MIN_DELAY_S": "0"})
        try:
            t.ready()
            t.line("check back in a moment")
            t.expect("Scheduled.")
            t.ready()                          # the turn is over: the wakeup (1.5 s on) finds the REPL idle
            t.expect("Woke up and checked.")   # nobody typed: the wakeup started this turn
            t.ready()
            t.line("/exit")
            assert t.wait_exit() == 0
        finally:
            t.close()
    last = api.requests[2].messages[-1]["content"]
    assert "WAKE-PROMPT" in str(last)
