"""Hook-event test helpers: recorder hooks (real shell scripts saving each payload) and a real
Conversation on the scripted fake API with those hooks in its settings."""

from __future__ import annotations

import json

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.tools.registry import builtin_tools


def recorder(tmp_path, name: str, answer: str = "", code: int = 0) -> dict:
    """A hook group whose command saves its stdin in a file of its own under `name`/, then answers
    (parallel hooks: one file per call, nothing interleaves)."""
    log = tmp_path / name
    log.mkdir(exist_ok=True)
    script = tmp_path / f"{name}.sh"
    script.write_text(f"#!/bin/sh\ncat > \"$(mktemp '{log}/call.XXXXXX')\"\n"
                      + (f"cat <<'JSON'\n{answer}\nJSON\n" if answer else "")
                      + (f"echo refused >&2; exit {code}\n" if code else ""))
    script.chmod(0o755)
    return {"hooks": [{"type": "command", "command": str(script)}]}


def calls(tmp_path, name: str) -> list[dict]:
    """The payloads a recorder saw, in the order the hooks ran."""
    path = tmp_path / name
    files = sorted(path.iterdir(), key=lambda f: f.stat().st_mtime_ns) if path.exists() else []
    return [json.loads(f.read_text()) for f in files]


def conv_for(api, cwd, hooks, mode=PermissionMode.BYPASS, **kw):
    cfg = ConversationConfig(cwd=cwd, model="claude-sonnet-4-5", tools=builtin_tools(), system_prompt=["t"],
                             user_context={}, policy=PermissionPolicy(mode=mode, cwd=cwd, **kw),
                             hooks={"hooks": hooks})
    return Conversation(cfg, AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                        session_id="11111111-2222-4333-8444-555555555555")


async def submit(conv, prompt="go") -> list:
    try:
        return [ev async for ev in conv.submit(prompt)]
    finally:
        conv.close()
