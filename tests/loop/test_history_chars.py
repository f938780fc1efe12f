"""Issue 18: the pre-send size check measures only what follows the history it measured last time,
and always comes to what measuring every message would."""

import random

from codeloop.loop.overflow import _chars, _history_chars
from codeloop.messages import Message, tool_result_message, user_message


def test_the_running_measure_equals_measuring_everything():
    rng = random.Random(5)
    history: list[Message] = [user_message("go")]
    other: list[Message] = [user_message("a second conversation")]
    for n in range(200):
        history = [*history, tool_result_message(f"t{n}", "x" * rng.randrange(0, 500)),
                   Message(role="assistant", content=[{"type": "text", "text": "y" * rng.randrange(0, 90)}])]
        roll = rng.random()
        if roll < 0.05:
            history = history[:rng.randrange(1, len(history))]                       # rewound
        elif roll < 0.1:
            i = rng.randrange(0, len(history))                                       # edited anywhere
            history = [*history[:i], user_message("z" * rng.randrange(0, 300)), *history[i + 1:]]
        assert _history_chars(history) == sum(_chars(m.content) for m in history)
        other = [*other, user_message("w" * n)]
        assert _history_chars(other) == sum(_chars(m.content) for m in other)
    assert _history_chars([]) == 0
