"""Helpers for driving query() against the scripted fake API in tests."""

from __future__ import annotations

import asyncio

from codeloop.events import Terminal
from codeloop.loop.query import QueryParams, query
from codeloop.messages import user_message
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.providers.retry import RetryPolicy
from codeloop.tools.base import PermissionBehavior, PermissionDecision, ToolContext
from codeloop.tools.registry import builtin_tools

FAST_RETRY = RetryPolicy(max_retries=3, base_delay_s=0.001, max_delay_s=0.005, max_retry_after_s=0.05)


def make_params(api, cwd, *, prompt="do it", policy=None, tools=None, **kw) -> QueryParams:
    policy = policy or PermissionPolicy(mode=PermissionMode.BYPASS)

    async def can_use_tool(tool, inp, block, ctx):
        d = policy.decide(tool, inp, await tool.check_permissions(inp, ctx), block.get("input") or {})
        if d.behavior is PermissionBehavior.ASK:
            return PermissionDecision(PermissionBehavior.DENY, "denied in test")
        return d

    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    params = dict(messages=[user_message(prompt)], system_prompt=["You are a test."],
                  user_context={"claudeMd": "Always be brief."}, tools=tools if tools is not None else builtin_tools(),
                  provider=provider, model="claude-sonnet-4-5", tool_context=ToolContext(cwd=cwd, project_dir=cwd),
                  can_use_tool=can_use_tool, retry=FAST_RETRY)
    params.update(kw)
    return QueryParams(**params)


async def run(params) -> list:
    return [ev async for ev in query(params)]


async def run_until(params, when, action, timeout=20) -> list:
    """Consume query(params); call `action()` once `when(event)` is true."""
    events = []

    async def consume():
        fired = False
        async for ev in query(params):
            events.append(ev)
            if not fired and when(ev):
                fired = True
                action()
        return events

    return await asyncio.wait_for(consume(), timeout)


def terminal(events) -> Terminal:
    assert isinstance(events[-1], Terminal), events[-1]
    assert sum(isinstance(e, Terminal) for e in events) == 1
    return events[-1]
