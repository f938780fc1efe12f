"""The parity matrix's fixtures on disk and on the wire: an isolated, trusted project and a fake model.

`Project` lays out one run's world in tmp_path, nothing shared with the machine:

    tmp_path/home   HOME (so ~/.claude is empty)
    tmp_path/cfg    CODELOOP_CONFIG_DIR, whose trust store trusts the project (no --trust flag,
                    no CODELOOP_TRUST: every front end, the SDK included, reads the same store)
    tmp_path/proj   the working directory: .claude/settings.json, .mcp.json, CLAUDE.md, agents …

`FakeModel` answers the harness's requests by what they are rather than by their order, so an
extra side request on one front end cannot shift the script: a compaction request gets a summary;
a request whose opening user message holds `SUB_MARK` belongs to the subagent thread; anything
else is the main thread. Within a thread, the answer is picked by how many assistant turns the
request already carries (0 → the first step, 1 → the second, …), so tool results always get the
next step. Every request is recorded by the underlying `fakeapi.ScriptedAPI`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fakeapi import Request, Response, ScriptedAPI, sse, text, tool_use

TESTS = Path(__file__).resolve().parent.parent
MCP_SERVER = TESTS / "mcp" / "servers" / "tools_server.py"

DONE = "PARITY-DONE"                    # the main thread's final answer
SUB_MARK = "PARITY-SUBAGENT-TASK"       # only in the prompt the main thread hands a subagent
SUB_DONE = "PARITY-SUBAGENT-REPORT"     # the subagent's final answer
SUMMARY = "PARITY-SUMMARY"              # the compaction summary
CALL_ID = "toolu_parity_call"           # the tool call that exercises a capability
AGENT_ID = "toolu_parity_agent"         # the main thread's Agent call
COMPACTION_PHRASE = "summary of the conversation"   # in every compaction request's instructions

Step = Callable[[], Response]


# -- the project ------------------------------------------------------------------------------------
class Project:
    """One isolated, trusted project folder with its own HOME and config dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home, self.cfg, self.dir = root / "home", root / "cfg", root / "proj"
        for d in (self.home, self.cfg, self.dir):
            d.mkdir(parents=True, exist_ok=True)
        self.dir = self.dir.resolve()
        self.ca_file: str | None = None   # a CA bundle every front end trusts (SSL_CERT_FILE)
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        (self.cfg / "trusted-folders.json").write_text(json.dumps({"folders": {str(self.dir): {"trusted_at": stamp}}}))

    def write(self, rel: str, content: str) -> Path:
        path = self.dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return path

    def settings(self, data: dict[str, Any], *, local: bool = False) -> None:
        """Merge `data` (top-level keys) into .claude/settings.json (or settings.local.json)."""
        path = self.dir / ".claude" / ("settings.local.json" if local else "settings.json")
        current = json.loads(path.read_text()) if path.is_file() else {}
        current.update(data)
        self.write(str(path.relative_to(self.dir)), json.dumps(current, indent=2))

    def mcp_server(self, name: str = "parity") -> None:
        """The test MCP server (tests/mcp/servers/tools_server.py) in the project's .mcp.json."""
        self.write(".mcp.json", json.dumps({"mcpServers": {name: {
            "type": "stdio", "command": sys.executable, "args": [str(MCP_SERVER), "stdio"]}}}))

    def env(self, base_url: str) -> dict[str, str]:
        """The environment of every front end: the machine's own ANTHROPIC_/CODELOOP_/CLAUDE_
        variables dropped; CODELOOP_BWRAP (a bwrap somewhere else) passed through; the project's
        CA bundle trusted, when it has one (an https fake model)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_"))}
        env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": base_url, "HOME": str(self.home),
                    "CODELOOP_CONFIG_DIR": str(self.cfg), "PYTHONUNBUFFERED": "1"})
        if self.ca_file is not None:
            env["SSL_CERT_FILE"] = self.ca_file
        if os.environ.get("CODELOOP_BWRAP"):
            env["CODELOOP_BWRAP"] = os.environ["CODELOOP_BWRAP"]
        return env

    def cli_path(self) -> str:
        """An executable that is `codeloop` (for the SDK's cli_path), whatever PATH holds."""
        exe = self.root / "codeloop"
        if not exe.exists():
            exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m codeloop "$@"\n')
            exe.chmod(0o755)
        return str(exe)


# -- reading recorded requests -----------------------------------------------------------------------
def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def opening(req: Request) -> str:
    """Everything the user side said before the first assistant turn (prompt, context reminders)."""
    out = []
    for m in req.messages:
        if m.get("role") == "assistant":
            break
        out.append(json.dumps(m.get("content")))
    return "\n".join(out)


def is_subagent(req: Request) -> bool:
    return SUB_MARK in opening(req)


def is_compaction(req: Request) -> bool:
    last = req.messages[-1] if req.messages else {}
    return last.get("role") == "user" and COMPACTION_PHRASE in json.dumps(last.get("content"))


def assistant_turns(req: Request) -> int:
    return sum(1 for m in req.messages if m.get("role") == "assistant")


def tool_result(requests: list[Request], tool_use_id: str) -> dict[str, Any] | None:
    """The tool_result block answering `tool_use_id`, as the model was last sent it."""
    for req in reversed(requests):
        for m in req.messages:
            if m.get("role") != "user":
                continue
            for b in _blocks(m):
                if b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id:
                    return b
    return None


def result_text(block: dict[str, Any] | None) -> str:
    if block is None:
        return "<no tool_result was sent>"
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content or [])


def tool_description(req: Request, name: str) -> str:
    return next((t.get("description", "") for t in req.body.get("tools", []) if t.get("name") == name), "")


# -- the fake model ----------------------------------------------------------------------------------
def says(s: str) -> Step:
    return lambda: sse(text(s))


def calls(name: str, inp: dict[str, Any], *, id: str = CALL_ID) -> Step:
    return lambda: sse(tool_use(name, inp, id=id))


def delegates(subagent_type: str = "general-purpose", task: str = "run the parity check") -> Step:
    """The main thread's Agent call, handing the subagent a prompt that carries SUB_MARK."""
    return calls("Agent", {"description": "parity check", "prompt": f"{SUB_MARK}: {task}",
                           "subagent_type": subagent_type}, id=AGENT_ID)


@dataclass
class FakeModel:
    """Scripted answers per thread (see the module docstring); `api` records every request."""
    main: list[Step]
    sub: list[Step] = field(default_factory=lambda: [says(SUB_DONE)])
    api: ScriptedAPI = field(init=False)

    def __post_init__(self) -> None:
        self.api = ScriptedAPI(*[self._answer] * 200)

    def _answer(self, req: Request) -> Response:
        if is_compaction(req):
            return sse(text(f"<summary>{SUMMARY}: the user said hello.</summary>"))
        steps = self.sub if is_subagent(req) else self.main
        return steps[min(assistant_turns(req), len(steps) - 1)]()

    @property
    def requests(self) -> list[Request]:
        return list(self.api.requests)

    def thread(self, sub: bool) -> list[Request]:
        return [r for r in self.requests if not is_compaction(r) and is_subagent(r) == sub]

    def compactions(self) -> list[Request]:
        return [r for r in self.requests if is_compaction(r)]

    def describe(self) -> str:
        """A short account of what was requested, for failure messages."""
        rows = []
        for i, r in enumerate(self.requests):
            kind = "compact" if is_compaction(r) else "sub" if is_subagent(r) else "main"
            rows.append(f"  #{i} {kind} model={r.body.get('model')} turns={assistant_turns(r)} "
                        f"tools={len(r.tool_names)}")
        return "\n".join(rows) or "  (no request)"
