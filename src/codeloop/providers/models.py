"""Per-model facts in one table: context window, output limits, tool support and prices (USD per
million tokens), for Claude models and common OpenAI-compatible ones (OpenAI, Ollama, vLLM …).

Looked up by longest matching id prefix (case-insensitive) so dated ids (claude-sonnet-4-5-20250929),
Ollama tags (qwen3:8b) and aliases share a row; OpenRouter-style ids (`openai/gpt-4o`) fall back to
the part after the last `/`. Unknown models get conservative limits and Sonnet-class prices.

Capabilities are overridable: `capabilities(model, overrides=...)` or the env var
`CODELOOP_MODEL_CAPABILITIES`, a JSON object keyed by id prefix, e.g.
`{"qwen3": {"context_window": 32768, "max_output_tokens": 8192, "supports_tools": true}}`.
`CODELOOP_CONTEXT_WINDOW` still overrides the window alone (1M betas, local models).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-4-5"
# What compaction keeps free for the model's answer (and the summary it writes): a full
# max_output_tokens reservation would waste a quarter of the window on 64k-output models.
COMPACT_OUTPUT_RESERVE = 20_000


@dataclass(frozen=True)
class Prices:
    """A model's prices for input, output and cache writes and reads."""
    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True)
class ModelInfo:
    """What is known of a model family: context window, output limit and prices."""
    prefix: str
    context_window: int
    max_output_tokens: int
    prices: Prices
    supports_tools: bool = True
    # What Claude Code asks as max_tokens for this model (None: the whole max_output_tokens for
    # Claude models, the capped default for the rest); `effort`: takes output_config.effort.
    default_output: int | None = None
    effort: bool = False


@dataclass(frozen=True)
class Capabilities:
    """A model's context window, output limit and tool support."""
    context_window: int
    max_output_tokens: int
    supports_tools: bool


def _p(inp: float, out: float) -> Prices:
    return Prices(inp, out, inp * 1.25, inp * 0.1)


def _o(inp: float, out: float, cached: float) -> Prices:
    # OpenAI caches automatically: no write premium, a per-model discounted read price.
    return Prices(inp, out, inp, cached)


_FREE = Prices(0, 0, 0, 0)  # local models


MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("claude-opus-4-6", 200_000, 128_000, _p(5, 25), default_output=32_000, effort=True),
    ModelInfo("claude-opus-4-5", 200_000, 64_000, _p(5, 25), effort=True),
    ModelInfo("claude-opus-4-1", 200_000, 32_000, _p(15, 75)),
    ModelInfo("claude-opus-4", 200_000, 32_000, _p(15, 75)),
    ModelInfo("claude-sonnet-4-6", 200_000, 64_000, _p(3, 15), effort=True),
    ModelInfo("claude-sonnet-4-5", 200_000, 64_000, _p(3, 15)),
    ModelInfo("claude-sonnet-4", 200_000, 64_000, _p(3, 15)),
    ModelInfo("claude-3-7-sonnet", 200_000, 64_000, _p(3, 15), default_output=32_000),
    ModelInfo("claude-haiku-4-5", 200_000, 64_000, _p(1, 5)),
    ModelInfo("claude-3-5-haiku", 200_000, 8_192, _p(0.8, 4)),
    ModelInfo("claude-3-haiku", 200_000, 4_096, _p(0.25, 1.25)),
    # OpenAI
    ModelInfo("gpt-5", 400_000, 128_000, _o(1.25, 10, 0.125)),
    ModelInfo("gpt-5-mini", 400_000, 128_000, _o(0.25, 2, 0.025)),
    ModelInfo("gpt-5-nano", 400_000, 128_000, _o(0.05, 0.4, 0.005)),
    ModelInfo("gpt-4.1", 1_047_576, 32_768, _o(2, 8, 0.5)),
    ModelInfo("gpt-4.1-mini", 1_047_576, 32_768, _o(0.4, 1.6, 0.1)),
    ModelInfo("gpt-4.1-nano", 1_047_576, 32_768, _o(0.1, 0.4, 0.025)),
    ModelInfo("gpt-4o", 128_000, 16_384, _o(2.5, 10, 1.25)),
    ModelInfo("gpt-4o-mini", 128_000, 16_384, _o(0.15, 0.6, 0.075)),
    ModelInfo("o1", 200_000, 100_000, _o(15, 60, 7.5)),
    ModelInfo("o3", 200_000, 100_000, _o(2, 8, 0.5)),
    ModelInfo("o3-mini", 200_000, 100_000, _o(1.1, 4.4, 0.55)),
    ModelInfo("o4-mini", 200_000, 100_000, _o(1.1, 4.4, 0.275)),
    # open-weight models as Ollama / vLLM / llama.cpp / LM Studio name them (served locally: free)
    ModelInfo("gpt-oss", 131_072, 32_768, _FREE),
    ModelInfo("qwen3", 40_960, 32_768, _FREE),
    ModelInfo("qwen3-coder", 262_144, 65_536, _FREE),
    ModelInfo("qwen2.5-coder", 32_768, 8_192, _FREE),
    ModelInfo("qwen2.5", 32_768, 8_192, _FREE),
    ModelInfo("llama3.1", 131_072, 8_192, _FREE),
    ModelInfo("llama3.2", 131_072, 8_192, _FREE),
    ModelInfo("llama3.3", 131_072, 8_192, _FREE),
    ModelInfo("mistral", 32_768, 8_192, _FREE),
    ModelInfo("mistral-small", 131_072, 8_192, _FREE),
    ModelInfo("devstral", 131_072, 8_192, _FREE),
    ModelInfo("deepseek-r1", 131_072, 32_768, _FREE, supports_tools=False),
    ModelInfo("gemma3", 131_072, 8_192, _FREE, supports_tools=False),
    ModelInfo("phi4", 16_384, 4_096, _FREE, supports_tools=False),
    # `--model local…` (named local or local/<model>): the embedded runtime's default window
    ModelInfo("local", 16_384, 4_096, _FREE),
)
UNKNOWN = ModelInfo("", 200_000, 32_000, _p(3, 15))


def _longest_prefix(model: str, keys: Any) -> str | None:
    best: str | None = None
    for key in keys:
        if model.startswith(key.lower()) and (best is None or len(key) > len(best)):
            best = key
    return best


@lru_cache(maxsize=64)   # the table is fixed and model_info runs several times per request
def _table_row(model: str) -> ModelInfo:
    low = model.lower()
    rows = {info.prefix: info for info in MODELS}
    key = _longest_prefix(low, rows)
    if key is None and "/" in low:  # openrouter-style "vendor/model"
        key = _longest_prefix(low.rsplit("/", 1)[1], rows)
    return rows[key] if key is not None else UNKNOWN


_env_cache: tuple[str, dict[str, dict[str, Any]]] = ("", {})


def _env_overrides() -> dict[str, dict[str, Any]]:
    global _env_cache
    raw = os.environ.get("CODELOOP_MODEL_CAPABILITIES", "").strip()
    if raw != _env_cache[0]:  # parsed once per distinct value: model_info runs on every request
        parsed: dict[str, dict[str, Any]] = {}
        try:
            data = json.loads(raw) if raw else {}
            parsed = {str(k): dict(v) for k, v in data.items() if isinstance(v, dict)}
        except (ValueError, AttributeError):
            log.warning("CODELOOP_MODEL_CAPABILITIES is not a JSON object of objects; ignored")
        _env_cache = (raw, parsed)
    return _env_cache[1]


def _apply(info: ModelInfo, model: str, overrides: Mapping[str, Mapping[str, Any]]) -> ModelInfo:
    low = model.lower()
    key = _longest_prefix(low, overrides) or ("/" in low and _longest_prefix(low.rsplit("/", 1)[1], overrides))
    if not key:
        return info
    o = overrides[key]
    changes: dict[str, Any] = {}
    for name, cast in (("context_window", int), ("max_output_tokens", int), ("supports_tools", bool)):
        if o.get(name) is not None:
            try:
                changes[name] = cast(o[name])
            except (TypeError, ValueError):
                log.warning("ignoring bad %s override for %s: %r", name, key, o[name])
    return replace(info, **changes)


def model_info(model: str, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> ModelInfo:
    """The table row for `model` with env overrides, then `overrides`, applied (longest prefix wins)."""
    info = _apply(_table_row(model), model, _env_overrides())
    return _apply(info, model, overrides) if overrides else info


def capabilities(model: str, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Capabilities:
    info = model_info(model, overrides)
    return Capabilities(info.context_window, info.max_output_tokens, info.supports_tools)


def context_window(model: str) -> int:
    """The usable input window: the table's figure unless CODELOOP_CONTEXT_WINDOW overrides it."""
    env = os.environ.get("CODELOOP_CONTEXT_WINDOW", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return model_info(model).context_window


def output_reserve(model: str) -> int:
    """Tokens kept free below the window for the response: min(max output, 20k)."""
    return min(model_info(model).max_output_tokens, COMPACT_OUTPUT_RESERVE)


def default_output_tokens(model: str) -> int | None:
    """The max_tokens Claude Code asks for `model` by default; None for non-Claude models (they
    start at the loop's capped default and escalate on a cut)."""
    info = model_info(model)
    if info.default_output is not None:
        return min(info.default_output, info.max_output_tokens)
    name = model.lower().rsplit("/", 1)[-1]
    return info.max_output_tokens if name.startswith("claude") else None


def supports_effort(model: str) -> bool:
    """Whether the model takes `output_config.effort` (the effort beta)."""
    return model_info(model).effort
