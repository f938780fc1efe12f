"""Issue 17 items 1, 2 and 8 in a real pseudo-terminal: TodoWrite never asks and draws a
checklist; Edit/Write are validated and previewed in the dialog; "don't ask again" switches to
acceptEdits (edits) or saves a Bash prefix rule; refusals and /clear leak no internal text."""

import json
import os
import subprocess
import sys
import time

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use


def cli_env(cwd, url):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "HOME": str(cwd),
                "CODELOOP_CONFIG_DIR": str(cwd / ".cfg")})
    return env


def answer(t, key):
    time.sleep(0.3)   # the choice must be showing before the key arrives
    t.send(key)


TODOS = [{"content": "Write the parser", "activeForm": "Writing the parser", "status": "completed"},
         {"content": "Test the parser", "activeForm": "Testing the parser", "status": "in_progress"},
         {"content": "Document it", "activeForm": "Documenting it", "status": "pending"}]


def test_todowrite_never_asks_and_draws_a_checklist(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("TodoWrite", {"todos": TODOS})), sse(text("Plan recorded.")))
    with api.serve() as url:
        t = run(url)
        t.line("plan the work")
        t.expect("Update Todos")
        t.expect("☒ Write the parser")
        t.expect("☐ Test the parser")
        t.expect("☐ Document it")
        t.expect("Plan recorded")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "Allow" not in t.transcript and "Do you want" not in t.transcript
    assert "Todos have been modified" not in t.transcript   # the model-facing text is not drawn
    result = api.requests[1].messages[-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan"])
def test_todowrite_runs_in_print_mode_in_every_mode(tmp_path, mode):
    api = ScriptedAPI(sse(tool_use("TodoWrite", {"todos": TODOS})), sse(text("ok")))
    with api.serve() as url:
        run = subprocess.run([sys.executable, "-m", "codeloop", "-p", "plan it", "--permission-mode", mode,
                              "--output-format", "json"], cwd=tmp_path, env=cli_env(tmp_path, url),
                             capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["permission_denials"] == []
    result = api.requests[1].messages[-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")
    assert "Todos have been modified" in json.dumps(result)


def test_edit_is_previewed_in_the_dialog_and_always_switches_to_accept_edits(tmp_path, run):
    target = tmp_path / "app.py"
    target.write_text("def greet():\n    return 'hello'\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(target)})),
                      sse(tool_use("Edit", {"file_path": str(target), "old_string": "'hello'",
                                            "new_string": "'bonjour'"})),
                      sse(text("Changed the greeting.")))
    with api.serve() as url:
        t = run(url)
        t.line("translate the greeting")
        t.expect("Edit file")
        t.expect(r"-    return 'hello'")
        t.expect(r"\+    return 'bonjour'")
        t.expect("Do you want to make this edit to app.py")
        assert "bonjour" not in target.read_text()       # asked before, not after
        answer(t, "2")                                    # Yes, allow all edits during this session
        t.expect("Changed the greeting")
        t.expect("accept edits on")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "bonjour" in target.read_text()


def test_an_edit_that_cannot_apply_fails_without_asking(tmp_path, run):
    target = tmp_path / "dup.py"
    target.write_text("x = 1\nx = 1\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(target)})),
                      sse(tool_use("Edit", {"file_path": str(target), "old_string": "x = 1", "new_string": "x = 2"})),
                      sse(tool_use("Edit", {"file_path": str(tmp_path / "unread.py"), "old_string": "a",
                                            "new_string": "b"})),
                      sse(text("I will add more context.")))
    (tmp_path / "unread.py").write_text("a\n")
    with api.serve() as url:
        t = run(url)
        t.line("bump x")
        t.expect("Found 2 matches")
        t.expect("has not been read yet")
        t.expect("I will add more context")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "Do you want" not in t.transcript and "<tool_use_error>" not in t.transcript
    assert target.read_text() == "x = 1\nx = 1\n" and (tmp_path / "unread.py").read_text() == "a\n"
    assert api.requests[3].messages[-1]["content"][0]["is_error"]


def test_write_of_a_new_file_shows_its_content(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(tmp_path / "notes.txt"),
                                             "content": "first line\nsecond line\n"})),
                      sse(text("Wrote it.")))
    with api.serve() as url:
        t = run(url)
        t.line("write notes")
        t.expect("Create file")
        t.expect("second line")
        t.expect("Do you want to create notes.txt")
        answer(t, "1")
        t.expect("Wrote it")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert (tmp_path / "notes.txt").read_text() == "first line\nsecond line\n"


def test_bash_always_saves_a_prefix_rule_to_settings_local(tmp_path, run):
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"KEEP": "me"}, "permissions": {"allow": ["Read"]}}))
    # issue 25: `git status` itself no longer asks where no configuration names a program for it,
    # so the question is about a git command that always asks
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "git stash list"})), sse(text("Clean tree.")),
                      sse(tool_use("Bash", {"command": "git stash list --date=relative"})), sse(text("Still clean.")))
    with api.serve() as url:
        t = run(url, "--trust", "--no-sandbox")   # the question is the subject: no default sandbox
        t.line("status?")
        t.expect(r"Bash\(git stash:\*\)")
        answer(t, "2")
        t.expect("Saved")
        t.expect("Clean tree")
        t.ready()
        t.line("again")
        t.expect("Still clean")     # the saved rule answers: no second question
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "Allow Bash(git stash list --date=relative)?" not in t.transcript
    data = json.loads(settings.read_text())
    assert data["env"] == {"KEEP": "me"}
    assert data["permissions"]["allow"] == ["Read", "Bash(git stash:*)"]


def test_a_refusal_reads_cleanly_and_clear_leaks_nothing(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "rm -rf build"})), sse(text("unused")))
    with api.serve() as url:
        t = run(url, "--no-sandbox")   # the question is the subject: no default sandbox
        t.line("clean up")
        t.expect(r"Allow Bash\(rm -rf build\)")
        answer(t, "3")
        t.expect("Interrupted")
        t.ready()
        t.line("/clear")
        t.expect("Started a new session")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "No (you declined" in t.transcript
    assert "<tool_use_error>" not in t.transcript and "(no content)" not in t.transcript


def test_custom_command_is_echoed_as_typed(tmp_path, run):
    cmds = tmp_path / ".claude" / "commands"
    cmds.mkdir(parents=True)
    (cmds / "review.md").write_text("Review the file $ARGUMENTS very carefully for SECRET-BODY-MARKER issues.\n")
    api = ScriptedAPI(sse(text("Reviewed.")))
    with api.serve() as url:
        t = run(url, "--trust")
        t.line("/review app.py")
        t.expect("Reviewed")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "> /review app.py" in t.transcript
    assert "SECRET-BODY-MARKER" not in t.transcript
    assert "SECRET-BODY-MARKER" in json.dumps(api.requests[0].messages)
