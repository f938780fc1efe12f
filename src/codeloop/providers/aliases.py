"""Model names as users type them: the `sonnet` / `opus` / `haiku` aliases, and the default.

Flags, slash commands, agent definitions and the library all name models; resolving the name
belongs with the model table, below every one of them.
"""

from __future__ import annotations

import os

MODEL_ALIASES = {"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5"}


def resolve_model(flag: str | None) -> str:
    from codeloop.providers.models import DEFAULT_MODEL

    model = (flag or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL).strip()
    return MODEL_ALIASES.get(model, model)
