"""Issue 18: a request reuses the previous one's converted and serialised prefix, and what goes on
the wire is exactly what converting and serialising the whole history afresh would give.

build_request keeps, per conversation, the API messages of the previous request (all but the last,
which can still take a merge and carries the cache breakpoint); encode_body keeps their JSON. These
tests grow random conversations — merged blocks of one response, adjacent user messages, api
errors, empty messages, non-ASCII and undecodable text — and also rewind them, edit them in the
middle (as microcompact does) and interleave two of them, checking every request against a fresh
conversion and the body against `json.dumps` of the body dict.
"""

from __future__ import annotations

import copy
import json
import random

from fakeapi import ScriptedAPI, sse, text
from codeloop.loop.request import _mark_last_block, build_request
from codeloop.messages import (Message, api_error_message, to_api_messages, tool_result_message, user_message,
                               wire_json)
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.providers.base import encode_body

CTX = {"claudeMd": "be nice", "currentDate": "2026-01-01"}
TOOLS: list = []


class Tool:
    name = "T"

    def api_schema(self) -> dict:
        return {"name": "T", "description": "t", "input_schema": {"type": "object"}}


def _turn(rng: random.Random, n: int, *, odd_text: bool) -> list[Message]:
    rid = f"msg_{n}"
    words = ["plain", "héllo wörld ✓", "日本語", "quote \" and \\ backslash", "new\nline"]
    if odd_text:
        words.append("bad byte \udcff here")
    out = [Message(role="assistant", id=rid, content=[{"type": "text", "text": rng.choice(words)}])]
    tids = [f"t{n}_{k}" for k in range(rng.choice([0, 1, 2]))]
    out += [Message(role="assistant", id=rid, content=[{"type": "tool_use", "id": t, "name": "Bash",
                                                        "input": {"command": rng.choice(words)}}]) for t in tids]
    out += [tool_result_message(t, rng.choice(words), is_error=rng.random() < 0.2) for t in tids]
    roll = rng.random()
    if roll < 0.15:
        out.append(user_message("also: " + rng.choice(words)))           # merges with the results
    elif roll < 0.2:
        out.append(api_error_message("API Error: 529"))                   # never sent
    elif roll < 0.25:
        out.append(Message(role="assistant", id=f"e{n}", content=[{"type": "text", "text": ""}]))   # empty turn
    return out


def _expected(messages: list[Message]) -> list[dict]:
    from codeloop.messages import user_context_message

    api = to_api_messages([user_context_message(CTX), *messages])
    _mark_last_block(api)
    return api


def _check(request, messages: list[Message], *, odd_text: bool) -> None:
    assert request.messages == _expected(messages)
    body = request.body()
    data = encode_body(body)
    assert data == wire_json(body)
    if not odd_text:   # no lone surrogates: exactly json.dumps of the body dict
        assert json.loads(data) == json.loads(json.dumps(body))


def test_growing_rewound_and_edited_conversations_send_what_a_fresh_conversion_sends():
    for seed in range(6):
        rng = random.Random(seed)
        odd = seed % 2 == 1
        history: list[Message] = [user_message("start " + str(seed))]
        sent: list[tuple[object, list[dict], bytes]] = []
        for n in range(80):
            history = [*history, *_turn(rng, n, odd_text=odd)]
            roll = rng.random()
            if roll < 0.05 and len(history) > 3:
                history = history[:rng.randrange(2, len(history))]                  # a rewind
            elif roll < 0.1 and len(history) > 3:
                i = rng.randrange(1, len(history))                                   # an edited middle
                history = [*history[:i], user_message("replaced " + str(n)), *history[i + 1:]]
            request = build_request(model="claude-sonnet-4-5", messages=history, system_prompt=["sys"],
                                    user_context=CTX, tools=TOOLS)
            _check(request, history, odd_text=odd)
            sent.append((request, copy.deepcopy(request.messages), wire_json(request.body())))
        # building later requests never changed an earlier one's messages
        for request, snapshot, data in sent:
            assert request.messages == snapshot and wire_json(request.body()) == data


def test_a_sent_request_is_not_changed_by_the_next_one():
    history = [user_message("go"), *_turn(random.Random(1), 0, odd_text=False)]
    first = build_request(model="claude-sonnet-4-5", messages=history, system_prompt=[], user_context=CTX, tools=[])
    frozen = copy.deepcopy(first.messages)
    more = [*history, user_message("and more"), *_turn(random.Random(2), 1, odd_text=False)]
    second = build_request(model="claude-sonnet-4-5", messages=more, system_prompt=[], user_context=CTX, tools=[])
    assert first.messages == frozen                      # the newest one, marked then, is still marked alone
    assert second.messages[-1] is not first.messages[-1]
    assert sum("cache_control" in b for m in second.messages for b in m["content"]) == 1


def test_two_conversations_at_once_each_get_their_own_prefix():
    rng = random.Random(7)
    a: list[Message] = [user_message("conversation a")]
    b: list[Message] = [user_message("conversation b")]
    for n in range(30):
        for hist_name in ("a", "b"):
            hist = a if hist_name == "a" else b
            hist += _turn(rng, n, odd_text=False)
            request = build_request(model="claude-sonnet-4-5", messages=list(hist), system_prompt=["s"],
                                    user_context=CTX, tools=[])
            _check(request, hist, odd_text=False)


def test_the_context_message_follows_a_changed_user_context():
    history = [user_message("go")]
    one = build_request(model="claude-sonnet-4-5", messages=history, system_prompt=[], user_context=CTX, tools=[])
    other = build_request(model="claude-sonnet-4-5", messages=history, system_prompt=[],
                          user_context={**CTX, "currentDate": "2026-01-02"}, tools=[])
    assert "2026-01-01" in json.dumps(one.messages) and "2026-01-02" in json.dumps(other.messages)
    assert "2026-01-01" not in json.dumps(other.messages)


async def test_the_wire_carries_each_growing_request_exactly():
    rng = random.Random(3)
    api = ScriptedAPI(*[sse(text("ok")) for _ in range(40)])
    provider = AnthropicProvider(api_key="sk-test", base_url="http://fake", transport=api.transport(),
                                 user_id="user_abc")
    history: list[Message] = [user_message("wire")]
    try:
        for n in range(40):
            history = [*history, *_turn(rng, n, odd_text=False)]
            request = build_request(model="claude-sonnet-4-5", messages=history, system_prompt=["sys", "env"],
                                    user_context=CTX, tools=[Tool()])
            async for _ in provider.stream(request):
                pass
            body = request.body()
            body["metadata"] = {"user_id": "user_abc"}
            assert api.requests[-1].body == json.loads(json.dumps(body))
    finally:
        await provider.aclose()


def test_encode_body_reuses_only_a_prefix_of_the_very_same_messages():
    first = {"role": "user", "content": [{"type": "text", "text": "first"}]}
    def msg(role: str, s: str) -> dict:
        return {"role": role, "content": [{"type": "text", "text": s}]}
    a, b, c = msg("assistant", "a"), msg("user", "b"), msg("assistant", "c")
    bodies = [[first, a, b], [first, a, b, c, msg("user", "d")],       # grows: prefix reused
              [first, a, msg("user", "other"), c, b],                  # same first dicts, another middle
              [first, a],                                              # shorter
              [first, a, b, c, msg("user", "e"), msg("assistant", "f"), msg("user", "g")]]
    for messages in bodies:
        body = {"model": "m", "max_tokens": 5, "messages": messages, "stream": True}
        assert encode_body(body) == wire_json(body)
        assert json.loads(encode_body(body)) == json.loads(json.dumps(body))


def test_encode_body_reuses_tool_and_system_json_only_while_they_encode_alike():
    """Issue 31: the tool schemas' JSON is made once and reused, yet any change to a tool (a new
    description, another schema, an entry edited in place after a request) or to the system text
    is on the wire."""
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}

    def tools(desc: str = "does t", inp: dict | None = None) -> list[dict]:
        return [{"name": "T", "description": desc, "input_schema": inp or schema},
                {"name": "U", "description": "u ✓", "input_schema": schema}]

    def system(s: str) -> list[dict]:
        return [{"type": "text", "text": s, "cache_control": {"type": "ephemeral"}}]

    first = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    edited = tools("to be edited")
    cases = [(tools(), system("sys")), (tools(), system("sys")), (tools("does t better"), system("sys")),
             (tools(inp={"type": "object", "properties": {}}), system("sys")), (tools(), system("sys 2")),
             (tools()[:1], system("sys")), (edited, system("sys")), (edited, system("sys")),
             ([{"name": "T", "description": "does t", "input_schema": schema, "defer_loading": True}], []),
             (tools(), system("bad byte \udcff"))]
    for i, (tool_list, sys_blocks) in enumerate(cases):
        if i == 7:
            edited[0]["description"] = "edited in place"
        body = {"model": "m", "max_tokens": 5, "messages": [first], "stream": True,
                "system": sys_blocks, "tools": tool_list}
        assert encode_body(body) == wire_json(body)


def test_wire_json_is_the_same_json_fast_or_not():
    """orjson writes the body when it can; what it refuses goes to json, which marks or refuses."""
    import dataclasses
    import math

    import pytest

    body = {"model": "m", "max_tokens": 5, "temperature": 0.7, "tiny": 1e-05, "huge": 1e300,
            "text": "café ✓ \u2028 \"quoted\" \\ \n", "nested": [{"a": [1, True, None]}, []]}
    orjson = pytest.importorskip("orjson")   # imported: wire_json uses it (a transcript read imports it)
    fast = wire_json(body)
    assert fast == orjson.dumps(body)
    assert json.loads(fast) == body and b'": ' not in fast and b', "' not in fast   # compact, UTF-8
    assert wire_json({"s": "caf\udce9"}) == json.dumps({"s": "caf\\xe9"}, separators=(",", ":")).encode()
    assert wire_json({1: 2, "big": 2**70}) == b'{"1":2,"big":1180591620717411303424}'
    assert json.loads(wire_json({"x": math.nan})) == {"x": None}

    @dataclasses.dataclass
    class NotJson:
        x: int

    with pytest.raises(TypeError):
        wire_json({"d": NotJson(1)})
