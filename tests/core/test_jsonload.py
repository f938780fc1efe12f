"""jsonload.loads reads every text exactly as json.loads does, with orjson installed or not."""

from __future__ import annotations

import json

import pytest

from codeloop import jsonload

CASES = [
    b'{"type":"user","message":{"content":[{"type":"text","text":"hi"}]}}',
    b'{"n": 123456789012345678901234567890}',          # beyond 64 bits: orjson would make it a float
    b'{"n": -9223372036854775809, "m": 18446744073709551616}',
    b'{"id": "call_1234567890123456789012"}',             # long digits inside a string: still exact
    b'{"a": NaN, "b": Infinity}',                          # json's extensions
    b'{"s": "\\ud800"}',                                    # a lone surrogate, as encode_entry escapes it
    b'"\xed\xa0\x80"',                                      # a raw one: json decodes with surrogatepass
    b'\xef\xbb\xbf{"a": 1}',                               # a byte-order mark
    b'{"a": 1e400, "b": -0.0, "c": 0.1}',
    b'{"a": 1, "a": 2}',
    b'  {"a": [1, 2, {"b": null}]}  ',
    b'[1, 2]',
    b'{"a": "\\u0000\\n\\t"}',
]
BAD = [b'{"a":1}{"b":2}', b'{"a":', b'', b'\xff\xfe', b'{"a": 01}', b'{"a": 1} x', b'[' * 5000 + b']' * 5000]


def _same(data: bytes) -> None:
    try:
        expected = json.loads(data)
    except (ValueError, RecursionError) as e:
        with pytest.raises(type(e) if isinstance(e, RecursionError) else ValueError):
            jsonload.loads(data)
        return
    got = jsonload.loads(data)
    assert repr(got) == repr(expected)   # repr: NaN != NaN, and 1 == 1.0 would hide a float


@pytest.mark.parametrize("data", CASES + BAD)
def test_reads_exactly_as_json_does(data):
    _same(data)


@pytest.mark.parametrize("data", CASES + BAD)
def test_reads_exactly_as_json_does_without_orjson(monkeypatch, data):
    jsonload._load_orjson()
    monkeypatch.setitem(jsonload._state, "orjson", None)
    _same(data)


def test_orjson_is_used_when_installed():
    pytest.importorskip("orjson")
    jsonload._state.clear()
    jsonload.loads(b"{}")
    assert jsonload._state["orjson"] is not None
