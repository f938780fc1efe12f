"""Per-model facts in one table: context window, output limits and prices (USD per million tokens).

Looked up by longest matching id prefix so dated ids (claude-sonnet-4-5-20250929) and aliases
share a row. Unknown models get conservative limits and Sonnet-class prices.
`CODELOOP_CONTEXT_WINDOW` overrides the window (local models behind openai_compat, 1M betas).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_MODEL = "claude-sonnet-4-5"
# What compaction keeps free for the model's answer (and the summary it writes): a full
# max_output_tokens reservation would waste a quarter of the window on 64k-output models.
COMPACT_OUTPUT_RESERVE = 20_000


@dataclass(frozen=True)
class Prices:
    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True)
class ModelInfo:
    prefix: str
    context_window: int
    max_output_tokens: int
    prices: Prices


def _p(inp: float, out: float) -> Prices:
    return Prices(inp, out, inp * 1.25, inp * 0.1)


MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("claude-opus-4-5", 200_000, 64_000, _p(5, 25)),
    ModelInfo("claude-opus-4-1", 200_000, 32_000, _p(15, 75)),
    ModelInfo("claude-opus-4", 200_000, 32_000, _p(15, 75)),
    ModelInfo("claude-sonnet-4-5", 200_000, 64_000, _p(3, 15)),
    ModelInfo("claude-sonnet-4", 200_000, 64_000, _p(3, 15)),
    ModelInfo("claude-3-7-sonnet", 200_000, 64_000, _p(3, 15)),
    ModelInfo("claude-haiku-4-5", 200_000, 64_000, _p(1, 5)),
    ModelInfo("claude-3-5-haiku", 200_000, 8_192, _p(0.8, 4)),
    ModelInfo("claude-3-haiku", 200_000, 4_096, _p(0.25, 1.25)),
)
UNKNOWN = ModelInfo("", 200_000, 32_000, _p(3, 15))


def model_info(model: str) -> ModelInfo:
    best = UNKNOWN
    for info in MODELS:
        if model.startswith(info.prefix) and len(info.prefix) > len(best.prefix):
            best = info
    return best


def context_window(model: str) -> int:
    """The usable input window: the table's figure unless CODELOOP_CONTEXT_WINDOW overrides it."""
    env = os.environ.get("CODELOOP_CONTEXT_WINDOW", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return model_info(model).context_window


def output_reserve(model: str) -> int:
    """Tokens kept free below the window for the response: min(max output, 20k)."""
    return min(model_info(model).max_output_tokens, COMPACT_OUTPUT_RESERVE)
