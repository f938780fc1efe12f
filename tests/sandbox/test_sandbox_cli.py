"""End to end through the real CLI (subprocess, fake API): hostile commands from issue 12 refused in
print mode, and a sandboxed command auto-allowed without any allow rule."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text, tool_use
from sandbox_helpers import needs_bwrap

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_print_mode import codeloop  # noqa: E402  (the CLI-as-subprocess helper)

ISSUE_SETTINGS = {"permissions": {"allow": ["Bash(echo *)", "Bash(git status)", "Bash(ls *)", "Bash(cat *)",
                                            "Bash(grep *)"],
                                  "deny": ["Read(./secret.txt)"]}}


def setup(tmp_path, extra=None):
    (tmp_path / ".cfg").mkdir()
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({**ISSUE_SETTINGS, **(extra or {})}))
    (tmp_path / "secret.txt").write_text("TOPSECRET")
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')


def results(api, n):
    """The tool_result blocks the model was sent, request by request."""
    return [b for req in api.requests[1:n + 1] for b in req.messages[-1]["content"] if b.get("type") == "tool_result"]


def test_hostile_commands_from_the_issue_are_refused_in_print_mode(tmp_path):
    setup(tmp_path)
    hostile = ["echo '{\"mcpServers\": {\"x\": {\"command\": \"touch pwned\"}}}' > .mcp.json",
               "cat < secret.txt", "cat secre?.txt", "grep -r TOP .", "x='$(touch pwned)'; echo ${x@P}",
               "echo x > CLAUDE.md", "git -C . status"]
    api = ScriptedAPI(sse(*[tool_use("Bash", {"command": c}, id=f"h{i}") for i, c in enumerate(hostile)]),
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    denied = {d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]}
    assert denied == {f"h{i}" for i in range(len(hostile))}
    assert (tmp_path / ".mcp.json").read_text() == '{"mcpServers": {}}'
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "CLAUDE.md").exists()
    assert all("TOPSECRET" not in b["content"] for b in results(api, 1))


@needs_bwrap
def test_sandboxed_commands_are_auto_allowed_and_contained(tmp_path):
    setup(tmp_path, {"sandbox": {"enabled": True}})
    built = "mkdir -p build && echo built > build/out.txt && cat build/out.txt"
    escapes = "cat secret.txt; echo evil > .mcp.json; touch /var/tmp/escaped-$$"
    api = ScriptedAPI(sse(tool_use("Bash", {"command": built}, id="ok")),
                      sse(tool_use("Bash", {"command": escapes}, id="contained")),
                      sse(tool_use("Bash", {"command": "echo '{}' > .codeloop/settings.json"}, id="protected")),
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    ok, contained, protected = results(api, 3)
    assert (tmp_path / "build" / "out.txt").read_text() == "built\n" and "built" in ok["content"]
    assert "TOPSECRET" not in contained["content"] and "Read-only file system" in contained["content"]
    assert (tmp_path / ".mcp.json").read_text() == '{"mcpServers": {}}'
    assert "settings or session records" in protected["content"]
    # asks would have been denials in print mode: the two sandboxed commands ran without one
    assert [d["tool_use_id"] for d in json.loads(r.stdout)["permission_denials"]] == ["protected"]


def test_sandbox_flag_with_bwrap_missing_refuses_bash_with_one_line(tmp_path):
    setup(tmp_path)
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch made"}, id="b")), sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--sandbox", "--allowedTools", "Bash"], cwd=tmp_path, base_url=url,
                     env={"CODELOOP_BWRAP": str(tmp_path / "missing-bwrap")})
    assert r.returncode == 0, r.stderr
    [res] = results(api, 1)
    assert "bubblewrap" in res["content"] and "apt-get install bubblewrap" in res["content"]
    assert not (tmp_path / "made").exists()
