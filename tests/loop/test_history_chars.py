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


def _chars_by_definition(obj: object) -> int:
    """Every string's length, nested through dicts (keys aside; not `source` or `signature`)
    and lists; anything else counts nothing."""
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, dict):
        return sum(_chars_by_definition(v) for k, v in obj.items() if k not in ("source", "signature"))
    if isinstance(obj, list):
        return sum(_chars_by_definition(v) for v in obj)
    return 0


def test_a_block_measures_every_string_it_holds_except_images_and_signatures():
    rng = random.Random(31)

    def value(depth: int) -> object:
        roll = rng.random()
        if depth > 4 or roll < 0.3:
            return rng.choice(["", "abc", "héllo ✓", 3, 2.5, None, True, ("a tuple", "counts nothing")])
        if roll < 0.65:
            keys = ["type", "text", "source", "signature", "input", "content", "data"]
            return {rng.choice(keys) + rng.choice(["", "", "2"]): value(depth + 1) for _ in range(rng.randrange(5))}
        return [value(depth + 1) for _ in range(rng.randrange(5))]

    for _ in range(3000):
        obj = value(0)
        assert _chars(obj) == _chars_by_definition(obj)
    assert _chars({"type": "image", "source": {"data": "x" * 99}}) == len("image")
