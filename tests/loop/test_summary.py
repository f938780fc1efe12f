"""Tool-use summary against the scripted fake API: the request sent, the label, and failures."""

import asyncio

from fakeapi import ScriptedAPI, error, sse, text, tool_use
from codeloop.loop.summary import (SUMMARY_MODEL, generate_tool_use_summary, start_tool_use_summary)
from codeloop.providers.anthropic import AnthropicProvider

TOOLS = [{"name": "Read", "input": {"file_path": "src/auth.py"}, "output": "def login(): ..."},
         {"name": "Edit", "input": {"file_path": "src/auth.py", "old_string": "a", "new_string": "b"},
          "output": "x" * 5000}]


def provider_for(api):
    return AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())


async def test_summary_request_and_label():
    api = ScriptedAPI(sse(text("  Fixed login check in auth  \n")))
    provider = provider_for(api)
    try:
        label = await generate_tool_use_summary(provider, model=SUMMARY_MODEL, tools=TOOLS,
                                                last_assistant_text="Let me fix the login bug.")
    finally:
        await provider.aclose()
    assert label == "Fixed login check in auth"
    [req] = api.requests
    assert req.path == "/v1/messages"
    assert req.body["model"] == "claude-haiku-4-5"
    assert req.body["max_tokens"] == 60
    assert "tools" not in req.body and req.tool_names == []
    assert "3-8 word" in req.system_text and "git commit" in req.system_text
    [msg] = req.messages
    assert msg["role"] == "user"
    prompt = msg["content"][0]["text"]
    assert "Tool: Read" in prompt and "src/auth.py" in prompt and "Tool: Edit" in prompt
    assert "Let me fix the login bug." in prompt
    assert "x" * 300 in prompt and "x" * 301 not in prompt  # outputs are truncated


async def test_api_error_yields_none_without_raising():
    api = ScriptedAPI(error(500, "api_error", "boom"))
    provider = provider_for(api)
    try:
        assert await generate_tool_use_summary(provider, model=SUMMARY_MODEL, tools=TOOLS,
                                               last_assistant_text="") is None
    finally:
        await provider.aclose()
    assert len(api.requests) == 1


async def test_stream_error_event_yields_none():
    api = ScriptedAPI(sse(text("half"), error={"type": "overloaded_error", "message": "busy"}))
    provider = provider_for(api)
    try:
        assert await generate_tool_use_summary(provider, model=SUMMARY_MODEL, tools=TOOLS,
                                               last_assistant_text="") is None
    finally:
        await provider.aclose()


async def test_empty_text_or_non_text_response_yields_none():
    api = ScriptedAPI(sse(text("   ")), sse(tool_use("Read", {"file_path": "x"})))
    provider = provider_for(api)
    try:
        for _ in range(2):
            assert await generate_tool_use_summary(provider, model=SUMMARY_MODEL, tools=TOOLS,
                                                   last_assistant_text="") is None
    finally:
        await provider.aclose()
    assert len(api.requests) == 2


async def test_no_tools_sends_nothing():
    api = ScriptedAPI(sse(text("unused")))
    provider = provider_for(api)
    try:
        assert await generate_tool_use_summary(provider, model=SUMMARY_MODEL, tools=[],
                                               last_assistant_text="hi") is None
    finally:
        await provider.aclose()
    assert api.requests == []


async def test_no_intent_line_without_assistant_text():
    api = ScriptedAPI(sse(text("Read auth module")))
    provider = provider_for(api)
    try:
        await generate_tool_use_summary(provider, model="m", tools=TOOLS[:1], last_assistant_text="")
    finally:
        await provider.aclose()
    prompt = api.requests[0].messages[0]["content"][0]["text"]
    assert prompt.startswith("Tool calls completed:")
    assert api.requests[0].body["model"] == "m"


async def test_provider_raising_anything_yields_none():
    class Broken:
        name = "broken"

        async def stream(self, request):
            raise RuntimeError("not even a request")
            yield  # pragma: no cover

    assert await generate_tool_use_summary(Broken(), model="m", tools=TOOLS, last_assistant_text="") is None


async def test_start_tool_use_summary_task_result():
    api = ScriptedAPI(sse(text("Fixed auth bug")))
    provider = provider_for(api)
    ids = ["toolu_1", "toolu_2"]
    try:
        task = start_tool_use_summary(provider, model=SUMMARY_MODEL, tools=TOOLS,
                                      last_assistant_text="", tool_use_ids=ids)
        ids.append("toolu_late")  # later mutation does not leak into the result
        assert isinstance(task, asyncio.Task)
        assert await task == {"summary": "Fixed auth bug", "preceding_tool_use_ids": ["toolu_1", "toolu_2"]}
    finally:
        await provider.aclose()


async def test_start_tool_use_summary_failure_is_none():
    api = ScriptedAPI(error(500, "api_error", "boom"))
    provider = provider_for(api)
    try:
        task = start_tool_use_summary(provider, model=SUMMARY_MODEL, tools=TOOLS,
                                      last_assistant_text="", tool_use_ids=["toolu_1"])
        assert await task is None
        assert task.exception() is None
    finally:
        await provider.aclose()
