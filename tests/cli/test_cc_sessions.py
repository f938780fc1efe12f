"""Issue 15, sessions and results: codeloop's transcripts read by the official claude-agent-sdk's
own session readers (`list_sessions`, `get_session_messages`), truncating resume
(`resume_session_at` / `--resume-session-at`), and API-error results in Claude Code's shape.
codeloop runs as the SDK's `cli_path` (or as a subprocess) against the scripted fake API."""

import json
import subprocess

import pytest

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
from claude_agent_sdk import ResultMessage, get_session_messages, list_sessions, query  # noqa: E402

from fakeapi import ScriptedAPI, error, sse, text, tool_use  # noqa: E402
from test_print_mode import codeloop, jsonl  # noqa: E402
from test_sdk_interop import _real_cli, options  # noqa: E402


def _git_repo(path, branch):
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True)


def _sdk_options(cli, url, tmp_path, claude_dir, **kw):
    opts = options(cli, url, tmp_path, **kw)
    opts.env["CLAUDE_CONFIG_DIR"] = str(claude_dir)
    return opts


async def _run(cli, url, tmp_path, claude_dir, prompt, **kw):
    return [m async for m in query(prompt=prompt, options=_sdk_options(cli, url, tmp_path, claude_dir, **kw))]


async def test_sdk_session_readers_read_codeloop_sessions(tmp_path, monkeypatch):
    cli = _real_cli(tmp_path)
    _git_repo(tmp_path, "feature-x")
    claude_dir = tmp_path / "claude-home"
    (tmp_path / "notes.txt").write_text("the secret is 7\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}, id="r1")),
                      sse(text("The secret is 7.")))
    with api.serve() as url:
        messages = await _run(cli, url, tmp_path, claude_dir, "what is the secret?")
    sid = messages[-1].session_id
    # codeloop wrote where the SDK looks: $CLAUDE_CONFIG_DIR/projects/<key>/<id>.jsonl
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    [info] = list_sessions(directory=str(tmp_path))
    assert info.session_id == sid and info.summary == "what is the secret?"
    assert info.first_prompt == "what is the secret?" and info.git_branch == "feature-x"
    assert info.cwd == str(tmp_path.resolve()) and info.created_at is not None
    read = get_session_messages(sid, directory=str(tmp_path))
    assert [m.type for m in read] == ["user", "assistant", "user", "assistant"]
    assert all(m.session_id == sid for m in read)
    assert read[1].message["content"][0]["name"] == "Read" and read[1].message["content"][0]["id"] == "r1"
    assert read[2].message["content"][0]["tool_use_id"] == "r1"
    assert read[3].message["content"][0]["text"] == "The secret is 7."
    # the records carry Claude Code's per-message fields
    path = claude_dir / "projects" / info.cwd.replace("/", "-").replace(".", "-").replace("_", "-") / f"{sid}.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    prompt = next(r for r in records if r["type"] == "user")
    assert prompt["entrypoint"] == "sdk-py" and prompt["userType"] == "external" and prompt["gitBranch"] == "feature-x"
    assert prompt["isSidechain"] is False and prompt["promptId"] == prompt["uuid"] and prompt["version"]
    tool_result = [r for r in records if r["type"] == "user"][1]
    assert tool_result["promptId"] == prompt["uuid"]
    assert {"type": "last-prompt", "lastPrompt": "what is the secret?", "sessionId": sid} in records
    assert records[0] == {"type": "permission-mode", "permissionMode": "default", "sessionId": sid}


async def test_resume_session_at_truncates_history(tmp_path, monkeypatch):
    cli = _real_cli(tmp_path)
    claude_dir = tmp_path / "claude-home"
    api = ScriptedAPI(sse(text("one")), sse(text("two")), sse(text("after the fork point")),
                      sse(text("continued")))
    with api.serve() as url:
        async with sdk.ClaudeSDKClient(options=_sdk_options(cli, url, tmp_path, claude_dir)) as client:
            for p in ("first", "second"):
                await client.query(p)
                [m async for m in client.receive_response()]
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
        [info] = list_sessions(directory=str(tmp_path))
        sid = info.session_id
        before = get_session_messages(sid, directory=str(tmp_path))
        # the prompts are stored as the SDK sent them (strings), the answers as content blocks
        assert [m.message["content"] if isinstance(m.message["content"], str) else m.message["content"][0]["text"]
                for m in before] == ["first", "one", "second", "two"]
        keep = before[1].uuid      # the first answer; the second turn is dropped
        messages = await _run(cli, url, tmp_path, claude_dir, "instead", resume=sid, resume_session_at=keep,
                              resume_drops_turn=before[2].uuid)
        assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "after the fork point"
        assert messages[-1].session_id == sid
        sent = [(m["role"], b.get("text")) for m in api.requests[2].messages for b in m["content"]
                if b.get("type") == "text" and not b["text"].startswith("<system-reminder>")]
        assert sent == [("user", "first"), ("assistant", "one"), ("user", "instead")]
        # the SDK's reader follows the new branch; a plain resume afterwards does not resurrect the old one
        after = get_session_messages(sid, directory=str(tmp_path))
        assert [m.uuid for m in after[:2]] == [before[0].uuid, keep] and len(after) == 4
        r = codeloop(["-p", "go on", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url,
                     env={"CLAUDE_CONFIG_DIR": str(claude_dir)})
    assert r.returncode == 0, r.stderr
    texts = [b.get("text") for m in api.requests[3].messages for b in m["content"] if b.get("type") == "text"]
    assert "second" not in texts and "two" not in texts and "instead" in texts and texts[-1] == "go on"


def test_resume_session_at_errors_are_one_line(tmp_path):
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    with api.serve() as url:
        first = codeloop(["-p", "first", "--output-format", "json"], cwd=tmp_path, base_url=url)
        sid = json.loads(first.stdout)["session_id"]
        second = codeloop(["-p", "second", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url)
        assert second.returncode == 0
    records = [json.loads(x) for p in (tmp_path / ".cfg" / "projects").rglob(f"{sid}.jsonl")
               for x in p.read_text().splitlines()]
    prompts = [r for r in records if r["type"] == "user"]
    size = sum(p.stat().st_size for p in (tmp_path / ".cfg" / "projects").rglob(f"{sid}.jsonl"))
    missing = codeloop(["-p", "x", "--resume", sid, "--resume-session-at", "00000000-0000-4000-8000-000000000000"],
                       cwd=tmp_path)
    assert missing.returncode == 1 and len(missing.stderr.strip().splitlines()) == 1
    assert "no message 00000000-0000-4000-8000-000000000000" in missing.stderr and "Traceback" not in missing.stderr
    # dropping the second turn while naming the first as the one dropped is refused, and nothing is written
    refused = codeloop(["-p", "x", "--resume", sid, f"--resume-session-at={prompts[0]['uuid']}",
                        f"--resume-drops-turn={prompts[0]['uuid']}"], cwd=tmp_path)
    assert refused.returncode == 1 and "Resume rejected by --resume-drops-turn:" in refused.stderr
    assert sum(p.stat().st_size for p in (tmp_path / ".cfg" / "projects").rglob(f"{sid}.jsonl")) == size
    alone = codeloop(["-p", "x", "--resume-session-at", prompts[0]["uuid"]], cwd=tmp_path)
    assert alone.returncode == 1 and "needs --resume" in alone.stderr


def test_fork_at_keeps_only_the_kept_records(tmp_path):
    api = ScriptedAPI(sse(text("one")), sse(text("two")), sse(text("forked")))
    with api.serve() as url:
        sid = json.loads(codeloop(["-p", "first", "--output-format", "json"], cwd=tmp_path, base_url=url).stdout)[
            "session_id"]
        codeloop(["-p", "second", "--resume", sid], cwd=tmp_path, base_url=url)
        [path] = (tmp_path / ".cfg" / "projects").rglob(f"{sid}.jsonl")
        original = path.read_bytes()
        answer = next(json.loads(x) for x in original.decode().splitlines() if json.loads(x)["type"] == "assistant")
        r = codeloop(["-p", "third", "--resume", sid, "--fork-session", "--resume-session-at", answer["uuid"],
                      "--output-format", "json"], cwd=tmp_path, base_url=url)
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["session_id"] != sid and path.read_bytes() == original
    texts = [b.get("text") for m in api.requests[2].messages for b in m["content"] if b.get("type") == "text"]
    assert "one" in texts and "two" not in texts and "second" not in texts and texts[-1] == "third"
    [forked] = (tmp_path / ".cfg" / "projects").rglob(f"{res['session_id']}.jsonl")
    assert all(json.loads(x).get("sessionId") in (None, res["session_id"]) for x in forked.read_text().splitlines())


def test_old_transcripts_without_the_new_fields_still_resume(tmp_path):
    sid = "0b9c8e1e-7a43-4d7e-9c1a-3f3d6a2b1c01"
    key = str(tmp_path.resolve()).replace("/", "-").replace(".", "-").replace("_", "-")
    folder = tmp_path / ".cfg" / "projects" / key
    folder.mkdir(parents=True)
    old = [{"type": "user", "uuid": "11111111-1111-4111-8111-111111111111", "parentUuid": None, "sessionId": sid,
            "timestamp": "2025-01-01T00:00:00Z", "cwd": str(tmp_path), "version": "0.1.0",
            "message": {"role": "user", "content": [{"type": "text", "text": "old prompt"}]}},
           {"type": "assistant", "uuid": "22222222-2222-4222-8222-222222222222",
            "parentUuid": "11111111-1111-4111-8111-111111111111", "sessionId": sid,
            "timestamp": "2025-01-01T00:00:01Z", "cwd": str(tmp_path), "version": "0.1.0",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "old answer"}]}}]
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in old))
    api = ScriptedAPI(sse(text("new answer")))
    with api.serve() as url:
        # CLAUDE_CONFIG_DIR now points elsewhere: the session written in codeloop's own store is still found
        r = codeloop(["-p", "again", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url,
                     env={"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-home")})
    assert r.returncode == 0, r.stderr
    texts = [b.get("text") for m in api.requests[0].messages for b in m["content"] if b.get("type") == "text"]
    assert "old prompt" in texts and "old answer" in texts and texts[-1] == "again"


# -- API-error results --------------------------------------------------------------------------------

def test_api_error_result_has_claude_codes_shape(tmp_path):
    api = ScriptedAPI(error(400, "invalid_request_error", "messages: text content blocks must be non-empty"),
                      error(400, "invalid_request_error", "messages: text content blocks must be non-empty"))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--output-format", "json"], cwd=tmp_path, base_url=url)
        s = codeloop(["-p", "hi", "--output-format", "stream-json", "--verbose"], cwd=tmp_path, base_url=url)
    for proc, res in ((r, json.loads(r.stdout)), (s, jsonl(s.stdout)[-1])):
        assert proc.returncode == 1 and res["type"] == "result"
        assert res["subtype"] == "success" and res["is_error"] is True and res["api_error_status"] == 400
        assert res["result"] == "API Error: 400 messages: text content blocks must be non-empty"
        assert res["terminal_reason"] == "api_error"


async def test_sdk_sees_the_api_error_payload(tmp_path):
    cli = _real_cli(tmp_path)
    api = ScriptedAPI(error(400, "invalid_request_error", "bad request body"))
    got: list = []
    with api.serve() as url:
        with pytest.raises(Exception) as exc_info:
            async for m in query(prompt="hi", options=options(cli, url, tmp_path)):
                got.append(m)
    result = got[-1]
    assert isinstance(result, ResultMessage) and result.is_error and result.subtype == "success"
    assert result.result == "API Error: 400 bad request body" and result.api_error_status == 400
    assert "API Error: 400 bad request body" in str(exc_info.value) or \
        getattr(exc_info.value, "api_error_status", None) == 400


def test_connection_error_result_text(tmp_path):
    r = codeloop(["-p", "hi", "--output-format", "json"], cwd=tmp_path, base_url="http://127.0.0.1:9",
                 env={"CODELOOP_MAX_RETRIES": "0"})
    res = json.loads(r.stdout)
    assert r.returncode == 1 and res["is_error"] is True and res["result"].startswith("API Error")
    assert "api_error_status" not in res


async def test_resume_from_a_session_store_alone(tmp_path):
    """The SDK resumes a `session_store=` session by writing it into a temporary CLAUDE_CONFIG_DIR
    and passing --resume: codeloop finds it there, with no local transcript left."""
    import shutil

    from claude_agent_sdk import InMemorySessionStore

    cli = _real_cli(tmp_path)
    store = InMemorySessionStore()
    claude_dir = tmp_path / "claude-home"
    api = ScriptedAPI(sse(text("stored answer")), sse(text("resumed from the store")))
    with api.serve() as url:
        first = await _run(cli, url, tmp_path, claude_dir, "remember PLUM", session_store=store)
        sid = first[-1].session_id
        shutil.rmtree(claude_dir / "projects")                  # only the store has the session now
        second = await _run(cli, url, tmp_path, claude_dir, "what fruit?", session_store=store, resume=sid)
    assert isinstance(second[-1], ResultMessage) and second[-1].result == "resumed from the store", second[-1]
    texts = [b.get("text") for m in api.requests[1].messages for b in m["content"] if b.get("type") == "text"]
    assert "remember PLUM" in texts and "stored answer" in texts and texts[-1] == "what fruit?"
