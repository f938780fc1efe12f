"""Issue 25 item 10 in a real pseudo-terminal: the interactive session sandboxes Bash by default
(auto-allow, Claude Code's sandbox mode and Codex's default) where bubblewrap works; --no-sandbox
turns it off and Bash asks; a missing bwrap is said in one line and Bash asks; a call with
dangerouslyDisableSandbox asks, saying that it runs outside the sandbox."""

import time

import pytest

from codeloop.sandbox.bwrap import probe
from fakeapi import ScriptedAPI, sse, text, tool_use

needs_bwrap = pytest.mark.skipif(probe().error is not None, reason=f"bubblewrap cannot run here: {probe().error}")


def answer(t, key):
    time.sleep(0.3)   # the choice must be showing before the key arrives
    t.send(key)


@needs_bwrap
def test_default_repl_runs_bash_sandboxed_without_asking(tmp_path, run):
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    command = f"echo sandboxed-ok > made.txt && cat made.txt; echo escaped > {outside}/escape.txt || echo WRITE-BLOCKED"
    api = ScriptedAPI(sse(tool_use("Bash", {"command": command})), sse(text("All done here.")))
    with api.serve() as url:
        t = run(url)
        t.line("make the file")
        t.expect("All done here")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "Allow Bash" not in t.transcript and "Do you want" not in t.transcript   # no question
    assert "sandboxed-ok" in t.transcript and "WRITE-BLOCKED" in t.transcript      # ran, contained
    assert "sandbox off" not in t.transcript
    assert (tmp_path / "made.txt").read_text().strip() == "sandboxed-ok"
    assert not (outside / "escape.txt").exists()


def test_no_sandbox_flag_asks(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch asked.txt"})), sse(text("unused")))
    with api.serve() as url:
        t = run(url, "--no-sandbox")
        t.line("touch it")
        t.expect(r"Allow Bash\(touch asked.txt\)")
        answer(t, "\x1b")     # Esc: No
        t.expect("Interrupted")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert not (tmp_path / "asked.txt").exists()
    assert "sandbox off" not in t.transcript


def test_missing_bwrap_says_so_in_one_line_and_bash_asks(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "touch asked.txt"})), sse(text("Made it.")))
    with api.serve() as url:
        t = run(url, env={"CODELOOP_BWRAP": str(tmp_path / "no-such-bwrap")})
        t.line("touch it")
        t.expect(r"Allow Bash\(touch asked.txt\)")
        answer(t, "1")
        t.expect("Made it")
        t.line("/exit")
        assert t.wait_exit() == 0
    lines = [ln for ln in t.transcript.splitlines() if "sandbox off" in ln]
    assert len(lines) == 1 and "bubblewrap (bwrap) is not installed" in lines[0], lines
    assert (tmp_path / "asked.txt").exists()


@needs_bwrap
def test_dangerously_disable_sandbox_asks_saying_it_runs_outside(tmp_path, run):
    call = {"command": "echo outside-ok > out.txt", "dangerouslyDisableSandbox": True}
    api = ScriptedAPI(sse(tool_use("Bash", call)), sse(text("Ran outside.")))
    with api.serve() as url:
        t = run(url)
        t.line("run it unsandboxed")
        t.expect("outside the sandbox")
        t.expect(r"2\) No")          # Yes / No only: leaving the sandbox is never remembered
        answer(t, "1")
        t.expect("Ran outside")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "don't ask again" not in t.transcript
    assert (tmp_path / "out.txt").read_text().strip() == "outside-ok"


def test_bypass_asks_before_writing_a_guarded_folder_and_writes_the_exempt_ones(tmp_path, run):
    command, tasks = tmp_path / ".claude/commands/r.md", tmp_path / ".vscode/tasks.json"
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(command), "content": "Review"})),
                      sse(tool_use("Write", {"file_path": str(tasks), "content": "{}"})), sse(text("Wrote both.")))
    with api.serve() as url:
        t = run(url, "--dangerously-skip-permissions")
        t.line("write them")
        t.expect(r"Do you want to create tasks.json\?")
        t.expect(r"2\) No")          # once; no switch out of bypass to acceptEdits
        answer(t, "1")
        t.expect("Wrote both")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "r.md?" not in t.transcript                          # the exempt folder: no question
    assert "allow all edits" not in t.transcript
    assert (tmp_path / ".claude/commands/r.md").read_text() == "Review"
    assert (tmp_path / ".vscode/tasks.json").read_text() == "{}"
