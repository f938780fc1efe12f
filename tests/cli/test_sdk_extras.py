"""Acceptance through the official `claude-agent-sdk`: in-process SDK MCP servers (JSON-RPC over
`mcp_message`), programmatic subagents (`agents=`) with their task events and SubagentStart /
SubagentStop hooks, and `session_store=` (`--session-mirror`)."""

import json

import pytest

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
from claude_agent_sdk import (AgentDefinition, ClaudeSDKClient, HookMatcher, ResultMessage, SystemMessage,  # noqa: E402
                              TaskNotificationMessage, TaskProgressMessage, TaskStartedMessage, create_sdk_mcp_server,
                              query, tool)

from fakeapi import ScriptedAPI, sse, text, tool_use  # noqa: E402
from test_sdk_interop import _real_cli, options  # noqa: E402


async def test_sdk_mcp_server_tools_are_offered_and_called(tmp_path):
    cli = _real_cli(tmp_path)
    calls = []

    @tool("add", "Add two integers", {"a": int, "b": int})
    async def add(args):
        calls.append(args)
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']}"}]}

    @tool("fail", "Always fails", {})
    async def fail(args):
        raise ValueError("calculator on fire")

    server = create_sdk_mcp_server("calc", version="1.0.0", tools=[add, fail])
    (tmp_path / ".claude").mkdir()
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    for folder in (tmp_path, tmp_path / ".claude", tmp_path / "home" / ".claude"):
        (folder / "CLAUDE.md").write_text("Use tabs.\n")
    api = ScriptedAPI(sse(tool_use("mcp__calc__add", {"a": 2, "b": 3}, id="m1"),
                          tool_use("mcp__calc__fail", {}, id="m2")),
                      sse(text("2 + 3 = 5")))
    with api.serve() as url:
        async with ClaudeSDKClient(options=options(cli, url, tmp_path, mcp_servers={"calc": server},
                                                   allowed_tools=["mcp__calc__add", "mcp__calc__fail"],
                                                   setting_sources=["user", "project"])) as client:
            await client.query("add 2 and 3")
            messages = [m async for m in client.receive_response()]
            status = await client.get_mcp_status()
            usage = await client.get_context_usage()
    assert calls == [{"a": 2, "b": 3}]
    # get_context_usage: what /context shows, in the SDK's ContextUsageResponse shape
    names = [c["name"] for c in usage["categories"]]
    assert names[:4] == ["System prompt", "System tools", "MCP tools", "Memory files"] and "Messages" in names
    assert all(isinstance(c["tokens"], int) and c["color"].startswith("#") for c in usage["categories"])
    assert usage["rawMaxTokens"] >= usage["maxTokens"] > usage["totalTokens"] > 0
    assert usage["totalTokens"] == sum(c["tokens"] for c in usage["categories"]
                                       if c["name"] not in ("Free space", "Autocompact buffer"))
    assert {t["name"]: t["serverName"] for t in usage["mcpTools"]} == {"mcp__calc__add": "calc",
                                                                      "mcp__calc__fail": "calc"}
    assert "Bash" in [t["name"] for t in usage["systemTools"]] and len(usage["gridRows"]) == 10
    home = (tmp_path / "home").resolve()
    assert {f["path"]: f["type"] for f in usage["memoryFiles"]} == {
        str(home / ".claude" / "CLAUDE.md"): "User", str(tmp_path.resolve() / "CLAUDE.md"): "Project",
        str(tmp_path.resolve() / ".claude" / "CLAUDE.md"): "Project"}
    offered = api.requests[0].tool_names
    assert "mcp__calc__add" in offered and "mcp__calc__fail" in offered
    add_spec = next(t for t in api.requests[0].body["tools"] if t["name"] == "mcp__calc__add")
    assert set(add_spec["input_schema"]["properties"]) == {"a", "b"}
    assert "sum=5" in json.dumps(api.requests[1].tool_result("m1"))
    failed = api.requests[1].tool_result("m2")
    assert failed.get("is_error") and "calculator on fire" in json.dumps(failed)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"name": "calc", "status": "connected"} in [{k: s[k] for k in ("name", "status")}
                                                        for s in init.data["mcp_servers"]]
    assert [s["status"] for s in status["mcpServers"] if s["name"] == "calc"] == ["connected"]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "2 + 3 = 5" and not result.is_error


async def test_programmatic_subagent_with_task_events_and_hooks(tmp_path):
    cli = _real_cli(tmp_path)
    (tmp_path / "code.py").write_text("x = 1\n")
    seen: dict[str, list] = {}

    def recorder(event, answer=None):
        async def hook(inp, tool_use_id, ctx):
            seen.setdefault(event, []).append(inp)
            return answer or {}
        return hook

    agents = {"reviewer": AgentDefinition(description="Reviews code for bugs", prompt="You are REVIEWER-PROMPT.",
                                          tools=["Read"], model="haiku")}
    hooks = {"SubagentStart": [HookMatcher(matcher="reviewer", hooks=[recorder("SubagentStart", {
                 "hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "CTX-FOR-SUBAGENT"}})])],
             "SubagentStop": [HookMatcher(hooks=[recorder("SubagentStop")])],
             "PreToolUse": [HookMatcher(matcher="Read", hooks=[recorder("PreToolUse")])]}
    api = ScriptedAPI(
        sse(tool_use("Task", {"description": "review code", "prompt": "Review code.py", "subagent_type": "reviewer"},
                     id="task1")),
        sse(tool_use("Read", {"file_path": str(tmp_path / "code.py")}, id="sub_r1")),
        sse(text("LGTM: x is fine")),
        sse(text("The reviewer says LGTM.")))
    with api.serve() as url:
        messages = [m async for m in query(prompt="review my code", options=options(
            cli, url, tmp_path, agents=agents, hooks=hooks, permission_mode="bypassPermissions"))]
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert "reviewer" in init.data["agents"]
    # the Agent tool (called by its old name Task here) lists the programmatic agent; the subagent ran
    # with its prompt, model and tools
    task_spec = next(t for t in api.requests[0].body["tools"] if t["name"] == "Agent")
    assert "reviewer: Reviews code for bugs" in task_spec["description"]
    sub = api.requests[1]
    assert "You are REVIEWER-PROMPT." in sub.system_text and sub.body["model"] == "claude-haiku-4-5"
    assert sub.tool_names == ["Read"] and "CTX-FOR-SUBAGENT" in json.dumps(sub.messages)
    # task events, in the shapes the SDK parses, before the result
    started = [m for m in messages if isinstance(m, TaskStartedMessage)]
    done = [m for m in messages if isinstance(m, TaskNotificationMessage)]
    assert len(started) == 1 and len(done) == 1
    assert started[0].tool_use_id == "task1" and started[0].description == "review code"
    assert started[0].task_type == "local_agent"
    assert done[0].task_id == started[0].task_id and done[0].status == "completed"
    assert "LGTM" in done[0].summary and done[0].usage["tool_uses"] == 1
    [progress] = [m for m in messages if isinstance(m, TaskProgressMessage)]
    assert progress.task_id == started[0].task_id and progress.last_tool_name == "Read"
    assert progress.usage["tool_uses"] == 1 and progress.tool_use_id == "task1"
    assert messages.index(started[0]) < messages.index(progress) < messages.index(done[0]) < len(messages) - 1
    # hooks: SubagentStart/Stop with agent fields; the subagent's PreToolUse names the agent
    [start] = seen["SubagentStart"]
    [stop] = seen["SubagentStop"]
    assert start["agent_type"] == "reviewer" and start["agent_id"] == started[0].task_id
    assert stop["agent_id"] == start["agent_id"] and stop["agent_type"] == "reviewer"
    assert stop["last_assistant_message"] == "LGTM: x is fine" and stop["agent_transcript_path"].endswith(".jsonl")
    [pre] = seen["PreToolUse"]
    assert pre["agent_id"] == start["agent_id"] and pre["agent_type"] == "reviewer"
    assert "LGTM: x is fine" in json.dumps(api.requests[3].tool_result("task1"))
    assert messages[-1].result == "The reviewer says LGTM."


async def test_cli_agents_flag_defines_subagents(tmp_path):
    import subprocess
    import sys

    cli = _real_cli(tmp_path)
    agents = json.dumps({"helper": {"description": "Helps", "prompt": "You are HELPER-PROMPT.", "tools": ["Glob"],
                                    "model": "inherit"}})
    api = ScriptedAPI(sse(tool_use("Task", {"description": "help", "prompt": "help me", "subagent_type": "helper"},
                                   id="t1")),
                      sse(text("helped")), sse(text("done")))
    env = {**options(cli, "", tmp_path).env, "PATH": "/usr/bin:/bin"}
    with api.serve() as url:
        env["ANTHROPIC_BASE_URL"] = url
        out = subprocess.run([sys.executable, "-m", "codeloop", "-p", "go", "--agents", agents,
                              "--output-format", "json", "--dangerously-skip-permissions"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "done"
    assert "You are HELPER-PROMPT." in api.requests[1].system_text and api.requests[1].tool_names == ["Glob"]
    bad = subprocess.run([sys.executable, "-m", "codeloop", "-p", "go", "--agents", '{"x": {"prompt": "p"}}'],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "missing 'description'" in bad.stderr


async def test_session_store_receives_the_mirrored_transcript(tmp_path):
    from claude_agent_sdk import InMemorySessionStore

    cli = _real_cli(tmp_path)
    store = InMemorySessionStore()
    api = ScriptedAPI(sse(text("mirrored answer")))
    opts = options(cli, "", tmp_path, session_store=store)
    opts.env["CLAUDE_CONFIG_DIR"] = str(tmp_path / ".claude-home")
    with api.serve() as url:
        opts.env["ANTHROPIC_BASE_URL"] = url
        messages = [m async for m in query(prompt="mirror me", options=opts)]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    from claude_agent_sdk._internal.sessions import _sanitize_path

    key = {"project_key": _sanitize_path(str(tmp_path.resolve())), "session_id": result.session_id}
    entries = store.get_entries(key)
    texts = json.dumps(entries)
    assert "mirror me" in texts and "mirrored answer" in texts
    assert all(e.get("sessionId", result.session_id) == result.session_id for e in entries)

    # a subagent's transcript is mirrored under its subpath, as Claude Code's layout has it
    api = ScriptedAPI(sse(tool_use("Task", {"description": "d", "prompt": "sub task", "subagent_type":
                                            "general-purpose"}, id="t1")), sse(text("sub answer")), sse(text("top")))
    with api.serve() as url:
        opts.env["ANTHROPIC_BASE_URL"] = url
        opts.resume = result.session_id
        opts.permission_mode = "bypassPermissions"
        await_messages = [m async for m in query(prompt="delegate", options=opts)]
    assert await_messages[-1].result == "top"
    subkeys = await store.list_subkeys(key)
    assert len(subkeys) == 1 and subkeys[0].startswith("subagents/agent-")
    sub_entries = store.get_entries({**key, "subpath": subkeys[0]})
    assert "sub task" in json.dumps(sub_entries) and "sub answer" in json.dumps(sub_entries)
