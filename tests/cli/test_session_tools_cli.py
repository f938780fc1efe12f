"""The session tools of issue 26 (task list, scheduled prompts) through the real CLI against the
loopback fake API."""

import json

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl


def _tool_results(req):
    return [b for b in req.messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def test_task_list_in_print_mode_and_after_resume(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("ToolSearch", {"query": "select:TaskCreate,TaskUpdate,TaskList"}), stop="tool_use"),
        sse(tool_use("TaskCreate", {"subject": "Run tests", "description": "pytest -q"}, id="c1"), stop="tool_use"),
        sse(tool_use("TaskUpdate", {"taskId": "1", "status": "in_progress"}, id="u1"), stop="tool_use"),
        sse(text("working on it")),
        # the resumed session
        sse(tool_use("ToolSearch", {"query": "select:TaskList"}), stop="tool_use"),
        sse(tool_use("TaskList", {}, id="l1"), stop="tool_use"),
        sse(text("still there")))
    with api.serve() as url:
        r = codeloop(["-p", "plan it", "--output-format", "stream-json", "--verbose"], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        lines = jsonl(r.stdout)
        sid = lines[0]["session_id"]
        again = codeloop(["-p", "what is left?", "--resume", sid], cwd=tmp_path, base_url=url)
    assert again.returncode == 0, again.stderr
    init = lines[0]
    assert {"TaskCreate", "TaskGet", "TaskList", "TaskUpdate"} <= set(init["tools"])
    first = api.requests[0]
    assert "TaskCreate" not in first.tool_names and "TaskCreate" in first.system_text   # deferred: a hint only
    # stream-json shows the list the way it shows TodoWrite's: in the tool_use_result
    shown = [ln["tool_use_result"] for ln in lines if ln.get("type") == "user" and "tool_use_result" in ln]
    update = next(s for s in shown if isinstance(s, dict) and s.get("taskId") == "1")
    assert update["statusChange"] == {"from": "pending", "to": "in_progress"}
    assert update["tasks"] == [{"id": "1", "subject": "Run tests", "status": "in_progress", "activeForm": None,
                                "owner": None, "blockedBy": []}]
    listing = _tool_results(api.requests[6])[0]["content"]
    listing = listing if isinstance(listing, str) else listing[0]["text"]
    assert listing == "#1 [in_progress] Run tests"


def _stream_json_turns(tmp_path, api, prompt, *, results, env=None, timeout=90):
    """Run a stream-json session with stdin held open until `results` result lines came out (the
    later ones started by scheduled prompts); its output lines."""
    import os
    import subprocess
    import sys
    import threading

    full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    full.update({"ANTHROPIC_API_KEY": "test-key", "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg"),
                 "HOME": str(tmp_path), **(env or {})})
    with api.serve() as url:
        full["ANTHROPIC_BASE_URL"] = url
        proc = subprocess.Popen([sys.executable, "-m", "codeloop", "-p", "--input-format", "stream-json",
                                 "--output-format", "stream-json", "--verbose"], cwd=tmp_path, env=full,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killer = threading.Timer(timeout, proc.kill)   # a hang fails the test instead of holding it
        killer.start()
        try:
            proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n")
            proc.stdin.flush()
            lines, seen = [], 0
            while seen < results:
                raw = proc.stdout.readline()
                assert raw, f"codeloop ended early: {proc.stderr.read()}"
                lines.append(json.loads(raw))
                seen += lines[-1].get("type") == "result"
            proc.stdin.close()
            assert proc.wait(30) == 0
        finally:
            killer.cancel()
    return lines


def test_scheduled_wakeup_fires_a_new_turn_in_stream_json(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("ScheduleWakeup", {"delaySeconds": 0.2, "reason": "check the deploy", "prompt": "is it live?",
                                        "noop": False}, id="w1"), stop="tool_use"),
        sse(text("I will check back.")),
        sse(text("It is live.")))            # the turn the wakeup started
    # the 60 s floor lowered so a wakeup 0.2 s away is taken as asked
    lines = _stream_json_turns(tmp_path, api, "deploy it", results=2, env={"CODELOOP_WAKEUP_MIN_DELAY_S": "0"})
    first, second = [ln for ln in lines if ln.get("type") == "result"]
    assert first["result"] == "I will check back." and second["result"] == "It is live."
    wake = next(ln["tool_use_result"] for ln in lines if ln.get("type") == "user" and "tool_use_result" in ln)
    assert wake["wasClamped"] is False and wake["clampedDelaySeconds"] == 0.2
    # the scheduled prompt reached the model as the user's turn, after the first turn ended
    last = api.requests[2].messages[-1]
    assert last["role"] == "user" and [b["text"] for b in last["content"]] == ["is it live?"]
    assert "ScheduleWakeup" in api.requests[0].tool_names   # sent at once, as Claude Code sends it


def test_a_cron_job_fires_at_the_next_minute_in_stream_json(tmp_path):
    """Real time: cron's unit is the minute, so this waits for the next minute boundary (≤ 60 s)."""
    api = ScriptedAPI(
        sse(tool_use("ToolSearch", {"query": "select:CronCreate"}), stop="tool_use"),
        sse(tool_use("CronCreate", {"cron": "* * * * *", "prompt": "CRON-TICK", "recurring": False}), stop="tool_use"),
        sse(text("Scheduled for the next minute.")),
        sse(text("Tick handled.")))
    lines = _stream_json_turns(tmp_path, api, "remind me", results=2, timeout=150)
    created = next(ln["tool_use_result"] for ln in lines if ln.get("type") == "user"
                   and isinstance(ln.get("tool_use_result"), dict) and "humanSchedule" in ln["tool_use_result"])
    assert created["recurring"] is False and created["durable"] is False and created["nextFireAt"] % 60000 == 0
    results = [ln for ln in lines if ln.get("type") == "result"]
    assert results[1]["result"] == "Tick handled."
    last = api.requests[3].messages[-1]
    assert [b["text"] for b in last["content"]] == ["CRON-TICK"]


def test_send_message_reaches_a_running_background_agent(tmp_path):
    """The main agent messages a background agent while it waits on a file; the agent's next
    request carries the message. Requests are routed by who sent them (the two run at once)."""
    import re

    go, child_done = tmp_path / "go", tmp_path / "child_done"
    state = {"agent": None}

    def is_child(req):
        first = req.messages[0]["content"]
        text_ = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        return "CHILD-TASK" in text_

    def route(req):
        results = [b for b in req.messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"] \
            if isinstance(req.messages[-1]["content"], list) else []
        if is_child(req):
            if len(req.messages) == 1:   # wait until the main agent says go (a condition, not a sleep)
                return sse(tool_use("Bash", {"command": f"until [ -f {go} ]; do sleep 0.05; done; echo waited"}),
                           stop="tool_use")
            if not child_done.exists():
                return sse(tool_use("Bash", {"command": f"touch {child_done}"}), stop="tool_use")
            return sse(text("child finished"))
        if len(req.messages) == 1:
            return sse(tool_use("Agent", {"description": "helper", "prompt": "CHILD-TASK: wait for word",
                                          "subagent_type": "general-purpose", "run_in_background": True}),
                       stop="tool_use")
        body = json.dumps(results)
        if state["agent"] is None:
            state["agent"] = re.search(r"agentId: ([0-9a-f-]+)", body).group(1)
            return sse(tool_use("ToolSearch", {"query": "select:SendMessage"}), stop="tool_use")
        if "SendMessage" in req.tool_names and "Message sent" not in body and "waited" not in body \
                and not go.exists():
            return sse(tool_use("SendMessage", {"to": state["agent"], "summary": "the word",
                                                "message": "the password is swordfish"}),
                       tool_use("SendMessage", {"to": "nobody", "message": "hi"}),
                       tool_use("Bash", {"command": f"touch {go}"}), stop="tool_use")
        if not any("until" in json.dumps(m) and "child_done" in json.dumps(m) for m in req.messages):
            return sse(tool_use("Bash", {"command": f"until [ -f {child_done} ]; do sleep 0.05; done"}),
                       stop="tool_use")
        return sse(text("main done"))

    api = ScriptedAPI(*[route] * 12)
    with api.serve() as url:
        r = codeloop(["-p", "delegate", "--output-format", "stream-json", "--verbose",
                      "--permission-mode", "bypassPermissions"], cwd=tmp_path, base_url=url, timeout=120)
    assert r.returncode == 0, r.stderr
    sent = next(ln["tool_use_result"] for ln in jsonl(r.stdout)
                if ln.get("type") == "user" and isinstance(ln.get("tool_use_result"), dict)
                and ln["tool_use_result"].get("success") is True)
    assert sent["routing"] == {"sender": "main", "target": state["agent"], "summary": "the word"}
    child_second = [q for q in api.requests if is_child(q) and len(q.messages) > 1][0]
    carried = json.dumps(child_second.messages)
    assert "the password is swordfish" in carried and 'from=\\"main\\"' in carried
    refused = [b for q in api.requests if not is_child(q) for b in q.messages[-1]["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("is_error")]
    assert any("No agent named 'nobody'" in json.dumps(b) for b in refused)


def test_a_subagent_adds_to_the_sessions_task_list(tmp_path):
    api = ScriptedAPI(
        sse(tool_use("Agent", {"description": "plan", "prompt": "list the steps",
                               "subagent_type": "general-purpose"}), stop="tool_use"),
        sse(tool_use("ToolSearch", {"query": "select:TaskCreate"}), stop="tool_use"),          # the subagent
        sse(tool_use("TaskCreate", {"subject": "Step from the subagent", "description": "d"}), stop="tool_use"),
        sse(text("added one step")),
        sse(tool_use("ToolSearch", {"query": "select:TaskList"}), stop="tool_use"),            # the main agent
        sse(tool_use("TaskList", {}), stop="tool_use"),
        sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "plan", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    listing = _tool_results(api.requests[6])[0]["content"]
    listing = listing if isinstance(listing, str) else listing[0]["text"]
    assert listing == "#1 [pending] Step from the subagent"
