"""session.hold (one writer per session, by flock) and session.branches (one conversation out of a
branched transcript), on real files. Holds across processes are tested with real `codeloop`
processes in tests/cli/test_concurrent_sessions_cli.py."""

import json
import os
import subprocess
import sys

import pytest

from codeloop.messages import Message, user_message
from codeloop.session.branches import one_chain
from codeloop.session.hold import Holder, SessionHold, acquire, holder, lock_path
from codeloop.session.transcript import TranscriptWriter, load_transcript

pytest.importorskip("fcntl")


def test_a_second_hold_is_refused_with_the_holder_and_release_frees_it(tmp_path):
    transcript = tmp_path / "s.jsonl"
    first = acquire(transcript, settled=lambda: "tip-1")
    assert isinstance(first, SessionHold) and lock_path(transcript).exists()
    second = acquire(transcript)   # flock is per open file: this process's second attempt is refused too
    assert isinstance(second, Holder) and second.pid == os.getpid() and second.settled == "tip-1"
    assert holder(transcript) == second
    first.settle("tip-2")
    assert holder(transcript).settled == "tip-2"
    first.release()
    assert not lock_path(transcript).exists() and holder(transcript) is None
    again = acquire(transcript)
    assert isinstance(again, SessionHold)
    again.release()


def test_a_probe_never_creates_the_lock_nor_blocks_an_acquirer(tmp_path):
    transcript = tmp_path / "s.jsonl"
    assert holder(transcript) is None and not lock_path(transcript).exists()
    lock_path(transcript).write_text("")   # left by a writer that died: stale, no lock on it
    assert holder(transcript) is None
    got = acquire(transcript)
    assert isinstance(got, SessionHold)
    got.release()


def test_a_dead_holders_lock_is_taken_over(tmp_path):
    transcript = tmp_path / "s.jsonl"
    code = ("import sys, os; from pathlib import Path; from codeloop.session.hold import acquire; "
            f"h = acquire(Path({str(transcript)!r})); print(os.getpid(), flush=True); os._exit(0)")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert lock_path(transcript).exists()   # its exit released nothing by hand; the kernel dropped the lock
    assert json.loads(lock_path(transcript).read_text())["pid"] == int(child.stdout)
    got = acquire(transcript)
    assert isinstance(got, SessionHold)
    assert json.loads(lock_path(transcript).read_text())["pid"] == os.getpid()
    got.release()


def _rec(kind, uid, parent, said, msg_id=None, **extra):
    content = said if isinstance(said, list) else [{"type": "text", "text": said}]
    message = {"role": kind, "content": content, **({"id": msg_id} if msg_id else {})}
    return {"type": kind, "uuid": uid, "parentUuid": parent, "message": message, **extra}


def test_one_chain_follows_the_newest_leaf_and_keeps_split_tool_calls():
    use_a = {"type": "tool_use", "id": "ta", "name": "Read", "input": {}}
    use_b = {"type": "tool_use", "id": "tb", "name": "Read", "input": {}}
    entries = [
        _rec("user", "u1", None, "first"),
        _rec("assistant", "a1", "u1", [use_a], msg_id="m1"),
        _rec("assistant", "a1b", "a1", [use_b], msg_id="m1"),
        # Claude Code hangs a parallel call's results off their own tool_use: a branch to keep
        _rec("user", "ra", "a1", [{"type": "tool_result", "tool_use_id": "ta", "content": "A"}]),
        _rec("user", "rb", "a1b", [{"type": "tool_result", "tool_use_id": "tb", "content": "B"}]),
        _rec("assistant", "a2", "rb", "done", msg_id="m2"),
        # two conversations went on from a2 at once
        _rec("user", "p1", "a2", "one"), _rec("user", "p2", "a2", "two"),
        {"type": "permission-denial", "uuid": "d1", "parentUuid": "p1", "tool_name": "Bash"},
        _rec("assistant", "x1", "p1", "answer one", msg_id="m3"),
        _rec("assistant", "x2", "p2", "answer two", msg_id="m4"),
        {"type": "custom-title", "customTitle": "t"},
    ]
    kept = [e.get("uuid") for e in one_chain(entries)]
    assert kept == ["u1", "a1", "a1b", "ra", "rb", "a2", "p2", "x2", None]
    assert [e.get("uuid") for e in one_chain(entries, "x1")] == ["u1", "a1", "a1b", "ra", "rb", "a2", "p1", "d1",
                                                                  "x1", None]
    linear = entries[:3]
    assert one_chain(linear) is linear   # a file that never branches is read as it is


def test_a_branched_file_loads_one_conversation_and_the_writer_goes_on_from_its_tip(tmp_path):
    path = tmp_path / "s.jsonl"
    base = TranscriptWriter(path, "sid", str(tmp_path))
    base.append_message(user_message("first"))
    base.append_message(Message("assistant", [{"type": "text", "text": "answer"}], id="m0"))
    base.close()
    one, two = TranscriptWriter(path, "sid", str(tmp_path)), TranscriptWriter(path, "sid", str(tmp_path))
    assert one.last_uuid == two.last_uuid   # both read the tail before either wrote: the old race
    one.append_message(user_message("one"))
    two.append_message(user_message("two"))
    one.append_message(Message("assistant", [{"type": "text", "text": "answer one"}], id="m1"))
    two.append_message(Message("assistant", [{"type": "text", "text": "answer two"}], id="m2"))
    one.close()
    two.close()
    loaded = load_transcript(path)
    assert [m.text for m in loaded.messages] == ["first", "answer", "two", "answer two"]   # the newest leaf's
    assert len(load_transcript(path, every_branch=True).messages) == 6


def test_one_chain_walks_through_claude_codes_progress_records():
    entries = [
        _rec("user", "u1", None, "first"),
        {"type": "progress", "uuid": "g1", "parentUuid": "u1", "data": {}},
        _rec("assistant", "a1", "g1", "answer", msg_id="m1"),
        _rec("user", "p1", "a1", "one"), _rec("user", "p2", "a1", "two"),
        _rec("assistant", "x2", "p2", "answer two", msg_id="m2"),
    ]
    assert [e["uuid"] for e in one_chain(entries)] == ["u1", "g1", "a1", "p2", "x2"]


def test_a_prompt_another_process_hung_its_prompt_off_is_left_out():
    """Old race: the second process read the tail after the first wrote its prompt, so its prompt
    hangs off that prompt; the first's answer hangs off the first prompt."""
    entries = [
        _rec("user", "u1", None, "first"), _rec("assistant", "a1", "u1", "answer", msg_id="m1"),
        _rec("user", "p1", "a1", "one"), _rec("user", "p2", "p1", "two"),
        _rec("assistant", "x1", "p1", "answer one", msg_id="m2"),
        _rec("assistant", "x2", "p2", "answer two", msg_id="m3"),
    ]
    assert [e["uuid"] for e in one_chain(entries)] == ["u1", "a1", "p2", "x2"]
    assert [e["uuid"] for e in one_chain(entries, "x1")] == ["u1", "a1", "p1", "x1"]
    crashed = [*entries[:4], _rec("assistant", "x2", "p2", "answer two", msg_id="m3")]   # p1 never answered
    assert [e["uuid"] for e in one_chain(crashed)] == ["u1", "a1", "p1", "p2", "x2"]
