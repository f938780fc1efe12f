"""Issue 26: CwdChanged, FileChanged, InstructionsLoaded (nested), MessageDisplay and the events
the task and worktree tools fire (TaskCreated, TaskCompleted, WorktreeCreate, WorktreeRemove) —
real Conversations, the real loop against the scripted fake API, real shell hooks."""

from __future__ import annotations

import json

from fakeapi import ScriptedAPI, sse, text, tool_use
from hookrec import calls, conv_for, recorder, submit

from codeloop.events import AssistantEvent


async def test_cd_in_bash_fires_cwd_changed_and_its_watch_paths_feed_file_changed(tmp_path):
    cwd = tmp_path / "project"
    (cwd / "sub").mkdir(parents=True)
    watched = cwd / "sub" / "flag"
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "CwdChanged", "watchPaths": [str(watched)]}})
    hooks = {"CwdChanged": [recorder(tmp_path, "cwd.log", answer)],
             "FileChanged": [recorder(tmp_path, "file.log")]}
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "cd sub"}, id="b1")),
                      sse(tool_use("Bash", {"command": "echo on > flag"}, id="b2")),
                      sse(text("done")))
    await submit(conv_for(api, cwd, hooks))
    [moved] = calls(tmp_path, "cwd.log")
    assert moved["hook_event_name"] == "CwdChanged"
    assert moved["old_cwd"] == str(cwd) and moved["new_cwd"] == str(cwd / "sub")
    [changed] = calls(tmp_path, "file.log")     # the watchPaths of CwdChanged: no matcher needed
    assert changed["file_path"] == str(watched) and changed["event"] == "add"


async def test_file_changed_matcher_names_the_files_watched_in_the_working_folder(tmp_path):
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / ".envrc").write_text("export A=1\n")
    hooks = {"FileChanged": [{"matcher": ".envrc|.env", **recorder(tmp_path, "env.log")}]}
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo 'export A=2' >> .envrc; echo x > other.txt; "
                                                       "echo B=1 > .env"}, id="b1")),
                      sse(text("done")),
                      sse(text("second")))
    conv = conv_for(api, cwd, hooks)
    _ = [ev async for ev in conv.submit("edit")]
    seen = {(c["file_path"], c["event"]) for c in calls(tmp_path, "env.log")}
    assert seen == {(str(cwd / ".envrc"), "change"), (str(cwd / ".env"), "add")}   # not other.txt
    (cwd / ".env").unlink()                          # changed between prompts: seen at the next one
    await submit(conv, "again")
    assert (str(cwd / ".env"), "unlink") in {(c["file_path"], c["event"]) for c in calls(tmp_path, "env.log")}
    assert len(calls(tmp_path, "env.log")) == 3


async def test_a_nested_claude_md_fires_instructions_loaded_when_attached(tmp_path):
    cwd = tmp_path / "project"
    (cwd / "pkg").mkdir(parents=True)
    (cwd / "pkg" / "CLAUDE.md").write_text("Package rules.\n")
    (cwd / "pkg" / "mod.py").write_text("x = 1\n")
    hooks = {"InstructionsLoaded": [{"matcher": "nested_traversal", **recorder(tmp_path, "nested.log")}]}
    read = {"file_path": str(cwd / "pkg" / "mod.py")}

    def step(req):   # read again until the background walk settled and the file was attached
        attached = "Package rules." in json.dumps(req.body["messages"])
        return sse(text("done")) if attached else sse(tool_use("Read", read))

    api = ScriptedAPI(*[step] * 500)
    await submit(conv_for(api, cwd, hooks))
    assert "Package rules." in json.dumps(api.requests[-1].body["messages"])
    [loaded] = calls(tmp_path, "nested.log")    # once: a file is attached once per session
    assert loaded["file_path"] == str(cwd / "pkg" / "CLAUDE.md")
    assert loaded["load_reason"] == "nested_traversal" and loaded["memory_type"] == "Project"


async def test_message_display_changes_the_event_never_the_history(tmp_path):
    cwd = tmp_path / "project"
    cwd.mkdir()
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "MessageDisplay", "displayContent": "***"}})
    api = ScriptedAPI(sse(text("password is hunter2")), sse(text("ok")))
    conv = conv_for(api, cwd, {"MessageDisplay": [recorder(tmp_path, "display.log", answer)]})
    events = [ev async for ev in conv.submit("tell me")]
    [shown] = [ev.message.text for ev in events if isinstance(ev, AssistantEvent)]
    assert shown == "***"
    assert [m.text for m in conv.messages if m.role == "assistant"] == ["password is hunter2"]
    await submit(conv, "next")
    assert "hunter2" in json.dumps(api.requests[1].body["messages"])   # the model still sees its words
    first = calls(tmp_path, "display.log")[0]
    assert first["delta"] == "password is hunter2" and first["message_id"] and first["turn_id"]


async def test_task_and_worktree_events_through_the_tool_context(tmp_path):
    cwd = tmp_path / "project"
    cwd.mkdir()
    made = tmp_path / "wt-feature"
    create = tmp_path / "create.sh"
    create.write_text(f"#!/bin/sh\ncat > '{tmp_path}/create.json'\nmkdir -p '{made}'\necho '{made}'\n")
    create.chmod(0o755)
    refuse = tmp_path / "refuse.sh"
    refuse.write_text("#!/bin/sh\ncat >/dev/null\necho 'tests must pass first' >&2\nexit 2\n")
    refuse.chmod(0o755)
    hooks = {"TaskCreated": [recorder(tmp_path, "created.log")],
             "TaskCompleted": [{"hooks": [{"type": "command", "command": str(refuse)}]}],
             "WorktreeCreate": [{"hooks": [{"type": "command", "command": str(create)}]}],
             "WorktreeRemove": [recorder(tmp_path, "removed.log")]}
    conv = conv_for(ScriptedAPI(), cwd, hooks)
    hooks_cap = conv.tool_context.lifecycle_hooks
    assert hooks_cap is not None and hooks_cap.creates_worktrees()
    ok = await hooks_cap.task_created("1", "Write the parser", "with tests")
    assert not ok.refused
    [task] = calls(tmp_path, "created.log")
    assert task["hook_event_name"] == "TaskCreated" and task["task_id"] == "1"
    assert task["task_subject"] == "Write the parser" and task["task_description"] == "with tests"
    done = await hooks_cap.task_completed("1", "Write the parser")
    assert done.refused and done.reason == "tests must pass first"
    wt = await hooks_cap.worktree_create("feature")
    assert wt.path == str(made) and wt.error is None and made.is_dir()
    assert json.loads((tmp_path / "create.json").read_text())["name"] == "feature"
    assert await hooks_cap.worktree_remove(str(made)) == []
    [removed] = calls(tmp_path, "removed.log")
    assert removed["worktree_path"] == str(made)
    conv.close()


async def test_instructions_loaded_for_each_claude_md_at_session_start_and_after_compaction(tmp_path, monkeypatch):
    from codeloop.context.prompt import user_context

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "CLAUDE.md").write_text("Shared rules.\n")
    (cwd / "CLAUDE.local.md").write_text("My rules.\n")
    api = ScriptedAPI(sse(text("hi")), sse(text("Summary of the conversation so far.")))
    conv = conv_for(api, cwd, {"InstructionsLoaded": [recorder(tmp_path, "loaded.log")]})
    conv.config.user_context = user_context(cwd, tmp_path / "cfg")
    _ = [ev async for ev in conv.submit("hi")]
    _ = [ev async for ev in conv.compact()]
    conv.close()
    got = [(c["file_path"], c["memory_type"], c["load_reason"]) for c in calls(tmp_path, "loaded.log")]
    shared, mine = str(cwd / "CLAUDE.md"), str(cwd / "CLAUDE.local.md")
    assert got == [(shared, "Project", "session_start"), (mine, "Local", "session_start"),
                   (shared, "Project", "compact"), (mine, "Local", "compact")]
