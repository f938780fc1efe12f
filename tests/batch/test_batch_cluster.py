"""`codeloop batch` on a multi-node Ray cluster on one machine (`ray.cluster_utils.Cluster`).

The head runs no tasks (0 CPUs; the batch's control actor lives there with the driver); two
worker nodes run them, each with a temp folder of its own (TMPDIR), so a task's workspace is on
its node's disk only. Killing a node mid-task must get the task retried on the other node, its
result, diff, transcript and log written in the driver's batch folder, and one result line.
One cluster for the module (Ray's start-up is the slow part); skipped when Ray cannot start.
"""

import importlib.util
import json
import signal
from pathlib import Path

import pytest

from batchhelpers import (RoutedAPI, make_repo, marker, read_results, run_batch, start_batch, write_file_script,
                          write_tasks)
from fakeapi import Block, sse, text, tool_use

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="ray is not installed (pip install 'codeloop[ray]')")
STORE = 80 * 2**20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from ray.cluster_utils import Cluster
    base = tmp_path_factory.mktemp("nodes")
    dirs = [base / "node-a", base / "node-b"]
    for d in dirs:
        d.mkdir()
    try:
        # a lost node is declared dead after ~2 s instead of ~30 s
        c = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "object_store_memory": STORE, "include_dashboard": False,
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                               "health_check_timeout_ms": 500}})
        nodes = [c.add_node(num_cpus=2, object_store_memory=STORE, env_vars={"TMPDIR": str(d)}) for d in dirs]
        c.wait_for_nodes()
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"Ray cannot start a cluster here: {type(exc).__name__}: {exc}")
    yield c, nodes, dirs
    c.shutdown()


def _slow(seconds: float):
    return sse(Block({"type": "text", "text": ""}, [{"type": "text_delta", "text": "slow"}], delay=seconds))


def test_budget_holds_across_nodes(tmp_path, cluster):
    c, nodes, dirs = cluster
    ids = ["a", "b", "c"]
    write_tasks(tmp_path / "tasks.jsonl", [{"id": t, "prompt": f"{marker(t)} go", "allowed_tools": ["Bash"]}
                                           for t in ids])
    # a $0.0303 call, then a long command: the line is crossed once both running tasks made their call
    costly = (sse(tool_use("Bash", {"command": "sleep 100"}), input_tokens=10000),)
    api = RoutedAPI(dict.fromkeys(ids, costly))
    out = tmp_path / "r.jsonl"
    # two CPUs a task and two a node: one task on each node
    args = ["tasks.jsonl", "--out", str(out), "--backend", "ray", "--ray-address", c.address, "--workers", "2",
            "--ray-task-cpus", "2", "--ray-task-memory-mb", "64", "--max-total-usd", "0.05"]
    with api.serve() as url:
        proc = start_batch(args, cwd=tmp_path, url=url)
        try:
            stdout, stderr = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 1, stderr
    records = read_results(out)
    assert len(records) == 2 and len(api.by_task) == 2, records
    assert len({r["node"] for r in records}) == 2  # the ledger is the batch's, not a node's
    for rec in records:
        assert rec["outcome"] == "over_budget" and rec["stopped_by"] == "batch_budget", rec
        assert rec["total_cost_usd"] > 0.03
    assert "budget reached" in stderr and "not started: 1 tasks (budget reached)" in stdout


def test_shared_dir_keeps_workspaces_where_a_resumed_task_finds_them(tmp_path, cluster):
    c, _, dirs = cluster
    phase = {"second": False}

    def answer(req):
        turn = sum(1 for m in req.messages if m.get("role") == "assistant")
        if turn == 0:
            return sse(tool_use("Bash", {"command": "printf 'first run' > first.txt"}))
        return sse(text("done")) if phase["second"] else _slow(300)
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "r", "prompt": f"{marker('r')} go", "allowed_tools": ["Bash"]}])
    api = RoutedAPI({"r": (answer,)})
    shared = tmp_path / "shared"
    out = tmp_path / "r.jsonl"
    args = ["tasks.jsonl", "--out", str(out), "--backend", "ray", "--ray-address", c.address, "--workers", "1",
            "--ray-task-cpus", "1", "--ray-task-memory-mb", "64", "--shared-dir", str(shared)]
    with api.serve() as url:
        proc = start_batch(args, cwd=tmp_path, url=url)
        try:
            api.wait_for(lambda: proc.poll() is not None or len(api.by_task["r"]) >= 2, timeout=180)
        finally:
            proc.send_signal(signal.SIGTERM)  # the task is interrupted mid-call
            _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, stderr
        [first] = read_results(out)
        assert first["outcome"] == "interrupted" and Path(first["workspace"]).is_relative_to(shared)
        assert first["workspace_kept"] and not any(str(d) in first["workspace"] for d in dirs)
        phase["second"] = True
        r = run_batch(args, cwd=tmp_path, url=url)
    assert r.returncode == 0, r.stderr
    second = read_results(out)[-1]
    assert second["outcome"] == "success" and second["start"] == "resumed", second
    assert second["session_id"] == first["session_id"] and "+first run" in second["diff"]


def test_node_lost_mid_task_retried_on_the_other_node(tmp_path, cluster):
    c, nodes, dirs = cluster
    make_repo(tmp_path / "proj", {"hello.py": "print('hi')\n"})
    ids = ["victim", "n0", "n1"]
    write_tasks(tmp_path / "tasks.jsonl", [{"id": t, "prompt": f"{marker(t)} write out_{t}.txt", "repo": "proj",
                                            "allowed_tools": ["Bash"]} for t in ids])
    scripts = {t: write_file_script(f"out_{t}.txt", f"from {t}") for t in ids}
    # the first attempt hangs until its node is gone; the retry gets the real answers
    scripts["victim"] = [_slow(300), *write_file_script("out_victim.txt", "from victim")]
    api = RoutedAPI(scripts)
    out = tmp_path / "results.jsonl"
    args = ["tasks.jsonl", "--out", str(out), "--backend", "ray", "--ray-address", c.address, "--workers", "3",
            "--ray-task-cpus", "1", "--ray-task-memory-mb", "64"]
    with api.serve() as url:
        proc = start_batch(args, cwd=tmp_path, url=url)
        try:
            api.wait_for(lambda: proc.poll() is not None or len(api.by_task["victim"]) >= 1, timeout=180)
            assert proc.poll() is None, proc.communicate(timeout=30)[1]
            sent = json.dumps(api.by_task["victim"][0].body)
            [lost] = [i for i, d in enumerate(dirs) if str(d) in sent]  # its workspace says where it runs
            c.remove_node(nodes[lost], allow_graceful=False)
            stdout, stderr = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    records = read_results(out)
    assert sorted(r["id"] for r in records) == sorted(ids)  # exactly one line each
    by_id = {r["id"]: r for r in records}
    victim = by_id["victim"]
    other = dirs[1 - lost]
    assert victim["outcome"] == "success" and victim["backend"] == "ray", victim
    assert Path(victim["workspace"]).is_relative_to(other) and victim["node"] == nodes[1 - lost].node_id
    assert len(api.by_task["victim"]) == 3  # the lost attempt's call, then the retry's two
    batch = (tmp_path / "results.batch").resolve()
    for rec in records:
        assert rec["outcome"] == "success" and f"+from {rec['id']}" in rec["diff"], rec
        # what stays is in the driver's batch folder, whichever node ran the task
        transcript = Path(rec["transcript"])
        assert transcript.is_relative_to(batch) and rec["session_id"] in transcript.read_text()
        assert Path(rec["stderr_log"]).is_relative_to(batch) and Path(rec["stderr_log"]).is_file()
        assert not Path(rec["workspace"]).is_relative_to(batch)
    assert not (batch / "workspaces").exists()
