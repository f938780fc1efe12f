"""Issue 24, the parity matrix: one session assembled once, so every front end and every subagent
gets the same capabilities. One end-to-end run per cell (capability × front end), black-box:
the real CLI as a subprocess (or on a pty, or under the Agent SDK) against the fake model, judged
by what the harness sent to the model, what it did on disk, and what it showed.

Front ends (tests/parity/parity_frontends.py): repl, print, stream-json, sdk — and `subagent`,
where the main thread (print mode) hands the work to an Agent subagent and the capability must
act inside the subagent's own requests.

Capabilities, each set up in the trusted project's own configuration:

    mcp           .mcp.json stdio server; the model calls mcp__parity__echo → the server's answer
    hook          PreToolUse command hook in .claude/settings.json blocks Read (exit 2, its stderr)
    deny          permissions.deny Read(./secret.txt) → the Read is refused, the secret never sent
    allow         permissions.allow in .claude/settings.local.json lets `./parity-tool.sh` run unasked
    sandbox       sandbox.enabled → a Bash write outside the project fails inside bubblewrap
    claude-md     CLAUDE.md's text reaches the request
    output-style  outputStyle → the custom style's text reaches the system prompt
    agent         .claude/agents/parity-reviewer.md → the Agent tool offers it, the subagent uses its prompt
    plugin        an installed plugin the project's enabledPlugins turns on: its PreToolUse hook, a script
                  named through ${CLAUDE_PLUGIN_ROOT}, blocks Read
    preconnect    the model speaks https: the first request's connection is opened while the session is
                  assembled — a UserPromptSubmit hook (after the assembly, before the first request is
                  built) sees the server's connection already taken

Cells that do not apply are left out, not skipped: output-style × subagent (a style shapes the
main thread's system prompt; a subagent's prompt is its definition, as in Claude Code) and
agent × subagent (a subagent has no Agent tool), preconnect × subagent (a subagent's requests go
through its parent's client, whose connection is open by then). `/model` then `/compact` lives in
test_parity_model_compact.py.

Cells expected to fail on today's code are asserted as they should behave — they are the point.
"""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from parity_frontends import FRONT_ENDS, NEEDS, Outcome, PrintMode
from paritykit import (AGENT_ID, CALL_ID, DONE, SUB_DONE, FakeModel, Project, Step, calls, delegates,
                       result_text, says, tool_description, tool_result)

PROMPT = "run the parity check"


@dataclass
class Cell:
    """One run of the matrix: what the thread under test sent, and what the user saw."""
    capability: str
    front_end: str
    project: Project
    model: FakeModel
    outcome: Outcome
    sub: bool                      # the thread under test is the subagent's
    ctx: dict[str, Any] = field(default_factory=dict)

    @property
    def thread(self):
        return self.model.thread(self.sub)

    def why(self, what: str) -> str:
        return (f"{self.capability} × {self.front_end}: {what}\nrequests:\n{self.model.describe()}\n"
                f"{self.outcome}")

    def call_result(self) -> dict[str, Any] | None:
        return tool_result(self.thread, CALL_ID)


# -- the capabilities -------------------------------------------------------------------------------
def prep_mcp(p: Project, ctx: dict) -> None:
    p.mcp_server("parity")
    p.settings({"permissions": {"allow": ["mcp__parity__echo"]}})


def check_mcp(c: Cell) -> None:
    res = c.call_result()
    body = result_text(res)
    offered = any("mcp__parity__echo" in r.tool_names for r in c.thread)
    assert res is not None and not res.get("is_error") and "echo: PARITY-MCP-PING" in body, \
        c.why(f"the MCP tool's answer did not come back (tool offered: {offered}): {body!r}")


def prep_hook(p: Project, ctx: dict) -> None:
    ctx["notes"] = p.write("notes.txt", "PARITY-NOTES-CONTENT\n")
    block = "echo 'PARITY-HOOK-BLOCKED: reading is off limits' >&2; exit 2"
    p.settings({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": block}]}]}})


def check_hook(c: Cell) -> None:
    body = result_text(c.call_result())
    assert "PARITY-HOOK-BLOCKED" in body and "PARITY-NOTES-CONTENT" not in body, \
        c.why(f"the PreToolUse hook did not block the Read: {body!r}")


def prep_deny(p: Project, ctx: dict) -> None:
    ctx["secret"] = p.write("secret.txt", "TOPSECRET-PARITY\n")
    p.settings({"permissions": {"deny": ["Read(./secret.txt)"]}})


def check_deny(c: Cell) -> None:
    res = c.call_result()
    body = result_text(res)
    assert res is not None and res.get("is_error") and "TOPSECRET-PARITY" not in body, \
        c.why(f"the denied Read was not refused: {body!r}")
    assert "TOPSECRET-PARITY" not in json.dumps([r.body for r in c.model.requests]), \
        c.why("the denied file's content reached the model")


def prep_allow(p: Project, ctx: dict) -> None:
    # a project script: a command codeloop cannot judge by itself, so without a rule it asks
    # (the REPL) or is refused (headless); what it does is seen on disk
    ctx["made"] = p.dir / "parity-allowed.txt"
    script = p.write("parity-tool.sh", "#!/bin/sh\necho made > parity-allowed.txt\necho PARITY-TOOL-RAN\n")
    script.chmod(0o755)
    p.settings({"permissions": {"allow": ["Bash(./parity-tool.sh)"]}}, local=True)


def check_allow(c: Cell) -> None:
    res = c.call_result()
    assert c.ctx["made"].exists() and res is not None and not res.get("is_error"), \
        c.why(f"the saved allow rule did not let the command run: {result_text(res)!r}")


def prep_sandbox(p: Project, ctx: dict) -> None:
    outside = Path("/var/tmp") / f"codeloop-parity-{uuid.uuid4().hex}"
    outside.mkdir()
    ctx["outside"], ctx["cleanup"] = outside, lambda: shutil.rmtree(outside, ignore_errors=True)
    p.settings({"sandbox": {"enabled": True}})


def check_sandbox(c: Cell) -> None:
    body = result_text(c.call_result())
    outside = c.ctx["outside"]
    assert list(outside.iterdir()) == [], c.why("a sandboxed Bash command wrote outside the project")
    assert "Read-only file system" in body, \
        c.why(f"the write was not run and stopped inside the sandbox: {body!r}")


def prep_claude_md(p: Project, ctx: dict) -> None:
    p.write("CLAUDE.md", "# Project rules\nPARITY-CLAUDE-MD-MARKER: keep answers short.\n")


def check_claude_md(c: Cell) -> None:
    assert c.thread, c.why("the thread under test sent no request")
    assert "PARITY-CLAUDE-MD-MARKER" in json.dumps(c.thread[0].body), \
        c.why("CLAUDE.md's text is not in the request")


def prep_style(p: Project, ctx: dict) -> None:
    p.write(".claude/output-styles/parity.md", "---\nname: Parity\ndescription: the parity test style\n---\n"
            "PARITY-OUTPUT-STYLE-MARKER: answer like a ship's log.\n")
    p.settings({"outputStyle": "Parity"})


def check_style(c: Cell) -> None:
    assert c.thread and "PARITY-OUTPUT-STYLE-MARKER" in c.thread[0].system_text, \
        c.why("the output style's text is not in the system prompt")


AGENT_FILE = ("---\nname: parity-reviewer\ndescription: Reviews parity (PARITY-AGENT-DESCRIPTION)\n"
              "tools: Read, Grep, Glob\n---\nPARITY-AGENT-PROMPT-MARKER: you are the parity reviewer.\n")


def prep_agent(p: Project, ctx: dict) -> None:
    p.write(".claude/agents/parity-reviewer.md", AGENT_FILE)


def check_agent(c: Cell) -> None:
    main, sub = c.model.thread(False), c.model.thread(True)
    assert main and "parity-reviewer" in tool_description(main[0], "Agent"), \
        c.why("the Agent tool does not offer the parity-reviewer definition")
    assert sub and "PARITY-AGENT-PROMPT-MARKER" in sub[0].system_text, \
        c.why("the subagent's request does not use the definition's prompt")
    answer = result_text(tool_result(main, AGENT_ID))
    assert SUB_DONE in answer, c.why(f"the subagent's report did not reach the main thread: {answer!r}")


def prep_plugin(p: Project, ctx: dict) -> None:
    ctx["notes"] = p.write("notes.txt", "PARITY-NOTES-CONTENT\n")
    root = p.cfg / "plugins" / "cache" / "parity" / "parity-plugin"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "parity-plugin", "version": "1.0.0"}))
    (root / "block.sh").write_text("#!/bin/sh\necho 'PARITY-PLUGIN-HOOK: reading is off limits' >&2\nexit 2\n")
    (root / "block.sh").chmod(0o755)
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": '"${CLAUDE_PLUGIN_ROOT}/block.sh"'}]}]}}))
    (p.cfg / "plugins" / "installed_plugins.json").write_text(json.dumps(
        {"version": 1, "plugins": {"parity-plugin@parity": {"installPath": str(root)}}}))
    p.settings({"enabledPlugins": {"parity-plugin@parity": True}})


def check_plugin(c: Cell) -> None:
    body = result_text(c.call_result())
    assert "PARITY-PLUGIN-HOOK" in body and "PARITY-NOTES-CONTENT" not in body, \
        c.why(f"the plugin's PreToolUse hook did not block the Read: {body!r}")


def prep_preconnect(p: Project, ctx: dict) -> None:
    from cli.test_preconnect import WAIT_FOR_CONNECTION
    from providers.test_lite_http import _self_signed

    tls = p.root / "tls"
    tls.mkdir()
    ctx["tls"] = _self_signed(tls)
    p.ca_file = ctx["tls"][0]
    ctx["marker"], ctx["seen"] = p.root / "connected", p.root / "seen"
    script = p.write("wait-for-connection.py", WAIT_FOR_CONNECTION)
    ctx["on_connect"] = ctx["marker"].touch
    hook = f"'{sys.executable}' '{script}' '{ctx['marker']}' '{ctx['seen']}'"
    p.settings({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}]}})


def check_preconnect(c: Cell) -> None:
    seen = c.ctx["seen"].read_text() if c.ctx["seen"].exists() else "(the hook did not run)"
    assert seen == "seen", c.why(f"the first request's connection was not open before it was built: {seen}")


@dataclass(frozen=True)
class Capability:
    name: str
    prepare: Callable[[Project, dict], None]        # lays out the project's configuration
    action: Callable[[dict], list[Step]]            # the thread's steps before its final answer
    check: Callable[[Cell], None]
    in_subagent: bool = True                        # does capability × subagent apply?
    needs: tuple[str, ...] = ()                     # fixtures that skip when the machine cannot run it


def nothing(ctx: dict) -> list[Step]:
    return []


CAPABILITIES = {c.name: c for c in (
    Capability("mcp", prep_mcp, lambda ctx: [calls("mcp__parity__echo", {"text": "PARITY-MCP-PING"})], check_mcp),
    Capability("hook", prep_hook, lambda ctx: [calls("Read", {"file_path": str(ctx["notes"])})], check_hook),
    Capability("deny", prep_deny, lambda ctx: [calls("Read", {"file_path": str(ctx["secret"])})], check_deny),
    Capability("allow", prep_allow, lambda ctx: [calls("Bash", {"command": "./parity-tool.sh"})],
               check_allow),
    Capability("sandbox", prep_sandbox,
               lambda ctx: [calls("Bash", {"command": f"echo escaped > {ctx['outside']}/escaped.txt"})],
               check_sandbox, needs=("need_sandbox",)),
    Capability("claude-md", prep_claude_md, nothing, check_claude_md),
    Capability("output-style", prep_style, nothing, check_style, in_subagent=False),
    Capability("agent", prep_agent, lambda ctx: [delegates("parity-reviewer")], check_agent, in_subagent=False),
    Capability("plugin", prep_plugin, lambda ctx: [calls("Read", {"file_path": str(ctx["notes"])})],
               check_plugin),
    Capability("preconnect", prep_preconnect, nothing, check_preconnect, in_subagent=False),
)}
SUBAGENT = "subagent"


def run_cell(cap: Capability, front_end: str, project: Project) -> Cell:
    ctx: dict[str, Any] = {}
    cap.prepare(project, ctx)
    try:
        steps = cap.action(ctx)
        sub = front_end == SUBAGENT
        if sub:
            model = FakeModel(main=[delegates(), says(DONE)], sub=[*steps, says(SUB_DONE)])
        else:
            model = FakeModel(main=[*steps, says(DONE)])
        runner = PrintMode() if sub else FRONT_ENDS[front_end]
        with model.api.serve(tls=ctx.get("tls"), on_connect=ctx.get("on_connect")) as url:
            outcome = runner.ask(project, url, PROMPT)
        cell = Cell(cap.name, front_end, project, model, outcome, sub, ctx)
        cap.check(cell)
        return cell
    finally:
        if "cleanup" in ctx:
            ctx["cleanup"]()


def _cells():
    for cap in CAPABILITIES.values():
        for fe in [*FRONT_ENDS, SUBAGENT]:
            if fe == SUBAGENT and not cap.in_subagent:
                continue
            yield pytest.param(cap.name, fe, id=f"{cap.name}-{fe}")


@pytest.mark.parametrize("capability,front_end", list(_cells()))
def test_parity(capability, front_end, project, request):
    cap = CAPABILITIES[capability]
    for need in (*cap.needs, *NEEDS.get(front_end, ())):
        request.getfixturevalue(need)
    cell = run_cell(cap, front_end, project)
    # the capability acted; the run also went on to the end, as a user or caller sees it
    assert cell.outcome.final is not None and DONE in cell.outcome.final, \
        cell.why("the run did not reach its final answer")
