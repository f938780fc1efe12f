"""Issue 18: a finished request lets go of its body at once. httpx's response and its stream refer
to each other; left alone, every request (with the whole history's JSON) lived on until a full
garbage collection, several megabytes in a long session."""

import gc
import weakref

from fakeapi import ScriptedAPI, sse, text
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.providers.base import ModelRequest


async def test_a_streamed_request_is_freed_without_a_garbage_collection():
    api = ScriptedAPI(sse(text("ok")), sse(text("again")))
    provider = AnthropicProvider(api_key="sk-test", base_url="http://fake", transport=api.transport())
    sent: list[weakref.ref] = []
    send = provider._client.send

    async def spy(request, **kw):
        sent.append(weakref.ref(request))
        return await send(request, **kw)

    provider._client.send = spy
    request = ModelRequest(model="claude-sonnet-4-5", messages=[{"role": "user", "content": "x" * 100_000}])
    gc.collect()
    gc.disable()
    try:
        for _ in range(2):
            async for _ in provider.stream(request):
                pass
        assert len(sent) == 2 and all(ref() is None for ref in sent)
    finally:
        gc.enable()
        await provider.aclose()
