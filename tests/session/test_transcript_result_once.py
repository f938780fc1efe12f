"""Issue 18: a tool result's text is stored once in the transcript; every shape still round-trips,
and transcripts written before (text stored twice) load exactly as they did."""

import json

from codeloop.messages import tool_result_message
from codeloop.session.transcript import (RESULT_FROM_CONTENT, encode_entry, entry_to_message, load_transcript,
                                         message_to_entry)


def roundtrip(msg):
    entry = message_to_entry(msg, session_id="s", cwd="/w", parent_uuid=None)
    return entry, entry_to_message(json.loads(encode_entry(entry)))


def test_structured_result_field_equal_to_the_text_is_stored_once():
    data = {"stdout": "hello\nworld", "stderr": "", "exitCode": 0, "interrupted": False, "cwd": "/w"}
    entry, back = roundtrip(tool_result_message("toolu_1", "hello\nworld", tool_use_result=dict(data)))
    assert json.dumps(entry).count("hello") == 1
    assert entry[RESULT_FROM_CONTENT] == ["stdout"] and "stdout" not in entry["toolUseResult"]
    assert back.tool_use_result == data and back.content == entry["message"]["content"]


def test_result_that_is_the_text_is_stored_once():
    entry, back = roundtrip(tool_result_message("toolu_2", "file contents here", tool_use_result="file contents here"))
    assert "toolUseResult" not in entry and entry[RESULT_FROM_CONTENT] is True
    assert back.tool_use_result == "file contents here"


def test_results_that_differ_from_the_text_are_kept_as_they_are():
    data = {"stdout": "out", "stderr": "err", "exitCode": 1}
    entry, back = roundtrip(tool_result_message("toolu_3", "out\nerr\nExit code 1", is_error=True,
                                                tool_use_result=data))
    assert entry["toolUseResult"] == data and RESULT_FROM_CONTENT not in entry
    assert back.tool_use_result == data
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]   # list content: not shared
    entry, back = roundtrip(tool_result_message("toolu_4", blocks, tool_use_result="a"))
    assert entry["toolUseResult"] == "a" and back.tool_use_result == "a"


def test_old_transcript_with_the_text_twice_loads_unchanged(tmp_path):
    ask = {"type": "assistant", "uuid": "a1", "parentUuid": None, "sessionId": "s", "cwd": "/w",
           "timestamp": "2025-01-01T00:00:00.000Z", "version": "0.0.1",
           "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash",
                                                           "input": {"command": "echo x"}}]}}
    old = {"type": "user", "uuid": "u1", "parentUuid": "a1", "sessionId": "s", "timestamp": "2025-01-01T00:00:00.000Z",
           "cwd": "/w", "version": "0.0.1",
           "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
           "toolUseResult": {"stdout": "x", "stderr": "", "exitCode": 0}}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(ask) + "\n" + json.dumps(old) + "\n")
    [_, msg] = load_transcript(path).messages
    assert msg.tool_use_result == {"stdout": "x", "stderr": "", "exitCode": 0}
