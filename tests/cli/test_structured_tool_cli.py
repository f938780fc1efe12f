"""Issue 15: `--json-schema` offers the StructuredOutput tool (its input schema is the user's schema)
and its valid input is the result's `structured_output` — through `codeloop -p` and through the
official claude-agent-sdk's `output_format` option, against the scripted fake API."""

import json

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
          "required": ["city", "population"], "additionalProperties": False}


def _offered(req):
    return next(t for t in req.body["tools"] if t["name"] == "StructuredOutput")


def test_cli_json_result_from_the_tool(tmp_path):
    answer = {"city": "Lyon", "population": 522_000}
    api = ScriptedAPI(sse(tool_use("StructuredOutput", answer, id="so1")))
    with api.serve() as url:
        r = codeloop(["-p", "biggest city?", "--json-schema", json.dumps(SCHEMA), "--output-format", "json"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert len(api.requests) == 1 and _offered(api.requests[0])["input_schema"] == SCHEMA
    result = json.loads(r.stdout)
    assert result["subtype"] == "success" and not result["is_error"] and result["structured_output"] == answer


def test_cli_stream_json_with_a_corrected_call(tmp_path):
    api = ScriptedAPI(sse(tool_use("StructuredOutput", {"city": "Lyon"}, id="a")),
                      sse(tool_use("StructuredOutput", {"city": "Lyon", "population": 5}, id="b")))
    with api.serve() as url:
        r = codeloop(["-p", "city?", "--json-schema", json.dumps(SCHEMA), "--output-format", "stream-json",
                      "--verbose"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[-1]["type"] == "result" and lines[-1]["structured_output"] == {"city": "Lyon", "population": 5}
    first_result = api.requests[1].messages[-1]["content"][0]
    assert first_result["is_error"] and "population" in first_result["content"]
    assert len(api.requests) == 2



def test_cli_invalid_calls_count_against_the_retry_limit(tmp_path):
    # print mode allows 2 retries: the third invalid call is the last, and no fourth request is made
    api = ScriptedAPI(*[sse(tool_use("StructuredOutput", {"city": f"City {i}"}, id=f"c{i}")) for i in range(6)])
    with api.serve() as url:
        r = codeloop(["-p", "city?", "--json-schema", json.dumps(SCHEMA), "--output-format", "json"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 1, r.stderr
    result = json.loads(r.stdout)
    assert result["subtype"] == "error_max_structured_output_retries" and result["is_error"]
    assert any("population" in e for e in result["errors"]) and len(api.requests) == 3

async def test_sdk_output_format(tmp_path):
    pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
    from claude_agent_sdk import ResultMessage, query
    from test_sdk_interop import _real_cli, options

    cli = _real_cli(tmp_path)
    answer = {"city": "Porto", "population": 232_000}
    api = ScriptedAPI(sse(tool_use("StructuredOutput", answer, id="so")))
    with api.serve() as url:
        messages = [m async for m in query(prompt="a city", options=options(
            cli, url, tmp_path, output_format={"type": "json_schema", "schema": SCHEMA}))]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert result.structured_output == answer
    assert _offered(api.requests[0])["input_schema"] == SCHEMA and len(api.requests) == 1


async def test_sdk_output_format_text_fallback(tmp_path):
    pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
    from claude_agent_sdk import ResultMessage, query
    from test_sdk_interop import _real_cli, options

    cli = _real_cli(tmp_path)
    api = ScriptedAPI(sse(text('{"city": "Oslo", "population": 700000}')))
    with api.serve() as url:
        messages = [m async for m in query(prompt="a city", options=options(
            cli, url, tmp_path, output_format={"type": "json_schema", "schema": SCHEMA}))]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.structured_output == {"city": "Oslo", "population": 700000}
