"""Which provider serves a session, and building it.

`resolve_provider(--model, env=, settings=)` reads `--model provider:model` (only when the part
before the first ':' is a known provider, so Ollama tags such as `qwen3:8b` stay whole), else
`CODELOOP_PROVIDER`, else settings `provider`, else anthropic. `--model local[:model]` is the
embedded local model (`local.py`), which the CLI starts itself. `make_provider(name)` builds it
with each provider's conventional base URL and key variable; hosted providers without their
key raise `AuthenticationError` before any request is sent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from codeloop.providers.errors import AuthenticationError


class ProviderKind(str, Enum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    OPENROUTER = "openrouter"
    OLLAMA = "ollama"
    LMSTUDIO = "lmstudio"
    VLLM = "vllm"
    LLAMACPP = "llamacpp"
    LOCAL = "local"               # the embedded llama.cpp runtime (codeloop[local])


@dataclass(frozen=True)
class Endpoint:
    """Where a provider kind finds its base URL and API key."""
    base_env: str | None          # env var naming the base URL
    default_base: str | None
    key_env: str | None           # env var holding the key (None: never send one)
    key_required: bool


ENDPOINTS: dict[ProviderKind, Endpoint] = {
    ProviderKind.OPENAI: Endpoint("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY", True),
    ProviderKind.OPENROUTER: Endpoint("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1",
                                      "OPENROUTER_API_KEY", True),
    # Local servers: their own base variable, never an OpenAI key (it may be a real one).
    ProviderKind.OLLAMA: Endpoint("OLLAMA_BASE_URL", "http://localhost:11434/v1", None, False),
    ProviderKind.LMSTUDIO: Endpoint("LMSTUDIO_BASE_URL", "http://localhost:1234/v1", None, False),
    # vLLM and llama.cpp are usually pointed at with OPENAI_BASE_URL (and --api-key → OPENAI_API_KEY).
    ProviderKind.VLLM: Endpoint("OPENAI_BASE_URL", "http://localhost:8000/v1", "OPENAI_API_KEY", False),
    ProviderKind.LLAMACPP: Endpoint("OPENAI_BASE_URL", "http://localhost:8080/v1", "OPENAI_API_KEY", False),
}


class ProviderSelectionError(ValueError):
    """An unknown provider name, or a configuration that cannot select one."""


def _kind(name: str) -> ProviderKind:
    try:
        return ProviderKind(name.strip().lower())
    except ValueError:
        known = ", ".join(k.value for k in ProviderKind)
        raise ProviderSelectionError(f"unknown provider {name!r} (known: {known})") from None


def split_model_flag(flag: str) -> tuple[ProviderKind | None, str]:
    """`openai:gpt-4o` → (OPENAI, 'gpt-4o'); `qwen3:8b` → (None, 'qwen3:8b'); `local` → (LOCAL, '')."""
    if flag.strip().lower() == ProviderKind.LOCAL.value:
        return ProviderKind.LOCAL, ""
    head, sep, rest = flag.partition(":")
    if sep:
        try:
            return ProviderKind(head.strip().lower()), rest.strip()
        except ValueError:
            pass
    return None, flag.strip()


def resolve_provider(model_flag: str | None, *, env: Mapping[str, str] | None = None,
                     settings: Mapping[str, Any] | None = None) -> tuple[str, str | None]:
    """(provider name, model) for a session.

    The model is what follows the provider prefix, else the flag as given, else `None` — the caller
    applies its default model (and aliases) for anthropic; other providers have no sensible
    default, so `None` there should become a "--model is required" message.
    """
    env = os.environ if env is None else env
    settings = settings or {}
    if model_flag:
        kind, model = split_model_flag(model_flag)
        if kind is not None:
            return kind.value, model or None
    else:
        model = None
    name = env.get("CODELOOP_PROVIDER") or settings.get("provider") or ProviderKind.ANTHROPIC.value
    return _kind(str(name)).value, model or None


def make_provider(name: str, *, env: Mapping[str, str] | None = None, base_url: str | None = None,
                  api_key: str | None = None, transport: Any = None, **kwargs: Any) -> Any:
    """A ready provider for `name` (a `ProviderKind` value). Raises `AuthenticationError` when a
    hosted provider has no key, `ProviderSelectionError` for an unknown name."""
    env = os.environ if env is None else env
    kind = _kind(name)
    if kind is ProviderKind.ANTHROPIC:
        from codeloop.providers.anthropic import AnthropicProvider

        return AnthropicProvider(api_key, base_url=base_url, transport=transport, **kwargs)
    if kind is ProviderKind.LOCAL:
        raise ProviderSelectionError("the local provider is started with start_local_provider()")
    from codeloop.providers.openai_compat import OpenAICompatProvider, is_openai_host

    ep = ENDPOINTS[kind]
    base = base_url or (env.get(ep.base_env) if ep.base_env else None) or ep.default_base
    key = api_key if api_key is not None else (env.get(ep.key_env) if ep.key_env else None)
    # OpenAI pointed at a self-hosted base URL (OPENAI_BASE_URL) needs no key.
    required = ep.key_required and (kind is not ProviderKind.OPENAI or is_openai_host(base or ""))
    if required and not key:
        raise AuthenticationError(no_key_message(f"{ep.key_env} is not set.", kind))
    headers = {"x-title": "codeloop"} if kind is ProviderKind.OPENROUTER else None
    kwargs.setdefault("base_env", ep.base_env)
    kwargs.setdefault("key_env", ep.key_env)
    return OpenAICompatProvider(api_key=key or "", base_url=base, transport=transport, require_key=required,
                                name=kind.value, extra_headers=headers, **kwargs)


def api_key_source(name: str, *, env: Mapping[str, str] | None = None, helper: bool = False) -> str:
    """What `system/init` reports as `apiKeySource`, in Claude Code's vocabulary: the variable the
    key came from, "apiKeyHelper", or "none" (no key: local servers, the embedded model)."""
    env = os.environ if env is None else env
    kind = _kind(name)
    if kind is ProviderKind.ANTHROPIC:
        if helper:
            return "apiKeyHelper"
        return next((v for v in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if env.get(v)), "none")
    ep = ENDPOINTS.get(kind)
    return ep.key_env if ep is not None and ep.key_env and env.get(ep.key_env) else "none"


KEY_PAGES = {ProviderKind.ANTHROPIC: "https://console.anthropic.com/settings/keys",
             ProviderKind.OPENAI: "https://platform.openai.com/api-keys",
             ProviderKind.OPENROUTER: "https://openrouter.ai/keys"}


def no_key_message(first: str, kind: ProviderKind = ProviderKind.ANTHROPIC) -> str:
    """The missing-key error a new user sees — where to get a key, and the other ways to start —
    on one line (scripts read the first line of stderr)."""
    env = "ANTHROPIC_API_KEY" if kind is ProviderKind.ANTHROPIC else ENDPOINTS[kind].key_env
    first = first.split(". ")[0].rstrip(".")
    return (f"{first}: get a key at {KEY_PAGES.get(kind, 'your provider')} and export {env}=<key>, "
            "or use another provider: --model openai:gpt-4o (OPENAI_API_KEY), "
            "--model openrouter:<vendor/model> (OPENROUTER_API_KEY), --model ollama:qwen3:8b (a local Ollama "
            "server, no key), or --model local (a model on this machine: pip install 'codeloop[local,local-model]')")


def model_problem(model: str) -> str | None:
    """Why `model` is probably not a model the chosen provider serves, or None. Only names for the
    Anthropic API are judged (other providers serve models codeloop cannot list)."""
    import difflib

    from codeloop.providers.aliases import MODEL_ALIASES
    from codeloop.providers.models import MODELS

    kind, name = split_model_flag(model)
    if kind is not None or ":" in name or "/" in name:
        return None
    if name in MODEL_ALIASES or name.lower().startswith("claude-"):
        return None
    candidates = [*MODEL_ALIASES, *(m.prefix for m in MODELS if m.prefix.startswith("claude-"))]
    found = difflib.get_close_matches(name.lower(), candidates, n=1, cutoff=0.6)
    best = found[0] if found else None
    if best:
        return f"unknown model {name!r} (did you mean {best}?)"
    if any(name.lower().startswith(m.prefix) for m in MODELS):  # gpt-4o, qwen3 … without a provider
        return f"{name!r} is not an Anthropic model; name the provider, e.g. --model openai:{name}"
    return (f"unknown model {name!r}; use an alias ({', '.join(MODEL_ALIASES)}), a claude-… id, "
            "or provider:model (openai:gpt-4o, ollama:qwen3:8b)")
