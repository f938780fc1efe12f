"""`codeloop batch --backend ray` on a local Ray instance, as a subprocess against the routed fake API.

Skipped only when Ray is not installed or cannot start here (the reason is shown). The Ray
instance is kept small: a 128 MB object store, tasks asking for a quarter CPU and 64 MB.
"""

import importlib.util
import json
import signal
from pathlib import Path

import pytest

from batchhelpers import (RoutedAPI, latest, make_repo, marker, read_results, run_batch, start_batch,
                          write_file_script, write_tasks)
from fakeapi import Block, sse, tool_use

RAY_ARGS = ["--backend", "ray", "--workers", "4", "--ray-task-cpus", "0.25", "--ray-task-memory-mb", "64"]
CRASH, OVER_BUDGET, WORKER_LOST, SLOW = "t03", "t05", "t07", "t01"

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="ray is not installed (pip install 'codeloop[ray]')")


def _skip_if_ray_cannot_start(stderr: str) -> None:
    for line in stderr.splitlines():
        if "could not start Ray" in line:
            pytest.skip(f"Ray cannot start on this machine: {line}")


@needs_ray
def test_twenty_tasks_on_local_ray(tmp_path):
    make_repo(tmp_path / "proj", {"hello.py": "print('hi')\n"})
    tasks, scripts = [], {}
    for i in range(20):
        tid = f"t{i:02d}"
        tasks.append({"id": tid, "prompt": f"{marker(tid)} write out_{tid}.txt", "repo": "proj",
                      "allowed_tools": ["Bash"], "max_turns": 5})
        scripts[tid] = write_file_script(f"out_{tid}.txt", f"from {tid}")
    scripts[CRASH] = (sse(tool_use("Bash", {"command": "kill -9 $PPID"})),)
    tasks[5]["max_budget_usd"] = 0.001
    scripts[OVER_BUDGET] = (sse(tool_use("Bash", {"command": "echo spent"}), input_tokens=20000),)
    # the Ray worker process running the task dies (its loop's parent): Ray retries the task
    # (the command then waits: its loop must die with the worker, never get a further request out first)
    kill_worker = "kill -9 $(awk '{print $4}' /proc/$PPID/stat); sleep 60"
    scripts[WORKER_LOST] = [sse(tool_use("Bash", {"command": kill_worker})),
                            *write_file_script(f"out_{WORKER_LOST}.txt", f"from {WORKER_LOST}")]
    # still running when the batch is stopped with SIGTERM: interrupted, then resumed
    slow = sse(Block({"type": "text", "text": ""}, [{"type": "text_delta", "text": "slow"}], delay=120))
    scripts[SLOW] = [slow, *write_file_script(f"out_{SLOW}.txt", f"from {SLOW}")]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    api = RoutedAPI(scripts)
    out = tmp_path / "results.jsonl"
    args = ["tasks.jsonl", "--out", str(out), *RAY_ARGS]
    with api.serve() as url:
        proc = start_batch(args, cwd=tmp_path, url=url)
        try:
            # stop once the worker-loss task has its (retried) result and SLOW is mid-flight
            api.wait_for(lambda: proc.poll() is not None or (
                SLOW in api.by_task and len(api.by_task) >= 12 and out.exists()
                and f'"id": "{WORKER_LOST}"' in out.read_text()), timeout=240)
        except AssertionError:
            proc.send_signal(signal.SIGTERM)  # not SIGKILL: the batch then stops its Ray instance
            proc.communicate(timeout=120)
            raise
        if proc.poll() is not None:  # it should still be running: Ray failed to start, or the batch did
            _, stderr = proc.communicate(timeout=60)
            _skip_if_ray_cannot_start(stderr)
            raise AssertionError(stderr)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, stderr
        first = latest(read_results(out))
        assert first[SLOW]["outcome"] == "interrupted" and first[SLOW]["backend"] == "ray"
        interrupted = {tid for tid, rec in first.items() if rec["outcome"] == "interrupted"}
        assert "interrupting running tasks" in stderr

        r = run_batch(args, cwd=tmp_path, url=url, timeout=300)
        _skip_if_ray_cannot_start(r.stderr)
    assert r.returncode == 1, r.stderr
    records = read_results(out)
    by_id = latest(records)
    assert set(by_id) == {f"t{i:02d}" for i in range(20)}
    # the interrupted tasks ran again; nothing else has two lines
    assert sorted(x["id"] for x in records) == sorted([*by_id, *interrupted])
    assert by_id[CRASH]["outcome"] == "crashed" and "SIGKILL" in by_id[CRASH]["error"]
    assert by_id[OVER_BUDGET]["outcome"] == "over_budget"
    # worker loss: Ray ran the task again and the retry succeeded (the fake API saw both attempts)
    assert by_id[WORKER_LOST]["outcome"] == "success"
    assert len(api.by_task[WORKER_LOST]) == 3
    for tid, rec in by_id.items():
        if tid in (CRASH, OVER_BUDGET):
            continue
        assert rec["outcome"] == "success" and rec["backend"] == "ray", rec
        if tid in interrupted and _had_a_session(first[tid]):
            # it went on with its session: only the turns left were taken
            assert rec["start"] == "resumed" and rec["session_id"] == first[tid]["session_id"], rec
        elif tid in interrupted:
            # the SIGTERM found it starting, before its loop wrote a message (a race the wait above
            # cannot close on a loaded machine): nothing to go on with, so it starts over, saying why
            assert rec["start"] == "restarted" and rec["restart_reason"], rec
        else:
            assert rec["num_turns"] == 2 and rec["start"] == "fresh", rec
        if tid in interrupted and tid != SLOW:
            # stopped wherever the SIGTERM found it — before or after its scripted write ran — so
            # the script's last answer may come with nothing written; SLOW's stop point is known
            assert rec["transcript"], rec
            continue
        assert f"+from {tid}" in rec["diff"] and rec["transcript"]
    assert "20 tasks: success 18 · over_budget 1 · crashed 1" in r.stdout
    assert by_id[SLOW]["start"] == "resumed"   # mid-answer when stopped: always had its session


def _had_a_session(rec: dict) -> bool:
    """Whether an interrupted run's transcript (the driver's copy) holds a message to go on from."""
    copy = rec.get("transcript")
    if not copy or not Path(copy).is_file():
        return False
    return any(json.loads(line).get("type") in ("user", "assistant")
               for line in Path(copy).read_text(encoding="utf-8").splitlines() if line.strip())


def test_missing_ray_is_one_clear_line(tmp_path):
    # a `ray` that cannot be imported, ahead of the real one on the path
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "prompt": "x"}])
    r = run_batch(["tasks.jsonl", "--out", "r.jsonl", "--backend", "ray"], cwd=tmp_path,
                  env={"PYTHONPATH": str(tmp_path / "shadow")})
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == ("codeloop batch: the ray backend needs Ray, which is not installed: "
                                         "pip install 'codeloop[ray]'")
    assert not (tmp_path / "r.jsonl").exists()
