"""Which provider and model a run uses, and where its key comes from.

`--model provider:model`, `CODELOOP_PROVIDER` and settings pick the provider (anthropic by
default); `apiKeyHelper` supplies a key from a command; `--model local` starts the embedded
model; a missing Anthropic key is a `NoKeyError` naming where to get one and the alternatives.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from codeloop.session.options import NoKeyError, SetupError
from codeloop.providers.aliases import resolve_model


def _api_key_from_helper(command: str) -> str:
    """`apiKeyHelper`: a command whose stdout is the API key (trusted settings only)."""
    import subprocess

    try:
        out = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"apiKeyHelper failed: {exc}") from None
    if out.returncode != 0 or not out.stdout.strip():
        raise SetupError(f"apiKeyHelper exited {out.returncode} without printing a key: {out.stderr.strip()[:200]}")
    return out.stdout.strip()


def _wants_local(args: argparse.Namespace, settings: Any) -> bool:
    from codeloop.providers.select import resolve_provider

    try:
        return resolve_provider(args.model or settings.model(), env=os.environ,
                                settings=settings.merged)[0] == "local"
    except ValueError:
        return False


def _key_source(provider: Any, settings: Any) -> str:
    from codeloop.providers.select import api_key_source

    name = getattr(provider, "name", "anthropic")
    try:
        return api_key_source(name, helper=name == "anthropic" and bool(settings.api_key_helper()))
    except ValueError:
        return "none"


def _provider_and_model(args: argparse.Namespace, settings: Any, session_id: str) -> tuple[Any, str]:
    """`--model provider:model` / CODELOOP_PROVIDER / settings pick the provider; anthropic by default."""
    from codeloop.providers.errors import AuthenticationError
    from codeloop.providers.select import make_provider, resolve_provider

    try:
        name, model = resolve_provider(args.model or settings.model(), env=os.environ, settings=settings.merged)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    if name == "local":
        from codeloop.cli.startup.local_profile import start_local
        from codeloop.providers.local import context_size
        from codeloop.providers.local_model import LocalModelError
        from codeloop.session.store import config_dir

        # the window the runtime was started with is what compaction must plan for
        os.environ.setdefault("CODELOOP_CONTEXT_WINDOW", str(context_size()))
        try:
            return start_local(model, config_dir())
        except LocalModelError as exc:
            raise SetupError(str(exc)) from None
    try:
        if name == "anthropic":
            from codeloop.providers.anthropic import AnthropicProvider

            from codeloop.config.install_id import metadata_user_id
            from codeloop.providers.betas import split_betas

            helper = settings.api_key_helper()
            return (AnthropicProvider(api_key=_api_key_from_helper(helper) if helper else None,
                                      betas=split_betas(args.betas or []), user_id=metadata_user_id(session_id)),
                    resolve_model(model))
        if not model:
            raise SetupError(f"--model is required with the {name} provider (e.g. --model {name}:<model>)")
        return make_provider(name), model
    except AuthenticationError as exc:
        if name != "anthropic":
            raise SetupError(str(exc)) from None
        from codeloop.cli.startup.local_profile import no_key_message
        from codeloop.session.store import config_dir

        raise NoKeyError(no_key_message(str(exc), config_dir())) from None
    except ValueError as exc:
        raise SetupError(str(exc)) from None
