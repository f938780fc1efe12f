"""MCP resources and prompts through the real CLI: a real server (tests/mcp/servers/content_server.py)
over stdio and streamable HTTP; the model faked at the HTTP layer. ListMcpResourcesTool and
ReadMcpResourceTool, `@server:uri` attachments, `/mcp__server__prompt` commands, and one-line
errors for an unknown resource, a failing one and an unknown server."""

import json
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from mcpkit import ServerProcesses, endpoint
from test_print_mode import codeloop, jsonl

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

SERVERS = Path(__file__).resolve().parent.parent / "mcp" / "servers"


def config(tmp_path, **servers) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def content_stdio(tmp_path) -> str:
    return config(tmp_path, content={"command": sys.executable, "args": [str(SERVERS / "content_server.py"), "stdio"]},
                  plain={"command": sys.executable, "args": [str(SERVERS / "tools_server.py"), "stdio"]})


def results(request) -> dict:
    return {b["tool_use_id"]: b for b in request.messages[-1]["content"] if b["type"] == "tool_result"}


def test_resource_tools(tmp_path):
    api = ScriptedAPI(sse(tool_use("ListMcpResourcesTool", {}, id="l"),
                          tool_use("ListMcpResourcesTool", {"server": "content"}, id="l1"),
                          tool_use("ReadMcpResourceTool", {"server": "content", "uri": "docs://readme"}, id="r"),
                          tool_use("ReadMcpResourceTool", {"server": "content", "uri": "docs://nope"}, id="u"),
                          tool_use("ReadMcpResourceTool", {"server": "content", "uri": "docs://broken"}, id="b"),
                          tool_use("ReadMcpResourceTool", {"server": "ghost", "uri": "docs://readme"}, id="g"),
                          tool_use("ReadMcpResourceTool", {"server": "content", "uri": "img://dot"}, id="i"),
                          tool_use("mcp__content__ping", {}, id="p")),
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "look", "--mcp-config", content_stdio(tmp_path), "--output-format", "stream-json",
                      "--verbose", "--allowedTools", "mcp__content__ping"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    first = api.requests[0]
    assert {"ListMcpResourcesTool", "ReadMcpResourceTool"} <= set(first.tool_names)
    schemas = {t["name"]: t["input_schema"] for t in first.body["tools"]}
    assert schemas["ReadMcpResourceTool"]["required"] == ["server", "uri"]
    assert "required" not in schemas["ListMcpResourcesTool"]
    assert "ListMcpResourcesTool" in jsonl(r.stdout)[0]["tools"]
    got = results(api.requests[1])
    listed = json.loads(got["l"]["content"] if isinstance(got["l"]["content"], str) else got["l"]["content"][0]["text"])
    assert {(x["server"], x["uri"]) for x in listed} == {("content", "docs://readme"), ("content", "docs://broken"),
                                                          ("content", "img://dot")}
    assert "docs://readme" in json.dumps(got["l1"]["content"])
    assert "PELICAN" in json.dumps(got["r"]["content"]) and not got["r"].get("is_error")
    for bad, words in (("u", ["content", "docs://nope"]), ("b", ["content", "docs://broken"]),
                       ("g", ["ghost", "not found"])):
        assert got[bad]["is_error"] is True and all(w in json.dumps(got[bad]["content"]) for w in words)
    assert any(b.get("type") == "image" for b in got["i"]["content"])
    assert "pong" in json.dumps(got["p"]["content"])        # the server's tools keep working


def test_resource_reads_are_capped_like_tool_output(tmp_path):
    api = ScriptedAPI(sse(tool_use("ReadMcpResourceTool", {"server": "content", "uri": "docs://readme"}, id="r")),
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "read", "--mcp-config", content_stdio(tmp_path)], cwd=tmp_path, base_url=url,
                     env={"MAX_MCP_OUTPUT_TOKENS": "10"})
    assert r.returncode == 0, r.stderr
    content = json.dumps(results(api.requests[1])["r"]["content"])
    assert "OUTPUT TRUNCATED" in content and "PELICAN" not in content


def test_resource_tools_absent_without_resources(tmp_path):
    cfg = config(tmp_path, plain={"command": sys.executable, "args": [str(SERVERS / "tools_server.py"), "stdio"]})
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--mcp-config", cfg], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "mcp__plain__echo" in api.requests[0].tool_names
    assert "ReadMcpResourceTool" not in api.requests[0].tool_names


def test_at_mentions_attach_resources(tmp_path):
    api = ScriptedAPI(sse(text("seen")))
    with api.serve() as url:
        r = codeloop(["-p", "compare @content:docs://readme with @content:docs://nope and @ghost:x://y",
                      "--mcp-config", content_stdio(tmp_path)], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    sent = json.dumps(api.requests[0].messages)
    assert "PELICAN" in sent and 'server=\\"content\\" uri=\\"docs://readme\\"' in sent
    notices = [line for line in r.stderr.splitlines() if "docs://nope" in line]
    assert len(notices) == 1 and "content" in notices[0]     # one line naming the server
    assert "@ghost" not in r.stderr                           # not an MCP server: prose, left alone
    assert r.stdout.strip() == "seen"


def test_at_mention_refused_by_a_deny_rule(tmp_path):
    api = ScriptedAPI(sse(text("seen")))
    with api.serve() as url:
        r = codeloop(["-p", "read @content:docs://readme", "--mcp-config", content_stdio(tmp_path),
                      "--disallowedTools", "ReadMcpResourceTool"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "PELICAN" not in json.dumps(api.requests[0].messages)
    assert "docs://readme: not attached" in r.stderr


def test_prompts_as_slash_commands(tmp_path):
    cfg = content_stdio(tmp_path)
    api = ScriptedAPI(sse(text("hello Bob")), sse(text("reviewed")))
    with api.serve() as url:
        r = codeloop(["-p", "/mcp__content__greet Bob grumpy", "--mcp-config", cfg], cwd=tmp_path, base_url=url)
        r2 = codeloop(["-p", "/mcp__content__review src/my file.py", "--mcp-config", cfg], cwd=tmp_path,
                      base_url=url)
    assert r.returncode == 0 and r2.returncode == 0, r.stderr + r2.stderr
    last = api.requests[0].messages[-1]["content"]
    assert last[-1]["text"] == "Say hello to Bob in a grumpy way." and "/mcp__" not in json.dumps(last)
    assert "Please review the file src/my file.py carefully." in json.dumps(api.requests[1].messages[-1])


def test_prompts_in_stream_json_sessions(tmp_path):
    lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p}, "parent_tool_use_id": None,
                                "session_id": ""}) + "\n" for p in ("/mcp__content__greet Zoe", "/mcp__content__greet"))
    api = ScriptedAPI(sse(text("hi Zoe")))
    with api.serve() as url:
        r = codeloop(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                      "--mcp-config", content_stdio(tmp_path)], cwd=tmp_path, base_url=url, input=lines)
    assert r.returncode in (0, 1), r.stderr
    results = [line for line in jsonl(r.stdout) if line["type"] == "result"]
    assert results[0]["result"] == "hi Zoe" and len(api.requests) == 1
    assert "Say hello to Zoe in a cheerful way." in json.dumps(api.requests[0].messages[-1])
    assert results[1]["is_error"] and "missing argument name" in json.dumps(results[1])


def test_prompt_missing_argument_is_one_line(tmp_path):
    api = ScriptedAPI()
    with api.serve() as url:
        r = codeloop(["-p", "/mcp__content__greet", "--mcp-config", content_stdio(tmp_path)], cwd=tmp_path,
                     base_url=url)
    assert r.returncode == 1 and api.requests == []
    [line] = [x for x in r.stderr.splitlines() if x.startswith("Error:")]
    assert "/mcp__content__greet" in line and "name" in line and "usage" in line
    with api.serve() as url:
        r = codeloop(["-p", "/mcp__content__refuse cats", "--mcp-config", content_stdio(tmp_path)], cwd=tmp_path,
                     base_url=url)
    assert r.returncode == 1 and api.requests == []
    [line] = [x for x in r.stderr.splitlines() if x.startswith("Error:")]
    assert "/mcp__content__refuse" in line and "MCP server content" in line


def test_resources_and_prompts_over_streamable_http(tmp_path, http_content_server):
    url_mcp = http_content_server()
    cfg = config(tmp_path, remote={"type": "http", "url": url_mcp})
    api = ScriptedAPI(sse(tool_use("ReadMcpResourceTool", {"server": "remote", "uri": "docs://readme"}, id="r")),
                      sse(text("done")), sse(text("hi")))
    with api.serve() as url:
        r = codeloop(["-p", "read it", "--mcp-config", cfg], cwd=tmp_path, base_url=url)
        r2 = codeloop(["-p", "/mcp__remote__greet Ann", "--mcp-config", cfg], cwd=tmp_path, base_url=url)
    assert r.returncode == 0 and r2.returncode == 0, r.stderr + r2.stderr
    assert "PELICAN" in json.dumps(results(api.requests[1])["r"]["content"])
    assert "Say hello to Ann in a cheerful way." in json.dumps(api.requests[2].messages[-1])
    assert not (tmp_path / ".cfg" / "mcp-oauth").exists()     # a server that never asked for OAuth: no token file


@pytest.fixture
def http_content_server():
    servers = ServerProcesses()
    yield lambda: endpoint(servers.start("content_server.py", "http"), "http")
    servers.stop_all()
