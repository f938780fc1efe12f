"""`codeloop batch` on the local backend, as a subprocess against the routed fake API."""

import json
from pathlib import Path
import signal
import subprocess
import sys
import pytest

from batchhelpers import (RoutedAPI, latest, make_repo, marker, read_results, run_batch, start_batch,
                          write_file_script, write_tasks)
from fakeapi import Block, error, sse, text, tool_use

CRASH, OVER_BUDGET, KILLED = "t03", "t05", "t01"


def _slow(seconds: float):
    """A response that takes `seconds` to arrive: the task is mid-flight meanwhile."""
    return sse(Block({"type": "text", "text": ""}, [{"type": "text_delta", "text": "slow"}], delay=seconds))


def _twenty(tmp_path):
    repo = tmp_path / "proj"
    make_repo(repo, {"hello.py": "print('hi')\n"})
    tasks, scripts = [], {}
    for i in range(20):
        tid = f"t{i:02d}"
        tasks.append({"id": tid, "prompt": f"{marker(tid)} write out_{tid}.txt", "repo": "proj",
                      "allowed_tools": ["Bash"], "max_turns": 5})
        scripts[tid] = write_file_script(f"out_{tid}.txt", f"from {tid}")
    # the loop process dies mid-task: its own Bash call kills it
    scripts[CRASH] = (sse(tool_use("Bash", {"command": "kill -9 $PPID"})),)
    # one expensive turn against a tiny per-task budget
    tasks[5]["max_budget_usd"] = 0.001
    scripts[OVER_BUDGET] = (sse(tool_use("Bash", {"command": "echo spent"}), input_tokens=20000, output_tokens=500),
                            sse(text("never reached")))
    # hangs in the first run (the batch is killed meanwhile); answers at once in the resumed run
    scripts[KILLED] = [_slow(120), *write_file_script(f"out_{KILLED}.txt", f"from {KILLED}")]
    # (a list: used once; tasks in flight when the batch is killed replay their tuple from turn 0)
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    return RoutedAPI(scripts)


def test_twenty_tasks_four_workers_crash_budget_kill_and_resume(tmp_path):
    api = _twenty(tmp_path)
    out = tmp_path / "results.jsonl"
    args = ["tasks.jsonl", "--out", str(out), "--workers", "4"]
    with api.serve() as url:
        proc = start_batch(args, cwd=tmp_path, url=url)
        try:
            # kill -9 the whole batch while KILLED is mid-flight and others have finished
            api.wait_for(lambda: KILLED in api.by_task and out.exists()
                         and len(out.read_text().splitlines()) >= 8, timeout=180)
        finally:
            proc.kill()
            proc.communicate(timeout=30)
        first = read_results(out)
        assert KILLED not in latest(first) and len(first) >= 8
        assert not any((tmp_path / "results.batch" / "workspaces").glob("t01-*/out_t01.txt"))

        r = run_batch(args, cwd=tmp_path, url=url)
    records = read_results(out)
    by_id = latest(records)
    assert set(by_id) == {f"t{i:02d}" for i in range(20)}
    # each task has exactly one result line: the resumed run skipped what was done
    assert sorted(rec["id"] for rec in records) == sorted(by_id)
    assert f"{len(first)} already have a result" in r.stderr
    assert r.returncode == 1, r.stderr  # two tasks failed

    crash = by_id[CRASH]
    assert crash["outcome"] == "crashed" and "SIGKILL" in crash["error"] and crash["exit_code"] == -9
    over = by_id[OVER_BUDGET]
    assert over["outcome"] == "over_budget" and over["subtype"] == "error_max_budget_usd"
    assert over["total_cost_usd"] > 0.001 and "budget" in over["error"]

    for tid, rec in by_id.items():
        if tid in (CRASH, OVER_BUDGET):
            continue
        assert rec["outcome"] == "success", rec
        assert rec["subtype"] == "success" and rec["num_turns"] == 2 and rec["stop_reason"] == "end_turn", rec
        assert rec["usage"]["input_tokens"] == 200 and rec["total_cost_usd"] > 0
        assert f"+from {tid}" in rec["diff"] and f"out_{tid}.txt" in rec["diff"]
        assert "hello.py" not in rec["diff"]
        transcript = [json.loads(x) for x in open(rec["transcript"])]
        assert any(e.get("sessionId") == rec["session_id"] for e in transcript)
        assert rec["attempt"] == 1 and rec["backend"] == "local"
    # every task had its own workspace, transcript and session
    assert len({r["workspace"] for r in by_id.values()}) == 20
    assert len({r["session_id"] for r in by_id.values()}) == 20
    # the user's repository was never touched
    assert sorted(p.name for p in (tmp_path / "proj").iterdir()) == [".git", "hello.py"]

    assert "20 tasks: success 18 · over_budget 1 · crashed 1" in r.stdout
    assert "costliest: t05" in r.stdout and "slowest:" in r.stdout

    rep = run_batch(["report", str(out), "--json"], cwd=tmp_path)
    summary = json.loads(rep.stdout)
    assert summary["outcomes"] == {"success": 18, "over_budget": 1, "crashed": 1}
    assert summary["total_cost_usd"] == round(sum(x["total_cost_usd"] or 0 for x in by_id.values()), 6)
    assert summary["tokens"]["input_tokens"] == sum((x.get("usage") or {}).get("input_tokens", 0)
                                                    for x in by_id.values())


def test_rerun_failed_retries_only_failures(tmp_path):
    make_repo(tmp_path / "proj", {"a.txt": "a\n"})
    write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "ok", "prompt": f"{marker('ok')} go", "repo": "proj"},
        {"id": "bad", "prompt": f"{marker('bad')} go", "repo": "proj", "allowed_tools": "Bash"}])
    api = RoutedAPI({"bad": [sse(tool_use("Bash", {"command": "kill -9 $PPID"})), sse(text("fine now"))]})
    out = tmp_path / "r.jsonl"
    with api.serve() as url:
        r1 = run_batch(["tasks.jsonl", "-o", str(out)], cwd=tmp_path, url=url)
        r2 = run_batch(["tasks.jsonl", "-o", str(out)], cwd=tmp_path, url=url)
        r3 = run_batch(["tasks.jsonl", "-o", str(out), "--rerun-failed"], cwd=tmp_path, url=url)
    assert r1.returncode == 1 and r2.returncode == 1 and r3.returncode == 0, r3.stderr
    assert "0 to run, 2 already have a result (--rerun-failed retries failures)" in r2.stderr
    records = read_results(out)
    assert [(x["id"], x["outcome"], x["attempt"]) for x in records if x["id"] == "bad"] == \
        [("bad", "crashed", 1), ("bad", "success", 2)]
    assert len(api.by_task["ok"]) == 1


def test_bad_lines_one_error_each_rest_runs(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "a", "prompt": f"{marker('a')} go"},
        "{not json",
        {"id": "b"},
        {"id": "a", "prompt": "again"},
        {"id": "c", "prompt": "x", "permission_mode": "yolo"},
        {"id": "d", "prompt": "x", "max_turns": -1},
        {"id": "e", "prompt": "x", "repo": "r", "workdir": "w"},
        "[1, 2]",
        {"id": "f", "prompt": f"{marker('f')} go"}])
    api = RoutedAPI({})
    out = tmp_path / "r.jsonl"
    with api.serve() as url:
        r = run_batch(["tasks.jsonl", "--out", str(out)], cwd=tmp_path, url=url)
    assert r.returncode == 1
    errors = [line for line in r.stderr.splitlines() if "tasks.jsonl:" in line]
    assert [e.split("tasks.jsonl:")[1].split(":")[0] for e in errors] == ["2", "3", "4", "5", "6", "7", "8"]
    assert 'missing "prompt"' in errors[1] and "duplicate id 'a'" in errors[2] and "yolo" in errors[3]
    assert "positive integer" in errors[4] and "not both" in errors[5] and "JSON object" in errors[6]
    assert {x["id"]: x["outcome"] for x in read_results(out)} == {"a": "success", "f": "success"}


def test_missing_tasks_file_and_bad_flags(tmp_path):
    r = run_batch(["nope.jsonl", "--out", "r.jsonl"], cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.strip() == "codeloop batch: no tasks file at nope.jsonl"
    r = run_batch(["report", "nope.jsonl"], cwd=tmp_path)
    assert r.returncode == 1 and "no results file" in r.stderr
    write_tasks(tmp_path / "t.jsonl", [{"id": "a", "prompt": "x"}])
    r = run_batch(["t.jsonl", "--out", "r.jsonl", "--workers", "0"], cwd=tmp_path)
    assert r.returncode == 2 and "must be at least 1" in r.stderr


def test_global_budget_stops_scheduling(tmp_path):
    tasks = [{"id": f"b{i}", "prompt": f"{marker(f'b{i}')} go"} for i in range(5)]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    api = RoutedAPI({f"b{i}": [sse(text("costly"), input_tokens=10000)] for i in range(5)})
    out = tmp_path / "r.jsonl"
    with api.serve() as url:
        r = run_batch(["tasks.jsonl", "--out", str(out), "--workers", "1", "--max-total-usd", "0.05"],
                      cwd=tmp_path, url=url)
    records = read_results(out)
    # each task costs $0.0303: the budget is reached after the second one
    assert [x["id"] for x in records] == ["b0", "b1"]
    assert "budget reached" in r.stderr and "not started: 3 tasks (budget reached)" in r.stdout
    assert r.returncode == 1 and set(api.by_task) == {"b0", "b1"}


def test_rate_limit_backoff_delays_new_starts(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"r{i}", "prompt": f"{marker(f'r{i}')} go"} for i in range(3)])
    # r1 answers after a second: a fast start-up must not let it finish (and free its worker for
    # r2) before r0, started beside it on a busy machine, has even heard its 429
    api = RoutedAPI({"r0": [error(429, "rate_limit_error", "slow down", {"retry-after": "3"}), sse(text("ok"))],
                     "r1": [sse(text("ok", delay=1.0))]})
    out = tmp_path / "r.jsonl"
    with api.serve() as url:
        r = run_batch(["tasks.jsonl", "--out", str(out), "--workers", "2"], cwd=tmp_path, url=url)
    assert r.returncode == 0, r.stderr
    by_id = latest(read_results(out))
    assert by_id["r0"]["rate_limited"] == 1 and by_id["r1"]["rate_limited"] == 0
    assert "rate limited (429/529): new tasks wait" in r.stderr
    # r2 was held back until the backoff that r0's 429 asked for had passed
    assert api.arrived["r2"][0] >= api.arrived["r0"][0] + 2.5
    assert "rate-limited answers (429/529): 1" in r.stdout


def test_ctrl_c_stops_scheduling_then_interrupts(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"c{i}", "prompt": f"{marker(f'c{i}')} go"} for i in range(4)])
    api = RoutedAPI({"c0": [_slow(4)], "c1": [_slow(120)]})
    out = tmp_path / "r.jsonl"
    args = ["tasks.jsonl", "--out", str(out), "--workers", "2"]
    with api.serve() as url:
        proc = start_batch(args, cwd=tmp_path, url=url)
        api.wait_for(lambda: {"c0", "c1"} <= set(api.by_task))
        proc.send_signal(signal.SIGINT)           # no new tasks; c0 finishes on its own
        api.wait_for(lambda: out.exists() and "c0" in out.read_text(), timeout=60)
        proc.send_signal(signal.SIGINT)           # now interrupt c1
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        records = read_results(out)
        assert [(x["id"], x["outcome"]) for x in records] == [("c0", "success"), ("c1", "interrupted")]
        assert "Interrupted" in records[1]["error"] and "c2" not in api.by_task
        assert "stopping: no new tasks" in stderr and "interrupting running tasks" in stderr
        assert "not started: 2 tasks (stopped by Ctrl+C)" in stdout
        # an interrupted task never finished: the next run runs it again, with the two never started
        r = run_batch(args, cwd=tmp_path, url=url)
    assert r.returncode == 0, r.stderr
    assert [x["id"] for x in read_results(out)[2:]] and latest(read_results(out))["c1"]["outcome"] == "success"
    assert {x["id"] for x in read_results(out)[2:]} == {"c1", "c2", "c3"}


def test_workdir_setup_and_setup_failure(tmp_path):
    src = tmp_path / "plain"
    src.mkdir()
    (src / "data.txt").write_text("one\n")
    write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "w", "prompt": f"{marker('w')} edit", "workdir": "plain", "setup": "echo built > artifact.txt",
         "allowed_tools": ["Bash"]},
        {"id": "s", "prompt": f"{marker('s')} x", "workdir": "plain", "setup": "echo broken >&2; exit 3"},
        {"id": "gone", "prompt": f"{marker('gone')} x", "workdir": "plain", "allowed_tools": ["Bash"]}])
    api = RoutedAPI({"w": [sse(tool_use("Bash", {"command": "cat artifact.txt >/dev/null && echo two >> data.txt"})),
                           sse(text("edited"))],
                     "gone": [sse(tool_use("Bash", {"command": "rm -rf .git"})), sse(text("removed"))]})
    out = tmp_path / "r.jsonl"
    with api.serve() as url:
        r = run_batch(["tasks.jsonl", "--out", str(out), "--keep-workspaces", "all"], cwd=tmp_path, url=url)
    by_id = latest(read_results(out))
    assert by_id["w"]["outcome"] == "success", by_id["w"]
    assert "+two" in by_id["w"]["diff"] and "artifact" not in by_id["w"]["diff"]
    assert (src / "data.txt").read_text() == "one\n" and not (src / "artifact.txt").exists()
    # `rm -rf .git` holds protected paths (.git/config, .git/hooks): refused even under a Bash allow
    # rule (issue 12), so the workspace stays a repository and its (empty) diff is still taken
    gone = by_id["gone"]
    assert gone["outcome"] == "success" and gone.get("diff_error") is None and not gone["diff"]
    assert (Path(gone["workspace"]) / ".git" / "config").is_file()
    assert by_id["s"]["outcome"] == "setup_failed" and "status 3" in by_id["s"]["error"]
    assert "broken" in by_id["s"]["error"] and "s" not in api.by_task
    assert r.returncode == 1


def test_swebench_instances_write_predictions(tmp_path):
    repos = tmp_path / "swe"
    base = make_repo(repos / "acme__widgets", {"widget.py": "def size():\n    return 1\n"})
    # a later commit the instance must not see
    (repos / "acme__widgets" / "widget.py").write_text("def size():\n    return 99\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "later"],
                   cwd=repos / "acme__widgets", check=True)
    instance = {"instance_id": "acme__widgets-1", "repo": "acme/widgets", "base_commit": base,
                "problem_statement": f"{marker('acme__widgets-1')} size() must return 2",
                "patch": "ignored", "FAIL_TO_PASS": "[]"}
    write_tasks(tmp_path / "swe.jsonl", [instance])
    edit = "sed -i 's/return 1/return 2/' widget.py"
    api = RoutedAPI({"acme__widgets-1": [sse(tool_use("Bash", {"command": edit})), sse(text("fixed"))]})
    out = tmp_path / "swe-results.jsonl"
    with api.serve() as url:
        r = run_batch(["swe.jsonl", "--out", str(out), "--swe-repos", str(repos), "--allowedTools", "Bash",
                       "--model", "claude-sonnet-4-5-20250929"], cwd=tmp_path, url=url)
    assert r.returncode == 0, r.stderr
    prompt = json.dumps(api.by_task["acme__widgets-1"][0].messages)
    assert "size() must return 2" in prompt and base in prompt
    preds = [json.loads(x) for x in (tmp_path / "swe-results.predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 1 and set(preds[0]) == {"instance_id", "model_name_or_path", "model_patch"}
    assert preds[0]["instance_id"] == "acme__widgets-1"
    assert preds[0]["model_name_or_path"] == "codeloop/claude-sonnet-4-5-20250929"
    assert "-    return 1\n+    return 2" in preds[0]["model_patch"]
    # the patch applies to a fresh checkout at base_commit, as the evaluation harness does it
    check = tmp_path / "check"
    subprocess.run(["git", "clone", "-q", str(repos / "acme__widgets"), str(check)], check=True)
    subprocess.run(["git", "checkout", "-q", base], cwd=check, check=True)
    applied = subprocess.run(["git", "apply", "-"], cwd=check, input=preds[0]["model_patch"], text=True)
    assert applied.returncode == 0 and "return 2" in (check / "widget.py").read_text()
    assert "SWE-bench predictions:" in r.stdout and "(1 instances)" in r.stdout


def test_live_progress_on_a_terminal(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    from batchhelpers import batch_env
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"p{i}", "prompt": f"{marker(f'p{i}')} go"} for i in range(3)])
    api = RoutedAPI({"p0": [_slow(2)]})
    with api.serve() as url:
        child = pexpect.spawn(sys.executable, ["-m", "codeloop", "batch", "tasks.jsonl", "--out", "r.jsonl",
                                               "--workers", "1"], cwd=str(tmp_path), env=batch_env(tmp_path, url),
                              encoding="utf-8", timeout=90, dimensions=(30, 160))
        # the redrawn status line, while p0 is still running
        child.expect(r"0/3 done · 0 failed · 1 running · \$0\.0000 · ETA –")
        child.expect(r"p0 success, 1 turns")
        child.expect(r"3 tasks: success 3")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0
    assert [x["id"] for x in read_results(tmp_path / "r.jsonl")] == ["p0", "p1", "p2"]


def test_task_fields_reach_the_loop_and_timeout(tmp_path):
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "js", "prompt": f"{marker('js')} count", "json_schema": schema},
        {"id": "mt", "prompt": f"{marker('mt')} loop", "max_turns": 1, "allowed_tools": ["Bash"]},
        {"id": "md", "prompt": f"{marker('md')} hi", "model": "claude-3-5-haiku-20241022",
         "disallowed_tools": ["Bash"]},
        {"id": "slow", "prompt": f"{marker('slow')} wait"}])
    api = RoutedAPI({"js": (sse(text('{"count": 3}')),),
                     "mt": (sse(tool_use("Bash", {"command": "echo again"})),),
                     "slow": (_slow(120),)})
    out = tmp_path / "r.jsonl"
    with api.serve() as url:
        r = run_batch(["tasks.jsonl", "--out", str(out), "--task-timeout", "8"], cwd=tmp_path, url=url)
    by_id = latest(read_results(out))
    assert by_id["js"]["outcome"] == "success" and by_id["js"]["result"]["structured_output"] == {"count": 3}
    assert by_id["mt"]["outcome"] == "max_turns" and by_id["mt"]["subtype"] == "error_max_turns"
    assert api.by_task["md"][0].body["model"] == "claude-3-5-haiku-20241022"
    assert by_id["md"]["model"] == "claude-3-5-haiku-20241022" and "Bash" not in api.by_task["md"][0].tool_names
    assert "Bash" in api.by_task["mt"][0].tool_names
    assert by_id["slow"]["outcome"] == "timed_out" and by_id["slow"]["error"].startswith("timed out;")
    assert r.returncode == 1 and "timed_out 1" in r.stdout and "max_turns 1" in r.stdout


def test_a_second_batch_on_the_same_results_file_is_refused(tmp_path):
    import fcntl
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "prompt": "x"}])
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"id": "z", "outcome": "crashed"}) + "\n")
    with open(out, "a") as held:  # as the first batch holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        r = run_batch(["tasks.jsonl", "--out", str(out)], cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (f"codeloop batch: another codeloop batch is writing {out}; "
                                         "wait for it or choose another --out")
    assert read_results(out) == [{"id": "z", "outcome": "crashed"}]
    (tmp_path / "d").mkdir()
    r = run_batch(["tasks.jsonl", "--out", str(tmp_path / "d")], cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.splitlines()[-1].startswith("codeloop batch: cannot ")


def test_an_api_error_is_a_failure_with_its_text(tmp_path):
    # Claude Code's shape for it is subtype "success" with is_error: the batch must not count it a success
    make_repo(tmp_path / "proj", {"a.txt": "a\n"})
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "e", "prompt": f"{marker('e')} go", "repo": "proj"}])
    api = RoutedAPI({"e": [error(400, "invalid_request_error", "bad request body")]})
    out = tmp_path / "r.jsonl"
    with api.serve() as url:
        r = run_batch(["tasks.jsonl", "-o", str(out)], cwd=tmp_path, url=url)
    [rec] = read_results(out)
    assert r.returncode == 1 and rec["outcome"] == "failed", rec
    assert rec["error"] == "API Error: 400 bad request body"
