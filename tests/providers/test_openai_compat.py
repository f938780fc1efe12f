"""OpenAI-compatible provider: request translation, scripted Chat Completions SSE → Anthropic events,
errors, provider selection, and one real query() turn through it."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from codeloop.providers.assembly import ResponseAssembler
from codeloop.providers.base import ModelRequest
from codeloop.providers.errors import APIConnectionError, APIStatusError, AuthenticationError
from codeloop.providers.openai_compat import OpenAICompatProvider
from codeloop.providers.select import make_provider, resolve_provider, split_model_flag

# -- scripted SSE helpers -------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, *, usage: dict | None = None,
          choices: bool = True, model: str = "gpt-4o") -> dict[str, Any]:
    c: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
                         "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []}
    if usage is not None:
        c["usage"] = usage
    return c


def usage_chunk(prompt=100, completion=20, cached=0) -> dict[str, Any]:
    return chunk(choices=False, usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                       "total_tokens": prompt + completion,
                                       "prompt_tokens_details": {"cached_tokens": cached}})


def sse_body(*chunks: dict[str, Any], done: bool = True) -> bytes:
    out = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


def tool_fragments(index: int, call_id: str, name: str, args: str, pieces: int = 3) -> list[dict]:
    size = max(1, -(-len(args) // pieces))
    parts = [args[i:i + size] for i in range(0, len(args), size)]
    first = chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]})
    return [first] + [chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in parts]


class Server:
    """Answers each POST with the next scripted (status, body, headers); records request bodies."""

    def __init__(self, *responses: tuple[int, bytes, dict[str, str]] | bytes) -> None:
        self.responses = [r if isinstance(r, tuple) else (200, r, {}) for r in responses]
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            self.requests.append(json.loads(request.content))
            self.headers.append(dict(request.headers))
            status, body, headers = self.responses.pop(0)
            ctype = "text/event-stream" if status == 200 else "application/json"
            return httpx.Response(status, headers={"content-type": ctype, **headers}, content=body)
        return httpx.MockTransport(handler)


class CutStream(httpx.AsyncByteStream):
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __aiter__(self):
        yield self.body
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


def provider(server: Server, **kw) -> OpenAICompatProvider:
    return OpenAICompatProvider(api_key=kw.pop("api_key", "sk-test"), base_url=kw.pop("base_url", "http://local/v1"),
                                transport=server.transport(), **kw)


def request(**kw) -> ModelRequest:
    base = dict(model="gpt-4o", messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                system=[{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
                max_tokens=1000)
    base.update(kw)
    return ModelRequest(**base)


async def collect(p: OpenAICompatProvider, req: ModelRequest | None = None) -> tuple[list[dict], ResponseAssembler]:
    events, asm = [], ResponseAssembler()
    async for ev in p.stream(req or request()):
        events.append(ev)
        asm.feed(ev)
    return events, asm


# -- stream translation ---------------------------------------------------------------------------


async def test_text_and_reasoning_stream_as_anthropic_events():
    body = sse_body(chunk({"role": "assistant", "content": ""}),
                    chunk({"reasoning_content": "Let me "}), chunk({"reasoning": "think."}),
                    chunk({"content": "Hello"}), chunk({"content": " world"}),
                    chunk(finish="stop"), usage_chunk(prompt=120, completion=7, cached=100))
    events, asm = await collect(provider(Server(body)))
    types = [e["type"] for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert events[0]["message"]["id"] == "chatcmpl-1" and events[0]["message"]["model"] == "gpt-4o"
    assert asm.blocks == [{"type": "thinking", "thinking": "Let me think.", "signature": ""},
                          {"type": "text", "text": "Hello world"}]
    assert [e["delta"]["type"] for e in events if e["type"] == "content_block_delta"] == \
        ["thinking_delta", "thinking_delta", "text_delta", "text_delta"]
    assert asm.stop_reason == "end_turn"
    # prompt_tokens includes cached tokens; ours splits them out
    assert asm.usage["input_tokens"] == 20 and asm.usage["output_tokens"] == 7
    assert asm.usage["cache_read_input_tokens"] == 100


async def test_two_parallel_tool_calls_fragmented_by_index():
    body = sse_body(chunk({"role": "assistant", "content": "Reading both."}),
                    *tool_fragments(0, "call_a", "Read", json.dumps({"file_path": "/a.py"})),
                    *tool_fragments(1, "call_b", "Grep", json.dumps({"pattern": "x", "path": "/src"})),
                    chunk(finish="tool_calls"), usage_chunk())
    events, asm = await collect(provider(Server(body)))
    assert asm.blocks == [
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "call_a", "name": "Read", "input": {"file_path": "/a.py"}},
        {"type": "tool_use", "id": "call_b", "name": "Grep", "input": {"pattern": "x", "path": "/src"}}]
    assert asm.stop_reason == "tool_use" and not asm.invalid_json
    # the first call is complete (content_block_stop) before the second one starts
    starts = [i for i, e in enumerate(events) if e["type"] == "content_block_start"]
    stops = [i for i, e in enumerate(events) if e["type"] == "content_block_stop"]
    assert stops[1] < starts[2]
    assert sum(1 for e in events if e.get("delta", {}).get("type") == "input_json_delta") >= 4


async def test_tool_calls_whole_in_one_chunk():
    whole = chunk({"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
        {"index": 1, "id": "call_2", "type": "function", "function": {"name": "echo", "arguments": '{"text": "hi"}'}},
    ]}, finish="tool_calls")
    _, asm = await collect(provider(Server(sse_body(whole, usage_chunk()))))
    assert [(b["id"], b["name"], b["input"]) for b in asm.blocks] == [
        ("call_1", "add", {"a": 1, "b": 2}), ("call_2", "echo", {"text": "hi"})]
    assert asm.stop_reason == "tool_use"


async def test_tool_call_without_index_and_with_object_arguments():
    # Mistral-style deltas omit `index`; some servers send arguments as an object
    body = sse_body(chunk({"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"x": 1}}}]}),
                    chunk({"tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": "{}"}}]}),
                    chunk(finish="tool_calls"))
    _, asm = await collect(provider(Server(body)))
    assert [(b["id"], b["name"], b["input"]) for b in asm.blocks] == [("c1", "f", {"x": 1}), ("c2", "g", {})]


@pytest.mark.parametrize("finish,expected", [("stop", "end_turn"), ("tool_calls", "tool_use"),
                                             ("function_call", "tool_use"), ("length", "max_tokens"),
                                             ("content_filter", "refusal"), (None, "end_turn")])
async def test_finish_reason_mapping(finish, expected):
    body = sse_body(chunk({"content": "x"}), chunk(finish=finish) if finish else chunk({}))
    _, asm = await collect(provider(Server(body)))
    assert asm.stop_reason == expected and asm.stopped


async def test_stop_after_tool_calls_still_means_tool_use():
    body = sse_body(*tool_fragments(0, "c", "Read", '{"file_path": "/x"}'), chunk(finish="stop"))
    _, asm = await collect(provider(Server(body)))
    assert asm.stop_reason == "tool_use"


async def test_usage_without_cache_details_and_no_usage_at_all():
    _, asm = await collect(provider(Server(sse_body(chunk({"content": "a"}), chunk(finish="stop"),
                                                    chunk(choices=False, usage={"prompt_tokens": 9,
                                                                                "completion_tokens": 3})))))
    assert (asm.usage["input_tokens"], asm.usage["output_tokens"], asm.usage["cache_read_input_tokens"]) == (9, 3, 0)
    _, asm = await collect(provider(Server(sse_body(chunk({"content": "a"}), chunk(finish="stop")))))
    assert asm.id == "chatcmpl-1" and asm.usage.get("output_tokens") == 0


# -- request translation ---------------------------------------------------------------------------


async def test_request_translation_tools_results_images_and_thinking():
    server = Server(sse_body(chunk({"content": "ok"}), chunk(finish="stop")))
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "look at this"}, img]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": ""},
            {"type": "text", "text": "Calling tools."},
            {"type": "tool_use", "id": "call_a", "name": "Read", "input": {"file_path": "/a"}},
            {"type": "tool_use", "id": "call_b", "name": "shot", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_a", "content": "file body",
             "cache_control": {"type": "ephemeral"}},
            {"type": "tool_result", "tool_use_id": "call_b", "is_error": False,
             "content": [{"type": "text", "text": "a screenshot"}, img]},
            {"type": "text", "text": "and now?"}]},
    ]
    tools = [{"name": "Read", "description": "Read a file",
              "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
             {"type": "web_search_20250305", "name": "web_search"}]
    p = provider(server)
    await collect(p, request(messages=messages, tools=tools))
    body = server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 1000 and "max_completion_tokens" not in body
    assert body["tools"] == [{"type": "function", "function": {
        "name": "Read", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}}}]
    msgs = body["messages"]
    assert msgs[0] == {"role": "system", "content": "You are terse."}
    assert msgs[1] == {"role": "user", "content": [{"type": "text", "text": "look at this"},
                                                    {"type": "image_url",
                                                     "image_url": {"url": "data:image/png;base64,iVBOR"}}]}
    assert msgs[2]["role"] == "assistant" and msgs[2]["content"] == "Calling tools."
    assert msgs[2]["tool_calls"] == [
        {"id": "call_a", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "/a"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "shot", "arguments": "{}"}}]
    assert "hmm" not in json.dumps(body)  # thinking is dropped
    # tool results first, in order, as role=tool; then the user's text (and the tool's image)
    assert [m["role"] for m in msgs[3:]] == ["tool", "tool", "user"]
    assert msgs[3] == {"role": "tool", "tool_call_id": "call_a", "content": "file body"}
    assert msgs[4]["tool_call_id"] == "call_b" and msgs[4]["content"] == "a screenshot"
    user_parts = msgs[5]["content"]
    assert {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}} in user_parts
    assert user_parts[-1] == {"type": "text", "text": "and now?"}
    assert server.headers[0]["authorization"] == "Bearer sk-test"


async def test_error_tool_result_and_plain_string_content():
    server = Server(sse_body(chunk({"content": "ok"}), chunk(finish="stop")))
    messages = [{"role": "user", "content": "plain"},
                {"role": "assistant",
                 "content": [{"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": "x"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "is_error": True,
                                              "content": [{"type": "text", "text": "exit 1"}]}]}]
    await collect(provider(server), request(messages=messages))
    msgs = server.requests[0]["messages"]
    assert msgs[1] == {"role": "user", "content": "plain"}
    assert msgs[2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "x"}'}}]}
    assert msgs[3] == {"role": "tool", "tool_call_id": "c", "content": "Error: exit 1"}
    assert len(msgs) == 4


async def test_openai_host_uses_max_completion_tokens_and_no_key_means_no_auth_header(monkeypatch):
    server = Server(sse_body(chunk(finish="stop")), sse_body(chunk(finish="stop")))
    await collect(provider(server, base_url="https://api.openai.com/v1"))
    assert server.requests[0]["max_completion_tokens"] == 1000 and "max_tokens" not in server.requests[0]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    local = OpenAICompatProvider(base_url="http://localhost:11434/v1", transport=server.transport())
    await collect(local)
    assert "authorization" not in server.headers[1]


async def test_model_without_tool_support_gets_no_tools():
    server = Server(sse_body(chunk(finish="stop")))
    tools = [{"name": "Read", "description": "", "input_schema": {"type": "object"}}]
    await collect(provider(server), request(model="deepseek-r1:14b", tools=tools))
    assert "tools" not in server.requests[0]


# -- errors ---------------------------------------------------------------------------------------


def err(status: int, message: str, etype: str = "invalid_request_error", code: str | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    return status, json.dumps({"error": {"message": message, "type": etype, "code": code}}).encode(), headers or {}


async def test_401_is_a_non_retryable_status_error():
    with pytest.raises(APIStatusError) as exc:
        await collect(provider(Server(err(401, "Incorrect API key provided", code="invalid_api_key"))))
    assert exc.value.status == 401 and "Incorrect API key" in exc.value.message and not exc.value.retryable


async def test_429_carries_retry_after():
    with pytest.raises(APIStatusError) as exc:
        await collect(provider(Server(err(429, "Rate limit reached", "requests", headers={"retry-after": "7"}))))
    assert exc.value.status == 429 and exc.value.retry_after == 7.0 and exc.value.retryable


@pytest.mark.parametrize("message,code", [
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
     "context_length_exceeded"),
    ("request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it", None)])
async def test_context_length_errors_read_as_prompt_too_long(message, code):
    from codeloop.loop.recovery import withheld_kind

    with pytest.raises(APIStatusError) as exc:
        await collect(provider(Server(err(400, message, code=code))))
    assert exc.value.is_prompt_too_long and withheld_kind(exc.value) == "prompt_too_long"
    assert message in exc.value.message


async def test_error_inside_the_stream():
    body = sse_body(chunk({"content": "par"}), {"error": {"message": "upstream overloaded", "code": 502}})
    with pytest.raises(APIStatusError) as exc:
        await collect(provider(Server(body)))
    assert exc.value.status == 502 and exc.value.retryable


async def test_cut_stream_and_missing_finish_are_connection_errors():
    def cut_handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=CutStream(sse_body(chunk({"content": "half"}), done=False)))

    p = OpenAICompatProvider(api_key="k", base_url="http://local/v1", transport=httpx.MockTransport(cut_handler))
    with pytest.raises(APIConnectionError) as exc:
        await collect(p)
    assert exc.value.mid_stream
    # a clean close with neither finish_reason nor [DONE] is a cut too
    with pytest.raises(APIConnectionError, match="ended before"):
        await collect(provider(Server(sse_body(chunk({"content": "half"}), done=False))))


async def test_unreachable_server_is_a_connection_error():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    p = OpenAICompatProvider(api_key="k", base_url="http://local/v1", transport=httpx.MockTransport(refuse))
    with pytest.raises(APIConnectionError) as exc:
        await collect(p)
    assert not exc.value.mid_stream


# -- selection ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag,env,settings,expected", [
    ("openai:gpt-4o", {}, {}, ("openai", "gpt-4o")),
    ("ollama:qwen3:8b", {}, {}, ("ollama", "qwen3:8b")),
    ("qwen3:8b", {"CODELOOP_PROVIDER": "ollama"}, {}, ("ollama", "qwen3:8b")),
    ("anthropic:claude-sonnet-4-5", {"CODELOOP_PROVIDER": "openai"}, {}, ("anthropic", "claude-sonnet-4-5")),
    ("openrouter:qwen/qwen3-coder", {}, {}, ("openrouter", "qwen/qwen3-coder")),
    ("LMStudio:local-model", {}, {}, ("lmstudio", "local-model")),
    ("sonnet", {}, {}, ("anthropic", "sonnet")),
    (None, {}, {"provider": "vllm"}, ("vllm", None)),
    ("gpt-4o", {"CODELOOP_PROVIDER": "openai"}, {"provider": "ollama"}, ("openai", "gpt-4o")),
    (None, {}, {}, ("anthropic", None)),
])
def test_resolve_provider(flag, env, settings, expected):
    assert resolve_provider(flag, env=env, settings=settings) == expected


def test_split_model_flag_only_splits_known_prefixes():
    assert split_model_flag("llama3.1:70b-instruct")[0] is None
    assert split_model_flag("vllm:meta/llama:3")[1] == "meta/llama:3"


def test_unknown_provider_name_is_a_clear_error():
    from codeloop.providers.select import ProviderSelectionError

    with pytest.raises(ProviderSelectionError, match="unknown provider 'nope'"):
        resolve_provider(None, env={"CODELOOP_PROVIDER": "nope"}, settings={})


async def test_make_provider_bases_and_keys():
    with pytest.raises(AuthenticationError, match="OPENROUTER_API_KEY"):
        make_provider("openrouter", env={})
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        make_provider("openai", env={})
    ollama = make_provider("ollama", env={"OPENAI_API_KEY": "sk-real"})
    try:
        assert ollama.base_url == "http://localhost:11434/v1" and not ollama.api_key and ollama.name == "ollama"
    finally:
        await ollama.aclose()
    router = make_provider("openrouter", env={"OPENROUTER_API_KEY": "or-k"})
    selfhosted = make_provider("openai", env={"OPENAI_BASE_URL": "http://gpu:8000/v1"})
    vllm = make_provider("vllm", env={"OPENAI_BASE_URL": "http://gpu:9000/v1", "OPENAI_API_KEY": "v"})
    try:
        assert router.base_url == "https://openrouter.ai/api/v1" and router.api_key == "or-k"
        assert selfhosted.base_url == "http://gpu:8000/v1" and selfhosted.max_tokens_field == "max_tokens"
        assert vllm.base_url == "http://gpu:9000/v1" and vllm.api_key == "v"
    finally:
        for p in (router, selfhosted, vllm):
            await p.aclose()


def test_capability_overrides_from_env_and_argument(monkeypatch):
    from codeloop.providers.models import capabilities, context_window

    assert capabilities("qwen3:8b").context_window == 40_960
    monkeypatch.setenv("CODELOOP_MODEL_CAPABILITIES", json.dumps({"qwen3": {"context_window": 8192,
                                                                             "supports_tools": False}}))
    caps = capabilities("qwen3:8b")
    assert (caps.context_window, caps.supports_tools) == (8192, False) and context_window("qwen3:8b") == 8192
    assert capabilities("qwen3:8b", {"qwen3:8b": {"supports_tools": True}}).supports_tools is True
    assert capabilities("openai/gpt-4o").max_output_tokens == 16_384


# -- the real loop, through this provider --------------------------------------------------------------


async def test_query_runs_a_tool_turn_then_answers(tmp_path):
    from loophelpers import make_params, run, terminal

    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    args = json.dumps({"file_path": str(tmp_path / "notes.txt")})
    server = Server(
        sse_body(chunk({"role": "assistant", "content": "Let me read it."}),
                 *tool_fragments(0, "call_read", "Read", args), chunk(finish="tool_calls"), usage_chunk()),
        sse_body(chunk({"content": "It says 42."}), chunk(finish="stop"), usage_chunk(prompt=300, completion=5)))
    p = provider(server)
    events = await run(make_params(server, tmp_path, provider=p, model="gpt-4o", prompt="what is in notes.txt?"))
    assert terminal(events).reason.value == "completed"
    second = server.requests[1]["messages"]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert tool_msgs and tool_msgs[0]["tool_call_id"] == "call_read" and "the answer is 42" in tool_msgs[0]["content"]
    assistant = [m for m in second if m["role"] == "assistant"][0]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == json.loads(args)
    from codeloop.events import AssistantEvent
    assert any(isinstance(e, AssistantEvent) and e.message.text == "It says 42." for e in events)
