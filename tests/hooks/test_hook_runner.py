"""HookRunner against real shell scripts: stdin JSON, matchers, exit codes, parallelism, timeouts."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest
from hooklab import group

from codeloop.hooks import HookEvent, HookOutcome
from codeloop.hooks.events import matcher_matches, matching_commands
from codeloop.permissions.policy import PermissionMode

GUARD_S = 30  # hang guard only; nothing asserts on elapsed time

EVENT_PAYLOADS = {
    HookEvent.PRE_TOOL_USE: {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"},
    HookEvent.POST_TOOL_USE: {"tool_name": "Edit", "tool_input": {"file_path": "/x"}, "tool_use_id": "toolu_2",
                              "tool_response": {"success": True}},
    HookEvent.USER_PROMPT_SUBMIT: {"prompt": "hello"},
    HookEvent.NOTIFICATION: {"message": "needs permission", "notification_type": "permission_prompt"},
    HookEvent.STOP: {"stop_hook_active": True},
    HookEvent.SUBAGENT_STOP: {"stop_hook_active": False, "agent_id": "a1", "agent_type": "general-purpose",
                              "agent_transcript_path": "/t/agent-a1.jsonl"},
    HookEvent.PRE_COMPACT: {"trigger": "manual", "custom_instructions": "keep todos"},
    HookEvent.SESSION_START: {"source": "resume"},
    HookEvent.SESSION_END: {"reason": "logout"},
    HookEvent.POST_TOOL_USE_FAILURE: {"tool_name": "Bash", "tool_input": {"command": "false"}, "tool_use_id": "t3",
                                      "error": "exit 1", "is_interrupt": False},
    HookEvent.SUBAGENT_START: {"agent_id": "a1", "agent_type": "general-purpose"},
    HookEvent.PERMISSION_REQUEST: {"tool_name": "Write", "tool_input": {"file_path": "/x"},
                                   "permission_suggestions": []},
    HookEvent.POST_COMPACT: {"trigger": "manual", "compact_summary": "we did things"},
    HookEvent.POST_TOOL_BATCH: {"tool_calls": [{"tool_name": "Read", "tool_input": {"file_path": "/x"},
                                                "tool_use_id": "t4", "tool_response": "1\tx"}]},
    HookEvent.PERMISSION_DENIED: {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "t5",
                                  "reason": "denied by rule"},
    HookEvent.USER_PROMPT_EXPANSION: {"expansion_type": "slash_command", "command_name": "greet",
                                      "command_args": "Ada", "command_source": "project", "prompt": "Say hi to Ada"},
    HookEvent.STOP_FAILURE: {"error": "rate_limit", "error_details": "429", "last_assistant_message": "partial"},
    HookEvent.SETUP: {"trigger": "maintenance"},
    HookEvent.TEAMMATE_IDLE: {"teammate_name": "ann", "team_name": "core"},
    HookEvent.TASK_CREATED: {"task_id": "1", "task_subject": "parse", "task_description": "d", "teammate_name": None,
                             "team_name": None},
    HookEvent.TASK_COMPLETED: {"task_id": "1", "task_subject": "parse", "task_description": "", "teammate_name": None,
                               "team_name": None},
    HookEvent.ELICITATION: {"mcp_server_name": "gh", "message": "token?", "mode": "url", "url": "https://x",
                            "elicitation_id": "e1", "requested_schema": {}},
    HookEvent.ELICITATION_RESULT: {"mcp_server_name": "gh", "elicitation_id": "e1", "mode": "form",
                                   "action": "accept", "content": {"a": 1}},
    HookEvent.CONFIG_CHANGE: {"source": "user_settings", "file_path": "/u/settings.json"},
    HookEvent.WORKTREE_CREATE: {"name": "feature"},
    HookEvent.WORKTREE_REMOVE: {"worktree_path": "/w/feature"},
    HookEvent.INSTRUCTIONS_LOADED: {"file_path": "/p/CLAUDE.md", "memory_type": "Project",
                                    "load_reason": "session_start", "globs": None, "trigger_file_path": None,
                                    "parent_file_path": None},
    HookEvent.CWD_CHANGED: {"old_cwd": "/p", "new_cwd": "/p/sub"},
    HookEvent.FILE_CHANGED: {"file_path": "/p/.envrc", "event": "change"},
    HookEvent.MESSAGE_DISPLAY: {"turn_id": "p1", "message_id": "m1", "index": 0, "final": True, "delta": "hi"},
}


async def run(runner, event, payload=None, **kw) -> HookOutcome:
    return await asyncio.wait_for(runner.run(event, payload, **kw), GUARD_S)


@pytest.mark.parametrize("event", list(HookEvent))
async def test_stdin_carries_common_and_per_event_fields(lab, event):
    cmd = lab.script(f"cat > {lab.root}/stdin.json")
    lab.mode = PermissionMode.ACCEPT_EDITS
    await run(lab.runner({event.value: [group(cmd)]}), event, EVENT_PAYLOADS[event])
    assert lab.read_json("stdin.json") == {
        "session_id": "sess-1", "transcript_path": str(lab.root / "t.jsonl"), "cwd": str(lab.cwd),
        "permission_mode": "acceptEdits", "hook_event_name": event.value, **EVENT_PAYLOADS[event]}


async def test_missing_per_event_fields_get_defaults(lab):
    cmd = lab.script(f"cat > {lab.root}/stdin.json")
    await run(lab.runner({"PreCompact": [group(cmd)]}), HookEvent.PRE_COMPACT, {})
    data = lab.read_json("stdin.json")
    assert data["trigger"] == "auto" and data["custom_instructions"] == ""


async def test_hooks_run_in_the_project_with_project_dir_env(lab):
    cmd = lab.script(f'pwd -P > {lab.root}/pwd; '
                     f'echo "$CLAUDE_PROJECT_DIR|$CODELOOP_PROJECT_DIR|$EXTRA" > {lab.root}/env')
    await run(lab.runner({"Stop": [group(cmd)]}, env={"EXTRA": "x"}), HookEvent.STOP)
    assert (lab.root / "pwd").read_text().strip() == os.path.realpath(lab.cwd)
    assert (lab.root / "env").read_text().strip() == f"{lab.cwd}|{lab.cwd}|x"


async def test_a_bash_planted_in_the_project_never_runs_the_hooks(lab, monkeypatch):
    """An empty PATH entry is not the current directory: the hook's shell is the system's bash."""
    from codeloop.shellpath import bash_path

    real = bash_path()
    if real is None:
        pytest.skip("no bash on PATH")
    planted = lab.cwd / "bash"
    planted.write_text(f"#!/bin/sh\ntouch {lab.root}/planted-ran\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", ":" + os.environ["PATH"])
    monkeypatch.chdir(lab.cwd)   # codeloop runs in the project
    cmd = f'echo "$BASH" > {lab.root}/shell'
    await run(lab.runner({"Stop": [group(cmd)]}), HookEvent.STOP)
    assert not (lab.root / "planted-ran").exists()
    assert (lab.root / "shell").read_text().strip() == real


@pytest.mark.parametrize("matcher,value,expected", [
    (None, "Bash", True), ("", "Bash", True), ("*", "Write", True),
    ("Bash", "Bash", True), ("Bash", "BashOutput", False), ("Edit|Write", "Write", True),
    ("Edit|Write", "MultiEdit", False), ("mcp__.*", "mcp__github__search", True), ("Notebook.*", "Read", False),
    ("Bash(", "Bash(", True), ("Bash(", "Bash", False),   # invalid regex → exact compare
])
def test_matcher_semantics(matcher, value, expected):
    assert matcher_matches(matcher, value) is expected


def _names(cfg, event, value):
    return [c.command for c in matching_commands(cfg, event, value)]


def test_matchers_per_event_kind():
    cfg = {"PreToolUse": [group("bash", matcher="Bash"), group("edits", matcher="Edit|Write"), group("all")],
           "PreCompact": [group("auto-only", matcher="auto"), group("any-compact")],
           "SessionStart": [group("on-resume", matcher="resume"), group("on-start", matcher="startup|clear")],
           "Stop": [group("stop", matcher="ignored-for-stop")]}
    assert _names(cfg, HookEvent.PRE_TOOL_USE, "Write") == ["edits", "all"]
    assert _names(cfg, HookEvent.PRE_TOOL_USE, "Bash") == ["bash", "all"]
    assert _names(cfg, HookEvent.PRE_COMPACT, "manual") == ["any-compact"]
    assert _names(cfg, HookEvent.PRE_COMPACT, "auto") == ["auto-only", "any-compact"]
    assert _names(cfg, HookEvent.SESSION_START, "clear") == ["on-start"]
    assert _names(cfg, HookEvent.STOP, None) == ["stop"]
    # The whole settings dict is accepted as well as its hooks section.
    assert _names({"hooks": cfg, "model": "x"}, HookEvent.STOP, None) == ["stop"]


async def test_match_value_defaults_to_the_payload_field(lab):
    hit = lab.script(f"touch {lab.root}/hit")
    runner = lab.runner({"PreToolUse": [group(hit, matcher="Edit")]})
    out = await run(runner, HookEvent.PRE_TOOL_USE, {"tool_name": "Bash"})
    assert out.hooks_run == 0 and not (lab.root / "hit").exists()
    out = await run(runner, HookEvent.PRE_TOOL_USE, {"tool_name": "Edit"})
    assert out.hooks_run == 1 and (lab.root / "hit").exists()


async def test_identical_commands_are_run_once(lab):
    cmd = lab.script(f"echo ran >> {lab.root}/count")
    runner = lab.runner({"PostToolUse": [group(cmd, matcher="Edit"), group(cmd, cmd)]})
    out = await run(runner, HookEvent.POST_TOOL_USE, {"tool_name": "Edit"})
    assert out.hooks_run == 1
    assert (lab.root / "count").read_text() == "ran\n"


BLOCKING = {HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.USER_PROMPT_SUBMIT,
            HookEvent.STOP, HookEvent.SUBAGENT_STOP, HookEvent.POST_TOOL_USE_FAILURE, HookEvent.PERMISSION_REQUEST,
            # Claude Code's hook menu: exit 2 stops the loop / blocks the expansion / keeps the teammate
            # working / refuses the task / declines the elicitation / refuses the change / fails creation
            HookEvent.POST_TOOL_BATCH, HookEvent.USER_PROMPT_EXPANSION, HookEvent.TEAMMATE_IDLE,
            HookEvent.TASK_CREATED, HookEvent.TASK_COMPLETED, HookEvent.ELICITATION, HookEvent.ELICITATION_RESULT,
            HookEvent.CONFIG_CHANGE, HookEvent.WORKTREE_CREATE}


@pytest.mark.parametrize("event", list(HookEvent))
async def test_exit_2_blocks_where_the_event_can_block(lab, event):
    # stdout JSON is ignored on exit 2: only stderr counts.
    cmd = lab.script("echo '{\"continue\": false, \"systemMessage\": \"no\"}'; echo 'not allowed' >&2; exit 2")
    out = await run(lab.runner({event.value: [group(cmd)]}), event, EVENT_PAYLOADS[event])
    assert out.prevent_continuation is False and out.system_messages == []
    if event in BLOCKING:
        assert out.blocked and out.block_reasons == ["not allowed"] and out.errors == []
    else:
        assert not out.blocked and out.block_reasons == []
        assert out.errors == [f"{event.value} hook `{cmd}`: not allowed"]
    if event is HookEvent.PRE_TOOL_USE:
        assert (out.permission_decision, out.permission_reason) == ("deny", "not allowed")
    else:
        assert out.permission_decision is None


@pytest.mark.parametrize("event", list(HookEvent))
async def test_other_nonzero_exit_is_a_non_blocking_error(lab, event):
    cmd = lab.script("echo 'lint crashed' >&2; exit 1")
    out = await run(lab.runner({event.value: [group(cmd)]}), event, EVENT_PAYLOADS[event])
    assert not out.blocked and out.permission_decision is None
    assert out.errors == [f"{event.value} hook `{cmd}` failed with exit code 1: lint crashed"]


@pytest.mark.parametrize("event", list(HookEvent))
async def test_exit_0_plain_stdout_is_context_only_for_prompt_submit_and_session_start(lab, event):
    cmd = lab.script("echo 'branch: main'")
    out = await run(lab.runner({event.value: [group(cmd)]}), event, EVENT_PAYLOADS[event])
    assert not out.blocked and out.errors == []
    # (and UserPromptExpansion: "Exit code 0 - stdout shown to Claude", as Claude Code's hook menu says)
    if event in (HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START, HookEvent.USER_PROMPT_EXPANSION):
        assert out.additional_context == ["branch: main"] and out.output == []
    else:
        assert out.additional_context == [] and out.output == ["branch: main"]


async def test_missing_command_is_a_non_blocking_error(lab):
    out = await run(lab.runner({"Stop": [group(str(lab.root / "does-not-exist.sh"))]}), HookEvent.STOP)
    assert not out.blocked and len(out.errors) == 1 and "exit code 127" in out.errors[0]


async def test_hooks_run_in_parallel(lab):
    r = lab.root
    a = lab.script(f"touch {r}/a.start; sleep 1; [ -e {r}/b.start ] && touch {r}/a.saw_b; touch {r}/a.done")
    b = lab.script(f"touch {r}/b.start; sleep 1; [ -e {r}/a.start ] && touch {r}/b.saw_a; touch {r}/b.done")
    out = await run(lab.runner({"Stop": [group(a), group(b)]}), HookEvent.STOP)
    assert out.hooks_run == 2 and out.errors == []
    # Each saw the other's start marker before it finished: they overlapped.
    assert (r / "a.saw_b").exists() and (r / "b.saw_a").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie awaiting reaping by init is dead for our purposes
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def _wait_dead(pid: int) -> bool:
    for _ in range(200):
        if not _alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_hanging_hook_is_killed_with_its_children_at_the_timeout(lab):
    pidfile = lab.root / "child.pid"
    cmd = lab.script(f"sleep 300 &\necho $! > {pidfile}\nwait")
    other = lab.script("echo '{\"systemMessage\": \"fine\"}'")
    out = await run(lab.runner({"Stop": [group(cmd, timeout=1), group(other)]}), HookEvent.STOP)
    assert out.errors == [f"Stop hook `{cmd}` timed out after 1s and was killed"]
    assert not out.blocked and out.system_messages == ["fine"]
    assert await _wait_dead(int(pidfile.read_text()))


async def test_cancelling_run_kills_running_hooks(lab):
    pidfile = lab.root / "child.pid"
    cmd = lab.script(f"sleep 300 &\necho $! > {pidfile}\nwait")
    task = asyncio.ensure_future(lab.runner({"Stop": [group(cmd)]}).run(HookEvent.STOP))
    for _ in range(400):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        await asyncio.sleep(0.025)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, GUARD_S)
    assert await _wait_dead(int(pidfile.read_text()))


async def test_no_matching_hooks_is_an_empty_outcome(lab):
    runner = lab.runner({})
    assert not runner.has_hooks(HookEvent.STOP)
    assert await run(runner, HookEvent.STOP) == HookOutcome()


async def test_stdin_is_valid_even_for_hooks_that_ignore_it(lab):
    cmd = lab.script("exit 0")
    big = {"tool_name": "Write", "tool_input": {"content": "x" * 1_000_000}}
    out = await run(lab.runner({"PreToolUse": [group(cmd)]}), HookEvent.PRE_TOOL_USE, big)
    assert out.errors == [] and out.hooks_run == 1


async def test_command_strings_go_through_the_shell(lab):
    out = await run(lab.runner({"Stop": [group(f"echo hi | tr a-z A-Z > {shlex.quote(str(lab.root / 'o'))}")]}),
                    HookEvent.STOP)
    assert out.errors == [] and (lab.root / "o").read_text() == "HI\n"
