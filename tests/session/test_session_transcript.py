"""The JSONL transcript: format, durable writer, tolerant reader, repair on load."""

import json
import os

import pytest

from codeloop import __version__
from codeloop.messages import Message, tool_result_message, user_message
from codeloop.session.repair import repair_dangling_tool_uses
from codeloop.session.transcript import (INTERRUPTED_TOOL_RESULT, TranscriptError, TranscriptWriter,
                                         entry_to_message, load_transcript, message_to_entry)

SID = "44444444-4444-4444-8444-444444444444"


@pytest.fixture
def path(tmp_path):
    return tmp_path / "projects" / "key" / f"{SID}.jsonl"


@pytest.fixture
def fsyncs(monkeypatch):
    calls = []
    real = os.fsync

    def record(fd):
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", record)
    return calls


def writer(path, cwd="/work/proj"):
    return TranscriptWriter(path, SID, cwd)


def assistant(*blocks, **kw):
    return Message(role="assistant", content=list(blocks), id=kw.pop("id", "msg_1"), model="m",
                   stop_reason=kw.pop("stop_reason", "end_turn"), **kw)


def text(t):
    return {"type": "text", "text": t}


def tool_use(tool_use_id, name="Bash"):
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": {"command": "rm -rf build"}}


def read_lines(path):
    return path.read_bytes().split(b"\n")


FULL_ASSISTANT = dict(
    role="assistant", content=[text("hi"), tool_use("tu_1")], uuid="aaaaaaaa-0000-4000-8000-000000000001",
    id="msg_9", model="claude-x", stop_reason="tool_use",
    usage={"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 0},
    is_meta=True, is_api_error=True, tool_use_result={"k": [1, 2]}, parent_tool_use_id="tu_parent",
    timestamp="2025-01-02T03:04:05.678Z")
FULL_USER = dict(FULL_ASSISTANT, role="user", content=[text("hello")],
                 uuid="aaaaaaaa-0000-4000-8000-000000000002")
PLAIN_USER = dict(role="user", content=[text("plain")], uuid="aaaaaaaa-0000-4000-8000-000000000003")


@pytest.mark.parametrize("fields", [FULL_ASSISTANT, FULL_USER, PLAIN_USER], ids=["assistant", "user", "plain"])
def test_every_message_field_round_trips_through_the_file(path, fields):
    msg = Message(**fields)
    w = writer(path)
    w.append_message(msg)
    w.close()
    got = load_transcript(path).messages[0]
    for name in Message.__dataclass_fields__:
        if name != "timestamp" or msg.timestamp:
            assert getattr(got, name) == getattr(msg, name), name
    if msg.timestamp is None:  # stamped at write time
        assert got.timestamp.endswith("Z")
    assert entry_to_message(message_to_entry(got, session_id=SID, cwd="/", parent_uuid=None)) == got


def test_entry_format(path):
    w = writer(path)
    entry = w.append_message(user_message("hello"))
    w.close()
    on_disk = json.loads(read_lines(path)[0])
    assert on_disk == entry
    assert on_disk["type"] == "user"
    assert on_disk["sessionId"] == SID
    assert on_disk["cwd"] == "/work/proj"
    assert on_disk["version"] == __version__
    assert on_disk["parentUuid"] is None
    assert on_disk["message"] == {"role": "user", "content": [text("hello")]}
    assert on_disk["timestamp"].endswith("Z") and len(on_disk["timestamp"]) == len("2025-01-02T03:04:05.678Z")
    for optional in ("isMeta", "isApiErrorMessage", "toolUseResult", "parent_tool_use_id"):
        assert optional not in on_disk
    assert path.read_bytes().endswith(b"\n")
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert oct(path.parent.stat().st_mode & 0o777) == oct(0o700)


def test_entry_to_message_ignores_other_types_and_accepts_string_content():
    assert entry_to_message({"type": "summary", "summary": "s"}) is None
    assert entry_to_message({"type": "user", "message": "nope"}) is None
    msg = entry_to_message({"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hey"}})
    assert msg.content == [text("hey")] and msg.uuid == "u1"


def test_parent_uuid_chain_continues_after_reopen(path):
    w = writer(path)
    first = w.append_message(user_message("one"))
    second = w.append_message(assistant(text("two")))
    w.close()
    assert first["parentUuid"] is None
    assert second["parentUuid"] == first["uuid"]
    assert w.last_uuid == second["uuid"]

    w2 = writer(path)  # a new process resuming: learns the chain from the file
    assert w2.last_uuid == second["uuid"]
    third = w2.append_message(user_message("three"))
    w2.close()
    assert third["parentUuid"] == second["uuid"]

    loaded = load_transcript(path)
    assert loaded.last_uuid == third["uuid"]
    w3 = TranscriptWriter(path, SID, "/work/proj", last_uuid=loaded.last_uuid)
    fourth = w3.append_message(assistant(text("four")))
    w3.close()
    assert fourth["parentUuid"] == third["uuid"]
    assert [e["parentUuid"] for e in load_transcript(path).entries] == [
        None, first["uuid"], second["uuid"], third["uuid"]]


def test_append_entry_fills_in_missing_fields_and_chains(path):
    w = writer(path)
    msg_entry = w.append_message(user_message("hi"))
    summary = w.append_entry({"type": "summary", "summary": "greeting"})
    boundary = w.append_entry({"type": "compact_boundary", "parentUuid": None, "uuid": "fixed-uuid"})
    w.close()
    assert summary["sessionId"] == SID and summary["uuid"] and summary["timestamp"].endswith("Z")
    assert summary["parentUuid"] == msg_entry["uuid"]
    assert boundary["parentUuid"] is None and boundary["uuid"] == "fixed-uuid"
    loaded = load_transcript(path)
    assert [e["type"] for e in loaded.entries] == ["user", "summary", "compact_boundary"]
    assert len(loaded.messages) == 1
    assert loaded.last_uuid == "fixed-uuid"
    with pytest.raises(ValueError):
        writer(path).append_entry({"summary": "no type"})


def test_torn_final_line_is_skipped_then_truncated_by_next_append(path):
    w = writer(path)
    kept = [w.append_message(user_message(f"m{i}")) for i in range(3)]
    w.close()
    with open(path, "ab") as f:
        f.write(b'{"type":"user","uuid":"torn","message":{"role":"us')  # crash mid-record

    loaded = load_transcript(path)
    assert [m.text for m in loaded.messages] == ["m0", "m1", "m2"]
    assert loaded.warnings == [f"skipped 1 corrupt line(s) in {path}"]
    assert loaded.last_uuid == kept[-1]["uuid"]

    w2 = writer(path)
    new = w2.append_message(user_message("after crash"))
    w2.close()
    assert new["parentUuid"] == kept[-1]["uuid"]
    lines = read_lines(path)
    assert lines[-1] == b""
    assert [json.loads(line)["uuid"] for line in lines[:-1]] == [e["uuid"] for e in kept] + [new["uuid"]]
    again = load_transcript(path)
    assert again.warnings == []
    assert [m.text for m in again.messages] == ["m0", "m1", "m2", "after crash"]


def test_complete_final_record_missing_only_its_newline_is_kept(path):
    w = writer(path)
    w.append_message(user_message("a"))
    w.close()
    record = json.dumps({"type": "user", "uuid": "u-last", "message": {"role": "user", "content": "b"}})
    with open(path, "ab") as f:
        f.write(record.encode())
    assert [m.text for m in load_transcript(path).messages] == ["a", "b"]
    w2 = writer(path)
    assert w2.last_uuid == "u-last"
    w2.append_message(user_message("c"))
    w2.close()
    loaded = load_transcript(path)
    assert [m.text for m in loaded.messages] == ["a", "b", "c"]
    assert loaded.warnings == []


def test_torn_line_only_file_is_truncated_to_empty_before_append(path):
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"type":"us')
    w = writer(path)
    assert w.last_uuid is None
    entry = w.append_message(user_message("fresh"))
    w.close()
    assert entry["parentUuid"] is None
    assert read_lines(path)[0] == json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()


def test_corrupt_middle_lines_are_skipped_with_one_warning(path):
    w = writer(path)
    w.append_message(user_message("before"))
    w.close()
    with open(path, "ab") as f:
        f.write(b"not json at all\n")
        f.write(b"\xff\xfe invalid utf-8\n")
        f.write(b"[1, 2, 3]\n")
        f.write(b'{"type":"user","message":{"role":"user","content":7}}\n')
        f.write(b"\n")
    w = writer(path)
    w.append_message(assistant(text("after")))
    w.close()
    loaded = load_transcript(path)
    assert [m.text for m in loaded.messages] == ["before", "after"]
    assert loaded.warnings == [f"skipped 4 corrupt line(s) in {path}"]
    assert len(loaded.entries) == 3


def test_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_transcript(tmp_path / "nope.jsonl")


def test_unicode_line_separators_and_emoji_round_trip(path):
    tricky = "a\u2028b\u0085c\u2029d 🙂👩🏽‍💻 \r\n e\x1c\x1d\x1e f"
    w = writer(path)
    w.append_message(user_message(tricky))
    w.append_message(assistant(text(tricky)))
    w.close()
    raw = path.read_bytes()
    assert "\u2028".encode() in raw  # stored raw (ensure_ascii=False), not escaped
    assert raw.count(b"\n") == 2
    loaded = load_transcript(path)
    assert loaded.warnings == []
    assert [m.text for m in loaded.messages] == [tricky, tricky]


def test_lone_surrogates_are_stored_escaped(path):
    weird = b"caf\xe9".decode("utf-8", "surrogateescape")
    w = writer(path)
    w.append_message(user_message(weird))
    w.close()
    assert load_transcript(path).messages[0].text == weird


def test_tool_use_entries_are_fsynced_and_plain_entries_are_not(path, fsyncs):
    w = writer(path)
    w.append_message(user_message("do it"))
    w.append_message(assistant(text("thinking about it")))
    w.append_entry({"type": "system", "content": "note"})
    assert fsyncs == []
    w.append_message(assistant(tool_use("tu_1"), stop_reason="tool_use"))
    assert len(fsyncs) >= 1
    count = len(fsyncs)
    w.append_message(tool_result_message("tu_1", "done"))
    assert len(fsyncs) == count
    w.append_entry({"type": "assistant", "message": {"role": "assistant", "content": [tool_use("tu_2")]}})
    assert len(fsyncs) > count
    w.close()


def test_sync_fsyncs_written_data(path, fsyncs):
    w = writer(path)
    w.sync()  # nothing written yet: nothing to do
    assert fsyncs == []
    w.append_message(user_message("hi"))
    assert fsyncs == []
    w.sync()
    assert len(fsyncs) >= 1
    w.close()


def test_unserialisable_tool_use_result_is_stored_lossily(path):
    class Thing:
        def __str__(self):
            return "a thing"

    w = writer(path)
    w.append_message(assistant(tool_use("tu")))
    w.append_message(tool_result_message("tu", "ok", tool_use_result={"obj": Thing(), "ids": {1}}))
    w.close()
    assert load_transcript(path).messages[1].tool_use_result == {"obj": "a thing", "ids": [1]}


def test_unwritable_path_raises_transcript_error(tmp_path):
    target = tmp_path / "is_a_dir.jsonl"
    target.mkdir()
    w = TranscriptWriter(target, SID, tmp_path)
    with pytest.raises(TranscriptError, match="is_a_dir.jsonl") as info:
        w.append_message(user_message("hi"))
    assert info.value.path == target
    assert isinstance(info.value.__cause__, OSError)


def test_parent_that_is_a_file_raises_transcript_error(tmp_path):
    (tmp_path / "blocker").write_text("x")
    w = TranscriptWriter(tmp_path / "blocker" / "s.jsonl", SID, tmp_path)
    with pytest.raises(TranscriptError):
        w.append_entry({"type": "summary", "summary": "s"})


def test_short_writes_are_completed(path, monkeypatch):
    real_write = os.write

    def dribble(fd, data):
        return real_write(fd, bytes(data[:7]))

    monkeypatch.setattr(os, "write", dribble)
    w = writer(path)
    w.append_message(user_message("a fairly long message that needs several writes"))
    w.close()
    monkeypatch.setattr(os, "write", real_write)
    assert load_transcript(path).messages[0].text == "a fairly long message that needs several writes"


def test_tombstoned_messages_are_dropped_on_load(path):
    w = writer(path)
    w.append_message(user_message("q"))
    partial = assistant(text("partial answer"))
    w.append_message(partial)
    w.append_entry({"type": "tombstone", "targetUuid": partial.uuid})
    w.append_message(assistant(text("full answer")))
    w.close()
    assert [m.text for m in load_transcript(path).messages] == ["q", "full answer"]


# -- repair --------------------------------------------------------------------------------------

def synthetic_ids(msg):
    assert msg.role == "user"
    assert all(b["is_error"] and b["content"] == INTERRUPTED_TOOL_RESULT for b in msg.content)
    return msg.tool_result_ids()


def test_repair_single_dangling_tool_use_before_next_user_message():
    history = [user_message("go"), assistant(tool_use("tu_1")), user_message("what happened?")]
    out = repair_dangling_tool_uses(history)
    assert len(out) == 4
    assert out[:2] == history[:2]
    assert synthetic_ids(out[2]) == ["tu_1"]
    assert out[2].tool_use_result == INTERRUPTED_TOOL_RESULT
    assert out[3] is history[2]


def test_repair_several_tool_uses_in_one_message_and_across_a_run():
    a1 = assistant(text("running"), tool_use("tu_1"), tool_use("tu_2"))
    a2 = assistant(tool_use("tu_3"))
    answered = tool_result_message("tu_2", "ok")
    out = repair_dangling_tool_uses([user_message("go"), a1, a2, answered])
    # Synthetic results come right after the assistant run, before the real result.
    assert out[1] is a1 and out[2] is a2
    assert [synthetic_ids(m) for m in out[3:5]] == [["tu_1"], ["tu_3"]]
    assert out[5] is answered
    assert len(out) == 6


def test_repair_tool_use_as_last_message():
    history = [user_message("go"), assistant(text("sure")), assistant(tool_use("tu_1"))]
    out = repair_dangling_tool_uses(history)
    assert out[:3] == history
    assert synthetic_ids(out[3]) == ["tu_1"]
    assert len(out) == 4


def test_repair_leaves_a_valid_history_alone():
    history = [user_message("go"), assistant(tool_use("tu_1")), tool_result_message("tu_1", "ok"),
               assistant(text("done"))]
    assert repair_dangling_tool_uses(history) == history


def test_repair_drops_orphan_and_duplicate_tool_results():
    orphan_only = tool_result_message("tu_ghost", "??")
    mixed = user_message([{"type": "tool_result", "tool_use_id": "tu_ghost2", "content": "x"},
                          {"type": "tool_result", "tool_use_id": "tu_1", "content": "ok"},
                          text("and a note")])
    duplicate = tool_result_message("tu_1", "again")
    history = [user_message("go"), orphan_only, assistant(tool_use("tu_1")), mixed, duplicate]
    out = repair_dangling_tool_uses(history)
    assert [m.role for m in out] == ["user", "assistant", "user"]
    assert out[2].uuid == mixed.uuid
    assert out[2].content == mixed.content[1:]
    assert len(mixed.content) == 3  # the input is not mutated


def test_load_repairs_but_keeps_raw_entries(path):
    w = writer(path)
    w.append_message(user_message("go"))
    w.append_message(assistant(tool_use("tu_1"), stop_reason="tool_use"))
    w.append_message(tool_result_message("tu_ghost", "orphan"))
    w.close()  # crash before tu_1's result was recorded
    loaded = load_transcript(path)
    assert [m.role for m in loaded.messages] == ["user", "assistant", "user"]
    assert synthetic_ids(loaded.messages[2]) == ["tu_1"]
    assert [e["type"] for e in loaded.entries] == ["user", "assistant", "user"]
    assert loaded.entries[2]["message"]["content"][0]["tool_use_id"] == "tu_ghost"


def test_tail_handling_across_large_records(path):
    w = writer(path)
    first = w.append_message(user_message("x" * 150_000))
    second = w.append_message(assistant(text("y" * 70_000)))
    w.close()
    with open(path, "ab") as f:
        f.write(b'{"type":"assistant","message":' + b"z" * 100_000)  # torn, spans several blocks
    w2 = writer(path)
    assert w2.last_uuid == second["uuid"]
    third = w2.append_message(user_message("small"))
    w2.close()
    loaded = load_transcript(path)
    assert loaded.warnings == []
    assert [m.uuid for m in loaded.messages] == [first["uuid"], second["uuid"], third["uuid"]]
    assert third["parentUuid"] == second["uuid"]


def test_metadata_entries_hang_off_the_chain_without_extending_it(path):
    w = writer(path)
    first = w.append_message(user_message("hi"))
    tomb = w.append_entry({"type": "tombstone", "targetUuid": "x"})
    denial = w.append_entry({"type": "permission-denial", "tool_name": "Bash"})
    second = w.append_message(user_message("again"))
    w.close()
    assert tomb["parentUuid"] == denial["parentUuid"] == first["uuid"]
    assert second["parentUuid"] == first["uuid"]          # the message chain skips the metadata
    assert load_transcript(path).last_uuid == second["uuid"]
    w2 = writer(path)                                      # reopened: continues from the last message
    third = w2.append_entry({"type": "ended-by-model"})
    w2.close()
    assert third["parentUuid"] == second["uuid"] and load_transcript(path).last_uuid == second["uuid"]
