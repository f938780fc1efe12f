"""Builds the Messages API request for one loop iteration: prompt-cache breakpoints, the system
prompt split into cache-friendly blocks, `max_tokens` per model, and the reasoning config.

The reasoning config (`thinking`) is the API's thinking object, optionally carrying an `effort`
level (`--effort`): effort goes out as `output_config.effort` on models that take it, and never
inside the thinking object itself. A task budget (`--task-budget`) rides in `output_config` too.
"""

from __future__ import annotations

import os
from typing import Any

from codeloop.messages import ApiMessageCache, Message, to_api_messages, user_context_message
from codeloop.providers.base import ModelRequest
from codeloop.providers.models import default_output_tokens, model_info, supports_effort

DEFAULT_MAX_OUTPUT_TOKENS = 8_192      # spec 004 §11.3: the capped default (non-Claude models) …
ESCALATED_MAX_OUTPUT_TOKENS = 64_000   # … and what a max_tokens stop escalates to, once
EPHEMERAL = {"type": "ephemeral"}
# The API requires max_tokens > budget_tokens; keep room for the visible answer.
_ANSWER_ROOM = 4_096


def env_max_output_tokens() -> int | None:
    for name in ("CODELOOP_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS"):
        value = os.environ.get(name)
        if value and value.strip().isdigit():
            return int(value)
    return None


def _capped_default() -> bool:
    """CODELOOP_CAPPED_OUTPUT=1: every model starts at the capped default and escalates on a cut
    (spec 004 §11.3's slot reservation); otherwise Claude models ask what Claude Code asks."""
    return os.environ.get("CODELOOP_CAPPED_OUTPUT", "").strip().lower() in ("1", "true", "yes", "on")


def max_output_tokens(model: str, override: int | None) -> int:
    limit = model_info(model).max_output_tokens
    default = DEFAULT_MAX_OUTPUT_TOKENS if _capped_default() else (default_output_tokens(model)
                                                                   or DEFAULT_MAX_OUTPUT_TOKENS)
    wanted = override or env_max_output_tokens() or default
    return max(1, min(wanted, limit))


def can_escalate(model: str) -> bool:
    """Whether a max_tokens stop can be retried with a bigger cap (not when we already ask the most)."""
    return max_output_tokens(model, ESCALATED_MAX_OUTPUT_TOKENS) > max_output_tokens(model, None)


def _mark_last_block(messages: list[dict[str, Any]]) -> None:
    """Cache breakpoint on the newest cacheable block, so each turn reuses the previous prefix."""
    if not messages:
        return
    content = messages[-1]["content"]
    for i in range(len(content) - 1, -1, -1):
        if content[i].get("type") in ("text", "tool_result", "image", "tool_use"):
            content[i] = {**content[i], "cache_control": EPHEMERAL}
            return


def system_blocks(system_prompt: list[str]) -> list[dict[str, Any]]:
    """The static instructions as one cached block, then the per-session parts (environment,
    appended prompt, tool hints) as a second: a change in the latter keeps the former's cache hit.
    Two breakpoints here plus one on the newest message stay within the API's four."""
    parts = [p for p in system_prompt if p]
    if not parts:
        return []
    blocks = [{"type": "text", "text": parts[0], "cache_control": EPHEMERAL}]
    if len(parts) > 1:
        blocks.append({"type": "text", "text": "\n\n".join(parts[1:]), "cache_control": EPHEMERAL})
    return blocks


def _reasoning(model: str, thinking: dict[str, Any] | None,
               max_tokens: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int]:
    """(thinking, output_config, max_tokens) for the request."""
    if not thinking:
        return None, None, max_tokens
    config = {k: v for k, v in thinking.items() if k != "effort"}
    effort = thinking.get("effort")
    output_config = {"effort": effort} if effort and supports_effort(model) else None
    if config.get("type") == "enabled":
        max_tokens = min(max(max_tokens, int(config["budget_tokens"]) + _ANSWER_ROOM),
                         model_info(model).max_output_tokens)
        if int(config["budget_tokens"]) >= max_tokens:   # a small-output model: shrink the budget to fit
            config["budget_tokens"] = max(1024, max_tokens - _ANSWER_ROOM)
    elif config.get("type") not in ("adaptive",):
        config = {}
    return config or None, output_config, max_tokens


# Per-turn work must not grow with the session: each conversation (keyed by its first message, the
# object itself kept for the check) converts only what follows the previous request's prefix. A few
# conversations at once (subagents, side questions) each keep their own; the oldest is dropped.
_MAX_CONVERSATIONS = 8
_api_caches: dict[int, tuple[Message, ApiMessageCache]] = {}
# The user-context message, made once per context: a new one each turn would be a new first message.
_context_message: tuple[dict[str, str], Message] | None = None


def _user_context(ctx: dict[str, str]) -> Message:
    global _context_message
    if _context_message is None or _context_message[0] != ctx:
        _context_message = (dict(ctx), user_context_message(ctx))
    return _context_message[1]


def _api_cache(messages: list[Message]) -> ApiMessageCache | None:
    if not messages:
        return None
    key = id(messages[0])
    hit = _api_caches.pop(key, None)
    if hit is None or hit[0] is not messages[0]:
        hit = (messages[0], ApiMessageCache())
        while len(_api_caches) >= _MAX_CONVERSATIONS:
            del _api_caches[next(iter(_api_caches))]
    _api_caches[key] = hit   # most recently used last
    return hit[1]


def build_request(*, model: str, messages: list[Message], system_prompt: list[str],
                  user_context: dict[str, str], tools: list,
                  max_tokens_override: int | None = None, thinking: dict[str, Any] | None = None,
                  task_budget: dict[str, int] | None = None) -> ModelRequest:
    history = [_user_context(user_context), *messages] if user_context else list(messages)
    # A fresh last message (the one marked); the ones before it are shared, read-only, with the cache.
    api_messages = to_api_messages(history, _api_cache(messages))
    _mark_last_block(api_messages)
    think, output_config, max_tokens = _reasoning(model, thinking, max_output_tokens(model, max_tokens_override))
    if task_budget:   # spec 004 §9.1, as Claude Code sends it (with the task-budgets beta: providers.betas)
        output_config = {**(output_config or {}), "task_budget": {"type": "tokens", **task_budget}}
    return ModelRequest(model=model, messages=api_messages, system=system_blocks(system_prompt),
                        tools=[t.api_schema() for t in tools], max_tokens=max_tokens, thinking=think,
                        output_config=output_config)
