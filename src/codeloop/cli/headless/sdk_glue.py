"""What an Agent SDK brings to a stream-json session, wired into the conversation.

Owns the SDK-facing parts the session runner (`stream_json.py`) delegates:
- `initialize`: hook callbacks for every event the SDK registers (they join the conversation's
  hook runner, so their answers mean what a shell hook's JSON means), programmatic `agents`, and
  the start of in-process SDK MCP servers over `mcp_message` control requests;
- subagent task events (`task_started` / `task_notification`) and subagent messages on stdout;
- `--session-mirror`: after each turn the new transcript entries go out as `transcript_mirror`
  frames, which the SDK hands to its `SessionStore` (Claude Code's protocol).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

from codeloop.cli.headless import control
from codeloop.cli.headless.control import ControlSubtype
from codeloop.messages import new_uuid
from codeloop.hooks.events import (DEFAULT_TIMEOUT_S, MATCH_FIELD, CallbackSource, HookCallback, HookEvent,
                                   OnFailure, matcher_matches)


class SdkHooks(CallbackSource):
    """The SDK's registrations: each callback id is answered by a `hook_callback` control request."""

    def __init__(self, registry: control.HookRegistry, ask: Any) -> None:
        self.registry, self.ask = registry, ask

    def callbacks_for(self, event: HookEvent, match_value: str | None) -> list[HookCallback]:
        out = []
        for m in self.registry.matchers.get(event.value, []):
            # events without a matcher field ignore the matcher, as Claude Code does
            if event in MATCH_FIELD and not matcher_matches(m.get("matcher"), match_value):
                continue
            timeout = m.get("timeout")
            timeout = float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else DEFAULT_TIMEOUT_S
            # the SDK documents an unknown onFailure value as "block" (fail closed)
            fail = OnFailure.CONTINUE if m.get("onFailure") in (None, "continue") else OnFailure.BLOCK
            out += [HookCallback(f"callback {cid}", partial(self._call, cid), timeout, fail)
                    for cid in m.get("hookCallbackIds") or [] if isinstance(cid, str)]
        return out

    async def _call(self, callback_id: str, data: dict[str, Any]) -> dict[str, Any]:
        answer = await self.ask(ControlSubtype.HOOK_CALLBACK, callback_id=callback_id, input=data,
                                tool_use_id=data.get("tool_use_id"))
        return {} if answer.get("async") is True else answer  # an async hook decides nothing


class SdkGlue:
    """One per stream-json session; `session` is the StreamJsonSession (conv, ask, out)."""

    def __init__(self, session: Any, mirror: bool = False) -> None:
        self.session = session
        self.ready_task: asyncio.Future | None = None
        self.mirror_offset = 0 if mirror else None  # None: --session-mirror is off
        self.offsets: dict[Path, int] = {}
        self.meta_sent: set[Path] = set()
        if session.options.output.include_hook_events:
            install_hook_events(session.conv, session.out)

    @property
    def conv(self) -> Any:
        return self.session.conv

    # -- initialize --------------------------------------------------------------------------------
    def initialize(self, req: dict[str, Any]) -> dict[str, Any]:
        registry = control.HookRegistry.from_initialize(req.get("hooks"))
        self.session.hooks = registry
        self.session.forward_subagent_text = req.get("forwardSubagentText") is True
        if registry.matchers:
            self._install_hooks(registry)
        if req.get("agents"):
            self._add_agents(req["agents"])
        mcp = self.conv.mcp
        if mcp is not None and mcp.deferred_sdk:
            self.ready_task = asyncio.ensure_future(mcp.start_sdk(self.mcp_send))
        return control.initialize_response(self.conv)

    def _install_hooks(self, registry: control.HookRegistry) -> None:
        self.conv.add_hook_callbacks(SdkHooks(registry, self.session.ask))
        if self.session.options.output.include_hook_events:
            install_hook_events(self.conv, self.session.out)

    def _add_agents(self, raw: Any) -> None:
        from codeloop.tools.agents import definitions_from_json

        try:
            added = definitions_from_json(raw)
        except ValueError as exc:
            raise control.ControlError(str(exc).replace("--agents", "agents")) from None
        self.conv.add_agents(added)

    async def mcp_send(self, server: str, message: dict[str, Any]) -> dict[str, Any] | None:
        answer = await self.session.ask(ControlSubtype.MCP_MESSAGE, server_name=server, message=message)
        reply = answer.get("mcp_response")
        return reply if isinstance(reply, dict) else None

    async def ready(self) -> None:
        """Before a query: the SDK MCP servers have connected (or failed)."""
        if self.ready_task is not None:
            task, self.ready_task = self.ready_task, None
            await task
            for line in (self.conv.mcp.problems() if self.conv.mcp else []):
                sys.stderr.write(f"codeloop: warning: mcp: {line}\n")

    # -- output ------------------------------------------------------------------------------------
    def mirror(self, emit: Any) -> None:
        """--session-mirror: the transcript entries written since the last call — the main
        transcript's, then each subagent's — one frame per file. `filePath` is where Claude Code
        keeps that transcript, which is what the SDK keys the store by (project key, session id,
        `subagents/agent-<id>` subpath)."""
        if self.mirror_offset is None:
            return
        main = Path(self.conv.transcript_path)
        here, there = main.parent, claude_transcript_path(self.conv).parent
        subagents = sorted((here / self.conv.session_id / "subagents").glob("agent-*.jsonl"))
        for path in [main, *subagents]:
            entries = self._new_entries(path)
            if path != main and path not in self.meta_sent and entries:
                # a store has no sidecar files: the `.meta.json` goes along as an agent_metadata entry
                self.meta_sent.add(path)
                meta = _read_json(path.with_name(path.name.removesuffix(".jsonl") + ".meta.json"))
                if meta is not None:
                    entries.insert(0, {**meta, "type": "agent_metadata"})
            if entries:
                emit({"type": "transcript_mirror", "filePath": str(there / path.relative_to(here)),
                      "entries": entries})

    def _new_entries(self, path: Path) -> list[dict[str, Any]]:
        offset = self.offsets.get(path, 0)
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1  # whole lines only: a torn tail waits for the next frame
        self.offsets[path] = offset + end
        entries = []
        for line in data[:end].splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
        return entries


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def install_hook_events(conv: Any, out: Any) -> None:
    """--include-hook-events: hook_started / hook_response system lines on stdout, as they happen."""
    from codeloop.cli.headless.output import emit

    runner = conv.hooks.runner
    if runner is not None:
        runner.observer = lambda record: emit(out, {"type": "system", **record, "session_id": conv.session_id,
                                                     "uuid": new_uuid()})


def claude_transcript_path(conv: Any) -> Path:
    from codeloop.session.store import project_key

    home = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(home) / "projects" / project_key(conv.config.cwd) / f"{conv.session_id}.jsonl"
