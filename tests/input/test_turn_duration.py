"""Spec 004 §5.3: when onQuery's cleanup finds the turn took more than 30 s (and it was not
aborted), a line says how long it worked. The dispatcher measures the turn with an injected clock
(no real waiting); the REPL's renderer draws the line."""

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.abort import AbortReason
from codeloop.cli.repl.render import TURN_DURATION_LINE_AFTER_S, Renderer
from codeloop.events import AssistantEvent
from codeloop.input.commands import CommandRegistry
from codeloop.input.dispatch import Dispatcher
from inputhelpers import FakeFront, make_conv


class Clock:
    def __init__(self) -> None:
        self.t = 5_000.0

    def __call__(self) -> float:
        return self.t


class RenderingFront(FakeFront):
    """The fake front end, drawing the end of each query with the REPL's own renderer."""

    def __init__(self, conv):
        super().__init__(conv)
        self.out: list[str] = []
        self.renderer = Renderer(self.out.append, color=False)

    def query_finished(self, duration_s, aborted):
        super().query_finished(duration_s, aborted)
        self.renderer.query_finished(duration_s, aborted)

    def printed(self) -> str:
        return "".join(self.out)


def dispatcher(api, tmp_path, takes_s: float, *, interrupt: bool = False):
    """A dispatcher whose clock moves `takes_s` seconds while the model answers."""
    clock = Clock()
    front = RenderingFront(make_conv(api, tmp_path))
    d = Dispatcher(front, CommandRegistry.load(tmp_path, tmp_path / ".cfg", home=tmp_path / "home"), clock=clock)

    def on_event(ev):
        if isinstance(ev, AssistantEvent) and clock.t == 5_000.0:
            clock.t += takes_s
            if interrupt:
                d.interrupt(AbortReason.USER)
    front.on_event = on_event
    return d, front


@pytest.mark.parametrize("takes_s, line", [(31.0, "✻ Worked for 31s"), (95.0, "✻ Worked for 1m 35s")])
async def test_a_turn_over_30_seconds_says_how_long_it_worked(tmp_path, takes_s, line):
    d, front = dispatcher(ScriptedAPI(sse(text("slow answer"))), tmp_path, takes_s)
    await d.on_submit("take your time")
    assert front.finished == [(takes_s, False)]
    assert line in front.printed()


async def test_exactly_30_seconds_or_less_shows_no_line(tmp_path):
    assert TURN_DURATION_LINE_AFTER_S == 30.0     # the document's threshold: turnDurationMs > 30000
    for takes_s in (30.0, 2.0):
        cwd = tmp_path / f"t{int(takes_s)}"
        cwd.mkdir()
        d, front = dispatcher(ScriptedAPI(sse(text("quick"))), cwd, takes_s)
        await d.on_submit("go")
        assert front.finished == [(takes_s, False)] and "Worked for" not in front.printed()


async def test_an_aborted_turn_shows_no_line_however_long(tmp_path):
    api = ScriptedAPI(sse(text("starting"), tool_use("Bash", {"command": "sleep 30"})), sse(text("never")))
    d, front = dispatcher(api, tmp_path, 120.0, interrupt=True)
    await d.on_submit("run the slow thing")
    [(took, aborted)] = front.finished
    assert took == 120.0 and aborted and "Worked for" not in front.printed()
