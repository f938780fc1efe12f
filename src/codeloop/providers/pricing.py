"""What a Usage costs in dollars, from the per-model price table (`providers.models`).

Kept apart from `codeloop.usage` (a core type) because the prices are the providers' knowledge.
"""

from __future__ import annotations

from codeloop.usage import Usage


def cost_usd(usage: Usage, model: str) -> float:
    from codeloop.providers.models import model_info

    p = model_info(model).prices
    return (usage.input_tokens * p.input + usage.output_tokens * p.output
            + usage.cache_creation_input_tokens * p.cache_write
            + usage.cache_read_input_tokens * p.cache_read) / 1_000_000 \
        + usage.web_search_requests * WEB_SEARCH_USD


WEB_SEARCH_USD = 0.01  # $10 per 1,000 searches (Anthropic's web search price)
