"""stream-json input (`-p --input-format stream-json`): multi-turn sessions, replay, and the control
protocol (initialize, interrupt, set_permission_mode, set_model, can_use_tool, hook_callback),
driven in-process through `run_stream_json` with fake stdin/stdout, plus the CLI as a subprocess."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.cli.headless.stream_json import StreamJsonSession, serve
from codeloop.config.settings import LoadedSettings
from codeloop.session.options import (InputFormat, Limits, OutputFormat, OutputOptions, PermissionOptions,
                                      RunOptions)
from codeloop.session.parts import SessionParts
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.tools.registry import builtin_tools

SID = "22222222-3333-4444-8555-666666666666"


class Pipe:
    """Fake stdin (lines the test sends) and stdout (parsed JSON lines the test waits for)."""

    def __init__(self):
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.lines: list[dict] = []
        self._buf = ""
        self._changed = asyncio.Event()

    async def stdin(self):
        while (line := await self.inbox.get()) is not None:
            yield line

    def send(self, obj):
        self.inbox.put_nowait(json.dumps(obj) + "\n")

    def user(self, content, **extra):
        self.send({"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None,
                   "session_id": "default", **extra})

    def control(self, rid, **request):
        self.send({"type": "control_request", "request_id": rid, "request": request})

    def eof(self):
        self.inbox.put_nowait(None)

    def write(self, s):
        self._buf += s
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self.lines.append(json.loads(line))
            self._changed.set()

    def flush(self):
        pass

    async def wait_for(self, pred, start=0):
        async def poll():
            while True:
                for line in self.lines[start:]:
                    if pred(line):
                        return line
                self._changed.clear()
                await self._changed.wait()
        return await asyncio.wait_for(poll(), 30)   # a hang guard, not a timing assertion


def options_for(tmp_path, mode, *, replay_user_messages=False, permission_prompt_tool=None, json_schema=None,
                max_budget_usd=None, include_partial_messages=False):
    return RunOptions(cwd=tmp_path, settings=LoadedSettings(),
                      permissions=PermissionOptions(mode=mode, prompt_tool=permission_prompt_tool),
                      limits=Limits(json_schema=json_schema, max_budget_usd=max_budget_usd),
                      output=OutputOptions(format=OutputFormat.STREAM_JSON, input_format=InputFormat.STREAM_JSON,
                                           verbose=True, include_partial_messages=include_partial_messages,
                                           replay_user_messages=replay_user_messages))


def conv_for(api, tmp_path, mode=PermissionMode.DEFAULT, session=None):
    cfg = ConversationConfig(cwd=tmp_path, model="claude-sonnet-4-5", tools=builtin_tools(), system_prompt=["t"],
                             user_context={}, policy=PermissionPolicy(mode=mode))
    host = session.host() if session is not None else None
    return Conversation(cfg, AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                        session_id=SID, ask_user=host.ask_user if host else None,
                        parts=SessionParts(listeners=list(host.listeners) if host else []))


def start(api, tmp_path, pipe, **kw):
    mode = kw.pop("mode", PermissionMode.DEFAULT)
    session = StreamJsonSession(options_for(tmp_path, mode, **kw), pipe, pipe.stdin())
    conv = conv_for(api, tmp_path, mode, session)
    return conv, asyncio.ensure_future(serve(session, conv))


def kinds(lines):
    return [(l["type"], l.get("subtype")) for l in lines]


async def test_multi_turn_one_conversation_one_result_each(tmp_path):
    api = ScriptedAPI(sse(text("first answer")), sse(text("second answer")))
    pipe = Pipe()
    conv, task = start(api, tmp_path, pipe)
    pipe.user("first")
    pipe.user([{"type": "text", "text": "second"}])
    pipe.eof()
    assert await task == 0
    assert kinds(pipe.lines) == [("system", "init"), ("assistant", None), ("result", "success")] * 2
    results = [l for l in pipe.lines if l["type"] == "result"]
    assert [r["result"] for r in results] == ["first answer", "second answer"]
    assert {l["session_id"] for l in pipe.lines} == {SID}
    sent = [b["text"] for m in api.requests[1].messages for b in m["content"]]
    assert sent == ["first", "first answer", "second"]
    entries = [json.loads(l) for l in conv.transcript_path.read_text().splitlines()]
    assert [e["type"] for e in entries] == ["user", "assistant", "user", "assistant"]


async def test_replay_user_messages_echoes_with_uuid(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    pipe = Pipe()
    _, task = start(api, tmp_path, pipe, replay_user_messages=True)
    uid = "33333333-4444-4555-8666-777777777777"
    pipe.user("hello", uuid=uid)
    pipe.eof()
    assert await task == 0
    replay = [l for l in pipe.lines if l["type"] == "user"]
    assert len(replay) == 1 and replay[0]["uuid"] == uid and replay[0]["isReplay"] is True
    assert replay[0]["message"] == {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    assert replay[0]["session_id"] == SID and replay[0]["parent_tool_use_id"] is None


async def test_control_requests_initialize_mode_model_and_errors(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    pipe = Pipe()
    conv, task = start(api, tmp_path, pipe)
    pipe.control("req_1", subtype="initialize", hooks=None)
    init = await pipe.wait_for(lambda l: l["type"] == "control_response")
    assert init["response"]["subtype"] == "success" and init["response"]["request_id"] == "req_1"
    info = init["response"]["response"]
    assert info["output_style"] == "default" and info["commands"][0]["name"] == "compact"
    assert {m["value"] for m in info["models"]} >= {"default", "sonnet"} and info["pid"] == os.getpid()
    pipe.control("req_2", subtype="set_permission_mode", mode="acceptEdits")
    pipe.control("req_3", subtype="set_permission_mode", mode="yolo")
    pipe.control("req_4", subtype="set_model", model="haiku")
    pipe.control("req_5", subtype="rewind_files", user_message_id="x")
    pipe.user("go")
    pipe.eof()
    assert await task == 0
    responses = {l["response"]["request_id"]: l["response"] for l in pipe.lines if l["type"] == "control_response"}
    assert responses["req_2"]["subtype"] == "success" and conv.config.policy.mode is PermissionMode.ACCEPT_EDITS
    assert responses["req_3"]["subtype"] == "error" and "Invalid permission mode" in responses["req_3"]["error"]
    assert responses["req_4"]["subtype"] == "success" and conv.config.model == "claude-haiku-4-5"
    # issue 17 item 13: rewind_files is answered now; an unknown message id has no checkpoint
    assert responses["req_5"] == {"subtype": "error", "request_id": "req_5",
                                  "error": "No file checkpoint for user message 'x'"}
    assert api.requests[0].body["model"] == "claude-haiku-4-5"
    init_line = next(l for l in pipe.lines if l.get("subtype") == "init")
    assert init_line["permissionMode"] == "acceptEdits"


async def test_rewind_files_restores_the_files_of_a_user_message(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("original\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(target)}, id="r")),
                      sse(tool_use("Write", {"file_path": str(target), "content": "changed\n"}, id="w"),
                          tool_use("Write", {"file_path": str(tmp_path / "new.txt"), "content": "x"}, id="w2")),
                      sse(text("done")))
    pipe = Pipe()
    conv, task = start(api, tmp_path, pipe, mode=PermissionMode.BYPASS)
    uid = "44444444-4444-4555-8666-777777777777"
    pipe.user("change it", uuid=uid)
    await pipe.wait_for(lambda l: l["type"] == "result")
    assert target.read_text() == "changed\n"
    pipe.control("rw", subtype="rewind_files", user_message_id=uid)
    resp = await pipe.wait_for(lambda l: l["type"] == "control_response")
    pipe.eof()
    assert await task == 0
    assert resp["response"]["subtype"] == "success", resp
    assert sorted(resp["response"]["response"]["restoredFiles"]) == sorted([str(target), str(tmp_path / "new.txt")])
    assert target.read_text() == "original\n" and not (tmp_path / "new.txt").exists()


async def test_interrupt_aborts_the_running_query_and_the_session_goes_on(tmp_path):
    api = ScriptedAPI(sse(text("partial"), text("never arrives", delay=60)), sse(text("next answer")))
    pipe = Pipe()
    conv, task = start(api, tmp_path, pipe)
    pipe.user("slow")
    # the first block is shown once the next one starts; the model stalls before it, so wait on the
    # request having gone out instead
    await pipe.wait_for(lambda l: l["type"] == "system" and l.get("subtype") == "init")
    for _ in range(100):
        if api.requests:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    pipe.control("int_1", subtype="interrupt")
    first = await pipe.wait_for(lambda l: l["type"] == "result")
    assert first["is_error"] is True and first["terminal_reason"] == "aborted_streaming"
    ack = next(l for l in pipe.lines if l["type"] == "control_response")
    assert ack["response"] == {"subtype": "success", "request_id": "int_1", "response": {}}
    pipe.user("again")
    pipe.eof()
    assert await task == 0
    assert [l.get("result") for l in pipe.lines if l["type"] == "result"][-1] == "next answer"
    texts = [b.get("text") for m in api.requests[1].messages for b in m["content"]]
    assert "[Request interrupted by user]" in texts


async def test_can_use_tool_allow_and_deny_over_stdio(tmp_path):
    allowed, denied = tmp_path / "allowed.txt", tmp_path / "denied.txt"
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(allowed), "content": "orig"}, id="t_allow"),
                          tool_use("Write", {"file_path": str(denied), "content": "no"}, id="t_deny")),
                      sse(text("done")))
    pipe = Pipe()
    conv, task = start(api, tmp_path, pipe, permission_prompt_tool="stdio")
    pipe.user("write two files")
    answered = 0
    while answered < 2:
        req = await pipe.wait_for(lambda l: l["type"] == "control_request"
                                  and l["request_id"] not in set(getattr(pipe, "seen", set())))
        pipe.seen = getattr(pipe, "seen", set()) | {req["request_id"]}
        body = req["request"]
        assert body["subtype"] == "can_use_tool" and body["tool_name"] == "Write"
        assert body["permission_suggestions"] == [] and body["tool_use_id"] in ("t_allow", "t_deny")
        if body["tool_use_id"] == "t_allow":
            response = {"behavior": "allow", "updatedInput": {**body["input"], "content": "changed"}}
        else:
            response = {"behavior": "deny", "message": "not that one"}
        pipe.send({"type": "control_response", "response": {"subtype": "success", "request_id": req["request_id"],
                                                            "response": response}})
        answered += 1
    result = await pipe.wait_for(lambda l: l["type"] == "result")
    pipe.eof()
    assert await task == 0
    assert allowed.read_text() == "changed" and not denied.exists()
    assert [d["tool_use_id"] for d in result["permission_denials"]] == ["t_deny"]
    results = {b["tool_use_id"]: b for m in api.requests[1].messages for b in m["content"]
               if b.get("type") == "tool_result"}
    assert "not that one" in results["t_deny"]["content"] and results["t_deny"]["is_error"] is True


async def test_stdin_eof_while_waiting_for_permission_denies(tmp_path):
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(tmp_path / "f"), "content": "x"}, id="w1")),
                      sse(text("gave up")))
    pipe = Pipe()
    _, task = start(api, tmp_path, pipe, permission_prompt_tool="stdio")
    pipe.user("run it")
    await pipe.wait_for(lambda l: l["type"] == "control_request")
    pipe.eof()
    assert await task == 0
    result = [l for l in pipe.lines if l["type"] == "result"][-1]
    assert result["result"] == "gave up" and result["permission_denials"][0]["tool_name"] == "Write"


async def test_sdk_pre_tool_use_hook_callback(tmp_path):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo hi"}, id="b1")), sse(text("blocked")))
    pipe = Pipe()
    _, task = start(api, tmp_path, pipe, mode=PermissionMode.BYPASS)
    pipe.control("init", subtype="initialize",
                 hooks={"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}],
                        "PostToolUse": [{"matcher": None, "hookCallbackIds": ["hook_1"]}]})
    await pipe.wait_for(lambda l: l["type"] == "control_response")
    pipe.user("run")
    req = await pipe.wait_for(lambda l: l["type"] == "control_request")
    body = req["request"]
    assert body["subtype"] == "hook_callback" and body["callback_id"] == "hook_0" and body["tool_use_id"] == "b1"
    assert body["input"]["hook_event_name"] == "PreToolUse" and body["input"]["tool_input"] == {"command": "echo hi"}
    pipe.send({"type": "control_response", "response": {"subtype": "success", "request_id": req["request_id"],
              "response": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                  "permissionDecisionReason": "no shell today"}}}})
    await pipe.wait_for(lambda l: l["type"] == "result")
    pipe.eof()
    assert await task == 0
    tool_result = next(b for m in api.requests[1].messages for b in m["content"] if b.get("type") == "tool_result")
    assert "no shell today" in tool_result["content"]


async def test_bad_lines_and_empty_messages(tmp_path, capsys):
    api = ScriptedAPI(sse(text("fine")))
    pipe = Pipe()
    _, task = start(api, tmp_path, pipe)
    pipe.inbox.put_nowait("this is not json\n")
    pipe.user("")
    pipe.user("real")
    pipe.eof()
    assert await task == 0
    results = [l for l in pipe.lines if l["type"] == "result"]
    assert results[0]["is_error"] and "non-empty" in results[0]["errors"][0]
    assert results[1]["result"] == "fine"
    assert "not JSON" in capsys.readouterr().err


async def test_json_schema_and_budget(tmp_path):
    api = ScriptedAPI(sse(text("nope")), sse(text('{"ok": true}')), sse(text("more")))
    pipe = Pipe()
    _, task = start(api, tmp_path, pipe, json_schema={"type": "object", "required": ["ok"]}, max_budget_usd=0.0005)
    pipe.user("answer in JSON")
    pipe.user("and again")
    pipe.eof()
    assert await task == 1
    first, second = [l for l in pipe.lines if l["type"] == "result"]
    assert first["structured_output"] == {"ok": True} and first["subtype"] == "error_max_budget_usd"
    assert second["subtype"] == "error_max_budget_usd" and len(api.requests) == 2


# -- the CLI as a subprocess ------------------------------------------------------------------------
def _cli(argv, *, cwd, url, input):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                "HOME": str(cwd)})
    return subprocess.run([sys.executable, "-m", "codeloop", *argv], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=60)


def _help() -> str:
    return subprocess.run([sys.executable, "-m", "codeloop", "--help"], capture_output=True, text=True).stdout


def test_cli_multi_turn_over_stdin(tmp_path):
    if "--input-format" not in _help():
        pytest.skip("codeloop has no --input-format flag yet")
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p},
                                "parent_tool_use_id": None, "session_id": ""}) + "\n" for p in ("a", "b"))
    with api.serve() as url:
        r = _cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
                 cwd=tmp_path, url=url, input=lines)
    assert r.returncode == 0, r.stderr
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert [l.get("result") for l in out if l["type"] == "result"] == ["one", "two"]
    assert len({l["session_id"] for l in out}) == 1


def test_cli_input_format_needs_stream_json_output(tmp_path):
    if "--input-format" not in _help():
        pytest.skip("codeloop has no --input-format flag yet")
    r = _cli(["-p", "--input-format", "stream-json", "--output-format", "json"], cwd=tmp_path,
             url="http://127.0.0.1:9", input="")
    assert r.returncode == 1 and "requires output-format=stream-json" in r.stderr


def test_cli_replay_and_permission_prompt_flags(tmp_path):
    if "--replay-user-messages" not in _help() or "--permission-prompt-tool" not in _help():
        pytest.skip("codeloop --help lists no --replay-user-messages / --permission-prompt-tool yet (lead wires them)")
    api = ScriptedAPI(sse(text("hi")))
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "x"}, "parent_tool_use_id": None,
                       "session_id": "", "uuid": "44444444-5555-4666-8777-888888888888"}) + "\n"
    with api.serve() as url:
        r = _cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                  "--replay-user-messages", "--permission-prompt-tool", "stdio"], cwd=tmp_path, url=url, input=line)
    assert r.returncode == 0, r.stderr
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert any(l["type"] == "user" and l["uuid"] == "44444444-5555-4666-8777-888888888888" for l in out)


async def test_an_interrupted_answer_keeps_the_text_already_streamed(tmp_path):
    from fakeapi import stalled

    # "hello " arrives, then the model stalls in the middle of the block
    api = ScriptedAPI(stalled(text("hello world", chunks=2), after=4), sse(text("next answer")))
    pipe = Pipe()
    conv, task = start(api, tmp_path, pipe, include_partial_messages=True)
    pipe.user("slow")
    await pipe.wait_for(lambda l: l["type"] == "stream_event" and
                        (l["event"].get("delta") or {}).get("text") == "hello ")
    pipe.control("int_1", subtype="interrupt")
    first = await pipe.wait_for(lambda l: l["type"] == "result")
    assert first["terminal_reason"] == "aborted_streaming"
    said = [b["text"] for l in pipe.lines if l["type"] == "assistant" for b in l["message"]["content"]]
    assert said == ["hello "]                                   # as Claude Code, the partial answer stays
    pipe.user("again")
    pipe.eof()
    assert await task == 0
    sent = [(m["role"], b.get("text")) for m in api.requests[1].messages for b in m["content"]]
    assert ("assistant", "hello ") in sent and sent.index(("assistant", "hello ")) < sent.index(
        ("user", "[Request interrupted by user]"))
