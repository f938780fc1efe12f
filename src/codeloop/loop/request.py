"""Builds the Messages API request for one loop iteration, with prompt-cache breakpoints."""

from __future__ import annotations

import os
from typing import Any

from codeloop.messages import Message, to_api_messages, user_context_message
from codeloop.providers.base import ModelRequest
from codeloop.providers.models import model_info
from codeloop.tools.base import Tool

DEFAULT_MAX_OUTPUT_TOKENS = 8_192      # spec 004 §11.3: the capped default …
ESCALATED_MAX_OUTPUT_TOKENS = 64_000   # … and what a max_tokens stop escalates to, once
_EPHEMERAL = {"type": "ephemeral"}


def env_max_output_tokens() -> int | None:
    for name in ("CODELOOP_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS"):
        value = os.environ.get(name)
        if value and value.strip().isdigit():
            return int(value)
    return None


def max_output_tokens(model: str, override: int | None) -> int:
    limit = model_info(model).max_output_tokens
    wanted = override or env_max_output_tokens() or DEFAULT_MAX_OUTPUT_TOKENS
    return max(1, min(wanted, limit))


def _mark_last_block(messages: list[dict[str, Any]]) -> None:
    """Cache breakpoint on the newest cacheable block, so each turn reuses the previous prefix."""
    if not messages:
        return
    content = messages[-1]["content"]
    for i in range(len(content) - 1, -1, -1):
        if content[i].get("type") in ("text", "tool_result", "image", "tool_use"):
            content[i] = {**content[i], "cache_control": _EPHEMERAL}
            return


def build_request(*, model: str, messages: list[Message], system_prompt: list[str],
                  user_context: dict[str, str], tools: list[Tool],
                  max_tokens_override: int | None = None, thinking: dict[str, Any] | None = None) -> ModelRequest:
    history = [user_context_message(user_context), *messages] if user_context else list(messages)
    api_messages = to_api_messages(history)  # fresh lists: marking never touches history
    _mark_last_block(api_messages)
    system = [{"type": "text", "text": "\n\n".join(p for p in system_prompt if p), "cache_control": _EPHEMERAL}]
    max_tokens = max_output_tokens(model, max_tokens_override)
    if thinking and thinking.get("type") == "enabled":
        # the API requires max_tokens > budget_tokens; keep room for the visible answer
        max_tokens = min(max(max_tokens, int(thinking["budget_tokens"]) + 4096), model_info(model).max_output_tokens)
    return ModelRequest(model=model, messages=api_messages, system=system,
                        tools=[t.api_schema() for t in tools], max_tokens=max_tokens, thinking=thinking)
