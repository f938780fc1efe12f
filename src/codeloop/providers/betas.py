"""Which `anthropic-beta` values a Messages request carries, chosen per request as Claude Code does.

Only betas the API documents, and only where they change something for that request:
- `interleaved-thinking-2025-05-14`: thinking between tool calls, when thinking is on (Claude 4+);
  `DISABLE_INTERLEAVED_THINKING=1` leaves it out, as in Claude Code.
- `fine-grained-tool-streaming-2025-05-14`: tool input streamed without buffering, when tools are offered.
- `effort-2025-11-24`: when the request carries `output_config.effort`.
- `task-budgets-2026-03-13`: when it carries `output_config.task_budget` (`--task-budget`); where
  automatic betas are off the provider leaves the field out too (`without_task_budget`), as Claude
  Code does.
Extra values from `--betas` and `ANTHROPIC_BETAS` (comma-separated; e.g. `context-1m-2025-08-07`)
are always sent. `CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1` (or `CODELOOP_DISABLE_EXPERIMENTAL_BETAS=1`)
drops the automatic ones — for gateways and clouds that reject unknown betas — and so does a
model whose name is not a Claude one (an Anthropic-compatible server for another model).
Deliberately not sent: `claude-code-20250219` and `oauth-2025-04-20` (Claude Code's own, not
documented for API-key use) and `context-management-2025-06-27` (codeloop sends no
`context_management` edits, so it would change nothing).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from codeloop.providers.base import ModelRequest


class Beta(str, Enum):
    INTERLEAVED_THINKING = "interleaved-thinking-2025-05-14"
    FINE_GRAINED_TOOL_STREAMING = "fine-grained-tool-streaming-2025-05-14"
    EFFORT = "effort-2025-11-24"
    TASK_BUDGETS = "task-budgets-2026-03-13"


_DISABLE_ENVS = ("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", "CODELOOP_DISABLE_EXPERIMENTAL_BETAS")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def split_betas(values: Iterable[str]) -> list[str]:
    """`["a,b", " c "]` → `["a", "b", "c"]`: --betas takes both spellings."""
    return [v.strip() for item in values for v in str(item).split(",") if v.strip()]


def request_betas(request: ModelRequest, extra: Iterable[str] = (),
                  env: Mapping[str, str] | None = None) -> list[str]:
    """The beta values for `request`, in a stable order, without duplicates."""
    env = os.environ if env is None else env
    chosen: list[str] = []
    name = request.model.lower().rsplit("/", 1)[-1]
    if not any(_truthy(env.get(k)) for k in _DISABLE_ENVS) and "claude" in name:
        thinking = (request.thinking or {}).get("type")
        if thinking in ("enabled", "adaptive") and "claude-3" not in name \
                and not _truthy(env.get("DISABLE_INTERLEAVED_THINKING")):
            chosen.append(Beta.INTERLEAVED_THINKING.value)
        if request.tools:
            chosen.append(Beta.FINE_GRAINED_TOOL_STREAMING.value)
        if (request.output_config or {}).get("effort"):
            chosen.append(Beta.EFFORT.value)
        if (request.output_config or {}).get("task_budget"):
            chosen.append(Beta.TASK_BUDGETS.value)
    chosen += split_betas([*extra, env.get("ANTHROPIC_BETAS", "")])
    return list(dict.fromkeys(chosen))


def without_task_budget(body: dict[str, Any], betas: list[str]) -> dict[str, Any]:
    """The body without `output_config.task_budget` when its beta is not sent (a gateway that
    rejects unknown betas would reject the field too)."""
    config = body.get("output_config")
    if not config or "task_budget" not in config or Beta.TASK_BUDGETS.value in betas:
        return body
    rest = {k: v for k, v in config.items() if k != "task_budget"}
    out = {k: v for k, v in body.items() if k != "output_config"}
    if rest:
        out["output_config"] = rest
    return out
