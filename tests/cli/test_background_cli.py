"""Background work through the real CLI (issue 16 items 3 and 9), model faked at the HTTP layer:
a background shell's completion reaches the next request, TaskStop, no process left after exit,
a sandboxed background command, the `Agent` name (with `Task` still accepted on resume) and a
background subagent announced through the same task-notification path."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text, tool_use

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))
from sandbox_helpers import needs_bwrap  # noqa: E402
from test_background import alive, marker_sleep  # noqa: E402
from test_print_mode import codeloop, jsonl  # noqa: E402


def task_id_from(req, tool_use_id: str) -> str:
    found = re.search(r"(?:ID: |agentId: )([\w-]+)", req.tool_result_text(tool_use_id))
    assert found, req.tool_result_text(tool_use_id)
    return found.group(1)


def notifications(req) -> list[str]:
    """The <task-notification> texts the model was sent in this request."""
    out = []
    for msg in req.messages:
        if msg["role"] != "user" or not isinstance(msg["content"], list):
            continue
        out += [b["text"] for b in msg["content"] if b.get("type") == "text" and "<task-notification>" in b["text"]]
    return out


def wait_gone(marker: str) -> bool:
    for _ in range(100):
        if not alive(marker):
            return True
        time.sleep(0.05)
    return False


def test_background_shell_completion_reaches_the_next_request(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("Bash", {"command": "sleep 1; echo done", "run_in_background": True,
                              "description": "wait then say done"}, id="bg")),
        lambda req: sse(tool_use("TaskOutput", {"task_id": task_id_from(req, "bg")}, id="out")),
        sse(text("all done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    task_id = task_id_from(api.requests[1], "bg")
    assert "<status>completed</status>" in api.requests[2].tool_result_text("out")
    [note] = notifications(api.requests[2])
    assert f"<task-id>{task_id}</task-id>" in note and "exit code 0" in note and "\ndone\n" in note
    # the output file is under the session folder
    [output_file] = re.findall(r"<output-file>(.*)</output-file>", note)
    assert Path(output_file).read_text() == "done\n" and "/tasks/" in output_file
    events = jsonl(r.stdout)
    init = next(e for e in events if e.get("subtype") == "init")
    assert {"Agent", "TaskOutput", "TaskStop"} <= set(init["tools"]) and "Task" not in init["tools"]
    started = [e for e in events if e.get("subtype") == "task_started"]
    done = [e for e in events if e.get("subtype") == "task_notification"]
    assert started[0]["task_id"] == task_id and started[0]["task_type"] == "local_bash"
    assert started[0]["tool_use_id"] == "bg" and started[0]["session_id"] and started[0]["uuid"]
    assert done[0]["task_id"] == task_id and done[0]["status"] == "completed"
    assert done[0]["output_file"] == output_file


def test_task_stop_and_no_background_process_outlives_the_cli(tmp_path):
    long_cmd, marker = marker_sleep()
    other_cmd, other = marker_sleep()
    api = ScriptedAPI(
        sse(tool_use("Bash", {"command": long_cmd, "run_in_background": True}, id="a"),
            tool_use("Bash", {"command": other_cmd, "run_in_background": True}, id="b")),
        lambda req: sse(tool_use("KillShell", {"shell_id": task_id_from(req, "a")}, id="stop")),  # old name
        sse(text("leaving one running")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json", "--allowedTools", "Bash"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "Successfully stopped task" in api.requests[2].tool_result_text("stop")
    assert json.loads(r.stdout)["result"] == "leaving one running"
    assert wait_gone(marker) and wait_gone(other)   # the one still running died with the CLI


@needs_bwrap
def test_sandboxed_background_command_through_the_cli(tmp_path):
    (tmp_path / ".cfg").mkdir()
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({"sandbox": {"enabled": True}}))
    outside = Path("/var/tmp") / f"codeloop-bg-{tmp_path.name}.txt"
    long_cmd, marker = marker_sleep()
    api = ScriptedAPI(
        sse(tool_use("Bash", {"command": f"echo inside > made.txt; echo x > {outside}; echo finished",
                              "run_in_background": True}, id="bg"),
            tool_use("Bash", {"command": long_cmd, "run_in_background": True}, id="long")),
        lambda req: sse(tool_use("TaskOutput", {"task_id": task_id_from(req, "bg"), "block": True}, id="out")),
        sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    out = api.requests[2].tool_result_text("out")
    assert "finished" in out and (tmp_path / "made.txt").read_text() == "inside\n"
    assert not outside.exists()
    assert any("<task-notification>" in n for n in notifications(api.requests[2]))
    assert wait_gone(marker)


def test_agent_name_and_an_old_task_tool_use_resumes(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("Task", {"description": "look", "prompt": "look around", "subagent_type": "general-purpose"},
                     id="t1")),
        sse(text("nothing here")),
        sse(text("the subagent found nothing")))
    with api.serve() as url:
        first = codeloop(["-p", "delegate", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert first.returncode == 0, first.stderr
    assert "Agent" in api.requests[0].tool_names and "Task" not in api.requests[0].tool_names
    assert api.requests[2].tool_result_text("t1") == "nothing here"
    sid = json.loads(first.stdout)["session_id"]

    again = ScriptedAPI(
        sse(tool_use("Agent", {"description": "again", "prompt": "look again", "model": "haiku"}, id="t2")),
        sse(text("still nothing")),
        sse(text("resumed fine")))
    with again.serve() as url:
        r = codeloop(["-p", "and again", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    # the old `Task` tool_use and its result are replayed as they were
    history = again.requests[0].messages
    assert any(b.get("type") == "tool_use" and b["name"] == "Task" for m in history if isinstance(m["content"], list)
               for b in m["content"])
    assert again.requests[0].tool_result_text("t1") == "nothing here"
    assert "haiku" in again.requests[1].body["model"]            # the call's model chose the subagent's
    assert json.loads(r.stdout)["result"] == "resumed fine"


def test_background_agent_is_announced_and_readable(tmp_path):
    parent = [sse(tool_use("Agent", {"description": "research", "prompt": "SUBPROMPT find it",
                                     "run_in_background": True}, id="ag")),
              lambda req: sse(tool_use("TaskOutput", {"task_id": task_id_from(req, "ag"), "timeout": 60_000},
                                       id="out")),
              lambda req: sse(text("parent done"))]
    sub = [sse(text("SUB ANSWER 42"))]

    def route(req):
        first = req.messages[0]["content"]
        first = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        item = (sub if "SUBPROMPT" in first else parent).pop(0)
        return item(req) if callable(item) else item

    api = ScriptedAPI(*[route] * 4)
    with api.serve() as url:
        r = codeloop(["-p", "delegate", "--output-format", "stream-json", "--verbose", "--allowedTools", "Task"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    parents = [q for q in api.requests if "SUBPROMPT" not in json.dumps(q.messages[0])]
    launched = parents[1].tool_result_text("ag")
    agent_id = task_id_from(parents[1], "ag")
    assert "Async agent launched" in launched
    assert "SUB ANSWER 42" in parents[2].tool_result_text("out")
    [note] = notifications(parents[2])
    assert f"<task-id>{agent_id}</task-id>" in note and "SUB ANSWER 42" in note and "local_agent" in note
    events = jsonl(r.stdout)
    started = [e for e in events if e.get("subtype") == "task_started" and e["task_id"] == agent_id]
    done = [e for e in events if e.get("subtype") == "task_notification" and e["task_id"] == agent_id]
    assert started and started[0]["tool_use_id"] == "ag" and started[0]["task_type"] == "local_agent"
    assert done and done[0]["status"] == "completed"
