"""Slash commands: parsing, built-ins, custom command files with frontmatter and $ARGUMENTS."""

import json

from fakeapi import ScriptedAPI, sse, text
from codeloop.input.commands import CommandRegistry, CommandType, parse_slash
from codeloop.input.custom_commands import CommandSource, expand_arguments, load_custom_commands
from inputhelpers import make_dispatcher


def test_parse_slash():
    assert parse_slash("/compact keep the tests") == ("compact", "keep the tests")
    assert parse_slash("  /help ") == ("help", "")
    assert parse_slash("/usr/bin/ls -la") is None
    assert parse_slash("hello /help") is None and parse_slash("/") is None and parse_slash("/ x") is None


def test_expand_arguments():
    assert expand_arguments("Fix $ARGUMENTS now", "issue 12") == "Fix issue 12 now"
    assert expand_arguments("a=$1 b=$2 c=$3", 'x "y z"') == "a=x b=y z c="
    assert expand_arguments("No placeholder", "extra") == "No placeholder\n\nARGUMENTS: extra"
    assert expand_arguments("No placeholder", "") == "No placeholder"


def test_custom_commands_with_frontmatter(tmp_path):
    d = tmp_path / ".claude" / "commands"
    (d / "git").mkdir(parents=True)
    (d / "review.md").write_text("---\ndescription: Review code\nallowed-tools: Bash(git diff:*), Read\n"
                                 "model: haiku\nargument-hint: [focus]\n---\nReview with focus on $ARGUMENTS.\n")
    (d / "git" / "log.md").write_text("Summarise the git log\n")
    (tmp_path / ".codeloop" / "commands").mkdir(parents=True)
    (tmp_path / ".codeloop" / "commands" / "review.md").write_text("---\ndescription: wins\n---\nFirst $ARGUMENTS")
    (d / "broken.md").write_text("---\ndescription: x\n")
    cmds, warnings = load_custom_commands(tmp_path, tmp_path / "cfg", home=tmp_path / "home")
    assert cmds["review"].description == "wins"  # .codeloop beats .claude
    assert cmds["git:log"].description == "Summarise the git log" and cmds["git:log"].prompt == "Summarise the git log"
    assert any("broken.md" in w for w in warnings) and "broken" not in cmds
    (tmp_path / ".codeloop" / "commands" / "review.md").unlink()
    cmds, _ = load_custom_commands(tmp_path, tmp_path / "cfg", home=tmp_path / "home")
    r = cmds["review"]
    assert r.allowed_tools == ("Bash(git diff:*)", "Read") and r.model == "haiku"
    assert r.argument_hint == "[focus]" and r.source is CommandSource.PROJECT


def test_user_commands_and_builtins_win(tmp_path):
    (tmp_path / "home" / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / "home" / ".claude" / "commands" / "hello.md").write_text("Say hello to $ARGUMENTS")
    (tmp_path / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / ".claude" / "commands" / "help.md").write_text("shadowed")
    reg = CommandRegistry.load(tmp_path, tmp_path / "cfg", home=tmp_path / "home")
    assert reg.find("hello").source is CommandSource.USER and reg.find("hello").type is CommandType.PROMPT
    assert reg.find("help").source is CommandSource.BUILTIN and any("/help" in w for w in reg.warnings)
    assert {c.name for c in reg.all() if c.immediate} >= {"status", "cost", "help"}
    assert reg.find("quit").name == "exit"


async def test_custom_command_prompt_reaches_the_model_with_overrides(tmp_path):
    (tmp_path / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / ".claude" / "commands" / "fix.md").write_text(
        "---\nallowed-tools: Bash(make:*)\nmodel: haiku\n---\nFix issue $ARGUMENTS please")
    api = ScriptedAPI(sse(text("on it")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("/fix 42")
    body = api.requests[0].body
    assert body["messages"][-1]["content"][-1]["text"] == "Fix issue 42 please"
    assert body["model"] == "claude-haiku-4-5"
    conv = front.conv
    assert conv.config.model == "claude-sonnet-4-5" and "Bash(make:*)" not in conv.config.policy.allow


async def test_local_commands(tmp_path):
    api = ScriptedAPI(sse(text("hello back", ), input_tokens=1000, output_tokens=50))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("hello")
    for cmd in ("/cost", "/status", "/permissions", "/config", "/help", "/model"):
        await d.on_submit(cmd)
    out = front.text()
    assert "Total cost" in out and "1,000 input" in out
    assert "Session:" in out and "bypassPermissions" in out
    assert "allow:" in out and "Settings sources" in out and "/compact [focus]" in out
    assert "Model: claude-sonnet-4-5" in out
    await d.on_submit("/model opus")
    assert front.conv.config.model == "claude-opus-4-5"
    await d.on_submit("/nonsense")
    assert "Unknown command: /nonsense" in front.text()
    assert len(api.requests) == 1  # none of the local commands called the model


async def test_clear_starts_a_new_session(tmp_path):
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("first")
    old = front.conv
    old.ended_by_model = True
    await d.on_submit("/clear")
    assert front.conv is not old and front.conv.session_id != old.session_id
    assert front.conv.messages == [] and not front.conv.ended_by_model
    await d.on_submit("second")
    assert [m["content"][-1]["text"] for m in api.requests[1].messages] == ["second"]


async def test_resume_picker_and_continue(tmp_path):
    api = ScriptedAPI(sse(text("answer one")), sse(text("answer two")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("first session prompt")
    first_id = front.conv.session_id
    await d.on_submit("/clear")
    front.choices = [first_id]
    await d.on_submit("/resume")
    assert "Resume which conversation?" in front.text()
    assert front.conv.session_id == first_id and len(front.conv.messages) >= 2
    await d.on_submit("/continue")  # no *other* session with messages: the cleared one is empty
    assert front.conv.session_id == first_id or "No previous" in front.text()


async def test_compact_and_init(tmp_path):
    api = ScriptedAPI(sse(text("hi")), sse(text("<summary>we said hi</summary>")), sse(text("wrote CLAUDE.md")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("hello")
    await d.on_submit("/compact keep names")
    assert any(getattr(e, "type", "") == "compact_boundary" for e in front.events)
    assert "keep names" in json.dumps(api.requests[1].body)
    await d.on_submit("/init")
    assert "CLAUDE.md" in api.requests[2].messages[-1]["content"][-1]["text"]


async def test_exit_command(tmp_path):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    await d.on_submit("/exit")
    assert front.exited


async def test_tasks_lists_and_stops_background_shells(tmp_path):
    import sys
    from pathlib import Path

    from fakeapi import tool_use
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from test_background import alive, gone, marker_sleep

    command, marker = marker_sleep()
    api = ScriptedAPI(sse(tool_use("Bash", {"command": command, "run_in_background": True}, id="bg")),
                      sse(text("started it")), sse(text("noted the stop")), sse(text("spare")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("start a server")
    await d.on_submit("/bashes")  # Claude Code's older name for /tasks
    listing = front.text()
    assert "Background tasks:" in listing and command in listing and "running" in listing
    [task_id] = [line.split()[0] for line in listing.splitlines() if command in line and "running" in line]
    await d.on_submit(f"/tasks stop {task_id}")
    assert f"Stopped {task_id}" in front.text() and await gone(marker)
    await d.on_submit("/tasks")
    assert f"{task_id}  killed" in front.text()
    # the model hears about the stopped task at the next turn
    await d.on_submit("what happened?")
    assert any(f"<task-id>{task_id}</task-id>" in json.dumps(r.messages) for r in api.requests[1:])
    assert not alive(marker)
