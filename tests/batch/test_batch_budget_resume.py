"""`--max-total-usd` stops running tasks from their live cost; stopped tasks resume their own
session in their kept workspace; `--keep-workspaces` and the disk summary. Local backend, as a
subprocess against the routed fake API."""

import json
from pathlib import Path

from batchhelpers import RoutedAPI, latest, marker, read_results, run_batch, write_tasks
from fakeapi import Block, sse, text, tool_use

STOPPED = ("t0", "t1", "t2")


def _slow(seconds: float):
    return sse(Block({"type": "text", "text": ""}, [{"type": "text_delta", "text": "slow"}], delay=seconds))


def _script(tid: str, phase: dict):
    """Turn 0 writes a file (cheap); turn 1 costs $0.03 and runs a long command, until the second
    phase, where a resumed session (or a restarted one's second turn) is answered at once."""
    def answer(req):
        turn = sum(1 for m in req.messages if m.get("role") == "assistant")
        if turn == 0:
            return sse(tool_use("Bash", {"command": f"printf 'part1' > a_{tid}.txt"}))
        if phase["second"]:
            return sse(text(f"finished {tid}"))
        if turn == 1:
            return sse(tool_use("Bash", {"command": "sleep 100"}), input_tokens=10000)
        return _slow(120)
    return (answer,)


def test_budget_stops_running_tasks_then_they_resume(tmp_path):
    phase = {"second": False}
    tasks = [{"id": t, "prompt": f"{marker(t)} work", "allowed_tools": ["Bash"]} for t in (*STOPPED, "t3", "t4")]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    api = RoutedAPI({**{t: _script(t, phase) for t in STOPPED},
                     "t3": (sse(text("ok")),), "t4": (sse(text("ok")),)})
    out = tmp_path / "r.jsonl"
    args = ["tasks.jsonl", "--out", str(out), "--workers", "3"]
    with api.serve() as url:
        # each second call costs $0.0303: the line is crossed by the third, while all three run
        r = run_batch([*args, "--max-total-usd", "0.08"], cwd=tmp_path, url=url)
        assert r.returncode == 1, r.stderr
        first = latest(read_results(out))
        assert set(first) == set(STOPPED) and {"t3", "t4"}.isdisjoint(api.by_task)
        for tid in STOPPED:
            rec = first[tid]
            assert rec["outcome"] == "over_budget" and rec["stopped_by"] == "batch_budget", rec
            assert "--max-total-usd was reached" in rec["error"] and rec["total_cost_usd"] > 0.03
            assert rec["workspace_kept"] and (Path(rec["workspace"]) / f"a_{tid}.txt").is_file()
            assert Path(rec["transcript"]).is_relative_to(tmp_path / "r.batch" / "transcripts")
        assert "budget reached" in r.stderr and "not started: 2 tasks (budget reached)" in r.stdout
        assert "over_budget 3" in r.stdout and "workspaces: 3 kept" in r.stdout and "batch folder:" in r.stdout

        # t2's transcript is damaged: it starts over; the other two continue their sessions
        with open(first["t2"]["session_transcript"], "a") as fh:
            fh.write("{torn\n")
        phase["second"] = True
        seen = {t: len(api.by_task[t]) for t in STOPPED}
        r = run_batch([*args, "--max-total-usd", "5"], cwd=tmp_path, url=url)
    assert r.returncode == 0, r.stderr
    records = read_results(out)
    assert sorted(x["id"] for x in records) == sorted([*STOPPED, *STOPPED, "t3", "t4"])
    now = latest(records)
    for tid in ("t0", "t1"):
        rec = now[tid]
        assert rec["outcome"] == "success" and rec["start"] == "resumed", rec
        assert rec["session_id"] == first[tid]["session_id"] and rec["workspace"] == first[tid]["workspace"]
        # the loop picked up its history: the first run's tool call, then the continue prompt
        [resumed_req] = api.by_task[tid][seen[tid]:]
        sent = json.dumps(resumed_req.messages)
        assert f"a_{tid}.txt" in sent and "was interrupted before it was done" in sent
        # the diff is taken against the first run's snapshot: it holds both runs' work
        assert f"a_{tid}.txt" in rec["diff"] and "+part1" in rec["diff"]
    t2 = now["t2"]
    assert t2["outcome"] == "success" and t2["start"] == "restarted", t2
    assert "transcript is damaged" in t2["restart_reason"] and t2["session_id"] != first["t2"]["session_id"]
    assert now["t3"]["start"] == "fresh" and now["t3"]["restart_reason"] is None
    # success: the default --keep-workspaces failed removed them all
    for rec in now.values():
        assert rec["workspace_kept"] is False and rec["workspace_bytes"] > 0
        assert not Path(rec["workspace"]).exists() and Path(rec["transcript"]).is_file()
    assert "interrupted runs: 2 resumed, 1 restarted" in r.stdout
    # the summary's cost is the latest lines'; the first runs' calls show in what was spent in all
    spent = sum(x["total_cost_usd"] for x in records)
    assert f"(all attempts ${spent:.4f})" in r.stdout
    assert "workspaces: 0 kept (0.0 MB), 5 removed" in r.stdout


def test_keep_workspaces_all_and_none(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "ok", "prompt": f"{marker('ok')} go", "allowed_tools": ["Bash"]},
                                           {"id": "bad", "prompt": f"{marker('bad')} go", "allowed_tools": ["Bash"]}])
    crash = (sse(tool_use("Bash", {"command": "kill -9 $PPID"})),)
    api = RoutedAPI({"bad": crash})
    kept = {}
    with api.serve() as url:
        for keep in ("all", "none"):
            out = tmp_path / f"{keep}.jsonl"
            r = run_batch(["tasks.jsonl", "--out", str(out), "--keep-workspaces", keep], cwd=tmp_path, url=url)
            assert r.returncode == 1, r.stderr
            kept[keep] = {x["id"]: (x["workspace_kept"], Path(x["workspace"]).is_dir())
                          for x in read_results(out)}
        r = run_batch(["tasks.jsonl", "--out", "x.jsonl", "--keep-workspaces", "some"], cwd=tmp_path, url=url)
    assert kept == {"all": {"ok": (True, True), "bad": (True, True)},
                    "none": {"ok": (False, False), "bad": (False, False)}}
    assert r.returncode == 2 and "invalid choice: 'some'" in r.stderr
