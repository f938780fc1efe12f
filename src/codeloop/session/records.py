"""Claude Code's transcript fields and metadata records beyond the message itself.

What its readers (the Agent SDK's `list_sessions()` / `get_session_messages()`, `claude --resume`)
look for: per-session writer fields on each message record (`userType`, `entrypoint`,
`gitBranch`), the `promptId` tying a turn's user records to its prompt, and the `last-prompt`
record a session listing shows as its summary. Metadata records carry no `uuid`, so they never
join the parentUuid chain.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from codeloop.messages import Message

LAST_PROMPT_CHARS = 200   # the SDK's listing truncates a summary to this much


def is_prompt(msg: Message) -> bool:
    """A prompt the user typed (or a script sent): not a tool result, not injected context."""
    return (msg.role == "user" and not msg.is_meta and msg.tool_use_result is None
            and not any(b.get("type") == "tool_result" for b in msg.content))


def writer_fields(cwd: Path | str) -> dict[str, Any]:
    """Who writes this session (`userType`; `entrypoint`: "cli", or the SDK's "sdk-py"/"sdk-ts"
    from CLAUDE_CODE_ENTRYPOINT) and the git branch it runs on (the SDK lists it as `git_branch`)."""
    from codeloop.context.prompt import find_git_root, git_branch

    fields: dict[str, Any] = {"userType": "external", "entrypoint": (
        os.environ.get("CODELOOP_ENTRYPOINT") or os.environ.get("CLAUDE_CODE_ENTRYPOINT") or "cli").strip()}
    root = find_git_root(Path(cwd))
    branch = git_branch(root) if root is not None else None
    if branch:
        fields["gitBranch"] = branch
    return fields


def last_prompt_record(msg: Message, session_id: str) -> dict[str, Any]:
    return {"type": "last-prompt", "lastPrompt": " ".join(msg.text.split())[:LAST_PROMPT_CHARS],
            "sessionId": session_id}
