"""Compaction that keeps what matters, never fails for length, and resumes from the last boundary."""

import json

from fakeapi import ScriptedAPI, error, sse, text
from codeloop.context.compact import (DROPPED_OUTPUT, LAST_REQUEST_PREFIX, Compactor, build_post_compact_messages,
                                      recent_files_from_messages)
from codeloop.session.resume import load_from_last_boundary, messages_after_last_boundary
from codeloop.messages import user_message
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.transcript import TranscriptWriter, load_transcript
from ctxhelpers import exchange, reply

PTL = "prompt is too long: 250000 tokens > 200000 maximum"
TODOS = [{"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing the parser"},
         {"content": "Ünïcode — keep verbatim", "status": "pending", "activeForm": "Keeping"}]


def compactor(api, **kw):
    return Compactor(AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                     "claude-sonnet-4-5", **kw)


def request_text(req) -> str:
    return "\n".join(b.get("text", "") if b.get("type") == "text" else json.dumps(b)
                     for m in req.messages for b in m["content"])


def work_history(tmp_path):
    f = tmp_path / "app.py"
    f.write_text("VERSION = 1\n")
    gone = tmp_path / "gone.py"
    msgs = [user_message("refactor app.py")]
    msgs += exchange("Read", {"file_path": str(f)}, "t1", "VERSION = 1")
    msgs += exchange("Read", {"file_path": str(gone)}, "t2", "old")
    msgs.append(reply("done reading"))
    msgs.append(user_message("now bump the version please"))
    msgs += exchange("Edit", {"file_path": "app.py", "old_string": "1", "new_string": "2"}, "t3", "ok")
    return msgs, f, gone


async def test_post_compact_history_keeps_what_matters(tmp_path):
    msgs, f, gone = work_history(tmp_path)
    f.write_text("VERSION = 2  # changed on disk after it was read\n")
    api = ScriptedAPI(sse(text("<summary>We refactored app.py.</summary>")))
    out = await compactor(api).compact(msgs, instructions="Always use tabs.\nNever push.", todos=TODOS, cwd=tmp_path)
    texts = [m.text for m in out.messages]
    assert texts[0].endswith("We refactored app.py.") and out.summary == "We refactored app.py."
    assert all(m.is_meta and m.role == "user" for m in out.messages)
    assert any("Always use tabs.\nNever push." in t for t in texts)
    todo_msg = next(t for t in texts if "Fix the parser" in t)
    assert json.loads(todo_msg[todo_msg.index("["):]) == TODOS
    file_msgs = [t for t in texts if t.startswith("Contents of ")]
    assert len(file_msgs) == 1 and "VERSION = 2  # changed on disk" in file_msgs[0]   # fresh, not stale
    assert not any(str(gone) in t for t in file_msgs)                                  # vanished: skipped
    assert texts[-1] == LAST_REQUEST_PREFIX + "now bump the version please"
    assert out.trigger == "auto" and out.pre_tokens > 0
    # The summary request carried the history and the instructions, and no tools.
    req = api.requests[0]
    assert "<summary>" in request_text(req) and "tools" not in req.body


def test_recent_files_most_recent_first_and_unique(tmp_path):
    msgs, f, gone = work_history(tmp_path)
    assert recent_files_from_messages(msgs) == ["app.py", str(gone), str(f)]
    assert recent_files_from_messages(msgs, limit=1) == ["app.py"]


def test_file_reinjection_respects_count_and_char_budget(tmp_path):
    paths = []
    for i in range(7):
        p = tmp_path / f"f{i}.txt"
        p.write_text(str(i) * 20_000)
        paths.append(str(p))
    (tmp_path / "bin.dat").write_bytes(b"\x00\x01binary")
    post = build_post_compact_messages("S", recent_files=[str(tmp_path / "bin.dat"), *paths], cwd=tmp_path,
                                       max_files=5, files_budget_chars=50_000)
    files = [m.text for m in post if m.text.startswith("Contents of ")]
    assert len(files) == 3                                  # 20k + 20k + 10k (truncated) = the budget
    assert "truncated to fit the budget" in files[2] and "2" * 10_000 in files[2] and "2" * 10_001 not in files[2]
    assert not any("bin.dat" in t for t in files)
    assert len(build_post_compact_messages("S", recent_files=paths, files_budget_chars=10**9, max_files=5)) == 6


def test_reinjection_rereads_no_file_swapped_for_a_link_or_a_fifo(tmp_path):
    """The model read notes.md and plan.md; a command then swapped them for a link to a secret and
    a FIFO. Compaction re-reads neither (nor hangs), and still re-reads the plain file beside them."""
    import os

    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.md").symlink_to(secret)
    os.mkfifo(proj / "plan.md")
    (proj / "app.py").write_text("x = 1")
    post = build_post_compact_messages("S", recent_files=["notes.md", "plan.md", "bad\0name", "app.py"], cwd=proj)
    files = [m.text for m in post if m.text.startswith("Contents of ")]
    assert len(files) == 1 and "x = 1" in files[0] and "PRIVATE KEY" not in "".join(m.text for m in post)


async def test_manual_compact_uses_the_focus_text(tmp_path):
    msgs, *_ = work_history(tmp_path)
    api = ScriptedAPI(sse(text("<summary>focused</summary>")))
    out = await compactor(api).compact(msgs, trigger="manual", focus="the version bump")
    assert out.trigger == "manual"
    assert "Focus especially on: the version bump" in request_text(api.requests[0])


async def test_context_source_supplies_defaults_for_the_reactive_path(tmp_path):
    msgs, *_ = work_history(tmp_path)
    api = ScriptedAPI(sse(text("<summary>s</summary>")))
    comp = compactor(api, context=lambda: {"instructions": "Use tabs.", "todos": TODOS, "recent_files": []})
    out = await comp.try_reactive_compact(has_attempted=False, messages=msgs, model="claude-sonnet-4-5")
    assert any("Use tabs." in m.text for m in out.messages)
    assert any("Fix the parser" in m.text for m in out.messages)
    assert await comp.try_reactive_compact(has_attempted=True, messages=msgs, model="x") is None
    failing = compactor(ScriptedAPI(error(500, "api_error", "down")))
    assert await failing.try_reactive_compact(has_attempted=False, messages=msgs, model="x") is None


def big_history():
    msgs = []
    for i in range(10):
        msgs.append(user_message(f"request {i}: " + "u" * 8_000))
        msgs += exchange("Bash", {"command": f"step {i}a"}, f"a{i}", f"out {i}a " + "o" * 5_000)
        msgs += exchange("Bash", {"command": f"step {i}b"}, f"b{i}", f"out {i}b " + "o" * 5_000)
        msgs.append(reply(f"finished step {i}"))
    return msgs


async def test_too_long_drops_old_tool_outputs_then_summarises_in_chunks():
    limit = 60_000

    def by_size(req):
        if len(json.dumps(req.body)) > limit:
            return error(400, "invalid_request_error", PTL)
        return sse(text(f"<summary>S{len(api.requests)}</summary>"))

    api = ScriptedAPI(*[by_size] * 10)
    msgs = big_history()
    out = await compactor(api).compact(msgs)
    reqs = api.requests
    assert len(reqs) == 5
    # 1: everything; 2: the oldest half of the tool outputs dropped; 3: all of them dropped.
    assert "o" * 5_000 in request_text(reqs[0])
    second = request_text(reqs[1])
    assert second.count(DROPPED_OUTPUT) == 10 and "out 9b " + "o" * 5_000 in second and "out 0a" not in second
    assert request_text(reqs[2]).count(DROPPED_OUTPUT) == 20
    # 4: the older half as a chunk; 5: the rest, given the first chunk's summary.
    fourth, fifth = request_text(reqs[3]), request_text(reqs[4])
    assert "request 0:" in fourth and "request 9:" not in fourth
    assert "S4" in fifth and "request 9:" in fifth and "request 0:" not in fifth
    assert out.summary == "S5"
    assert out.messages[-1].text.startswith(LAST_REQUEST_PREFIX + "request 9:")


async def test_chunks_that_are_still_too_long_are_split_again():
    limit = 40_000

    def by_size(req):
        if len(json.dumps(req.body)) > limit:
            return error(400, "invalid_request_error", PTL)
        return sse(text(f"<summary>S{len(api.requests)}</summary>"))

    api = ScriptedAPI(*[by_size] * 30)
    out = await compactor(api).compact(big_history())
    ok = [r for r in api.requests if len(json.dumps(r.body)) <= limit]
    assert len(ok) >= 3 and out.summary == f"S{len(api.requests)}"
    assert "request 9:" in request_text(api.requests[-1])


async def test_other_errors_are_not_retried():
    api = ScriptedAPI(error(400, "invalid_request_error", "messages: roles must alternate"))
    comp = compactor(api)
    try:
        await comp.compact([user_message("hi")])
    except Exception as err:  # noqa: BLE001
        assert "alternate" in str(err)
    else:
        raise AssertionError("expected the error to propagate")
    assert len(api.requests) == 1


# -- resume after compaction ---------------------------------------------------------------------------
def write_session(path, *, boundaries=1):
    w = TranscriptWriter(path, "sess", "/tmp")
    for i in range(50):
        w.append_message(user_message(f"old {i} mentions \"compact_boundary\" in text"))
        w.append_message(reply(f"old answer {i}"))
    post = []
    for b in range(boundaries):
        w.append_entry({"type": "system", "subtype": "compact_boundary",
                        "compactMetadata": {"trigger": "auto", "preTokens": 1000 + b}})
        post = [user_message(f"summary {b}", is_meta=True), user_message(f"last request {b}", is_meta=True)]
        for m in post:
            w.append_message(m)
    after = [reply("continuing"), *exchange("Read", {"file_path": "x"}, "r1", "content")]
    for m in after:
        w.append_message(m)
    w.close()
    return post + after


def test_load_from_last_boundary_returns_only_what_follows(tmp_path):
    path = tmp_path / "s.jsonl"
    expected = write_session(path, boundaries=2)
    loaded = load_from_last_boundary(path)
    assert [m.uuid for m in loaded.messages] == [m.uuid for m in expected]
    assert loaded.entries[0]["compactMetadata"]["preTokens"] == 1001
    assert loaded.last_uuid == expected[-1].uuid and loaded.warnings == []
    full = load_transcript(path)
    assert [m.uuid for m in messages_after_last_boundary(full.entries)] == [m.uuid for m in expected]
    assert full.last_uuid == loaded.last_uuid


def test_load_without_boundary_reads_everything(tmp_path):
    path = tmp_path / "s.jsonl"
    w = TranscriptWriter(path, "sess", "/tmp")
    for i in range(3):
        w.append_message(user_message(f"mentions \"compact_boundary\" {i}"))
    w.close()
    loaded = load_from_last_boundary(path)
    assert [m.text for m in loaded.messages] == [m.text for m in load_transcript(path).messages]
    assert len(loaded.messages) == 3 and messages_after_last_boundary(load_transcript(path).entries)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert load_from_last_boundary(empty).messages == []


def test_load_from_boundary_repairs_and_honours_tombstones(tmp_path):
    path = tmp_path / "s.jsonl"
    w = TranscriptWriter(path, "sess", "/tmp")
    w.append_message(user_message("before"))
    w.append_entry({"type": "compact_boundary"})
    keep = user_message("kept")
    gone = reply("retracted")
    w.append_message(keep)
    w.append_message(gone)
    w.append_entry({"type": "tombstone", "targetUuid": gone.uuid})
    dangling = exchange("Bash", {"command": "x"}, "d1", "never written")[0]
    w.append_message(dangling)
    w.close()
    with open(path, "ab") as f:
        f.write(b'{"type":"user","torn')
    loaded = load_from_last_boundary(path)
    assert [m.uuid for m in loaded.messages[:2]] == [keep.uuid, dangling.uuid]
    assert loaded.messages[2].content[0]["is_error"] is True          # synthetic result for the dangling call
    assert loaded.warnings and "corrupt" in loaded.warnings[0]
