"""Task lines, the results file and the summary, on real files (no loop runs here)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from batchhelpers import make_repo, read_results, write_tasks
from codeloop.cli.commands.batch.report import render, summarize
from codeloop.cli.commands.batch.results import ResultsFile, read_records, should_run, write_predictions
from codeloop.cli.commands.batch.tasks import TaskDefaults, TaskKind, TaskSpec, load_tasks
from codeloop.cli.commands.batch.workspace import WorkspaceError, diff, folder_name, prepare


def test_task_fields_defaults_and_paths(tmp_path):
    sub = tmp_path / "jobs"
    sub.mkdir()
    write_tasks(sub / "t.jsonl", [
        {"id": 7, "prompt": "p", "repo": "../proj", "ref": "main", "allowed_tools": "Read,Bash(git log:*)",
         "json_schema": {"type": "object"}, "max_budget_usd": 1},
        {"id": "b", "prompt": "q", "repo": "https://example.invalid/x.git", "model": "opus", "max_turns": 3},
        "# a comment line", ""])
    defaults = TaskDefaults(model="sonnet", max_turns=9, allowed_tools=["Edit"], permission_mode="acceptEdits")
    tasks, errors = load_tasks(sub / "t.jsonl", defaults)
    assert errors == []
    a, b = tasks
    assert (a.id, a.repo, a.ref, a.model, a.max_turns) == ("7", str(tmp_path / "proj"), "main", "sonnet", 9)
    assert a.allowed_tools == ["Read", "Bash(git log:*)"] and a.permission_mode == "acceptEdits"
    assert json.loads(a.json_schema) == {"type": "object"} and a.max_budget_usd == 1.0
    assert (b.repo, b.model, b.max_turns, b.allowed_tools) == ("https://example.invalid/x.git", "opus", 3, ["Edit"])


def test_swebench_instance_becomes_a_task(tmp_path):
    (tmp_path / "clones" / "org__lib").mkdir(parents=True)
    write_tasks(tmp_path / "swe.jsonl", [
        {"instance_id": "org__lib-12", "repo": "org/lib", "base_commit": "abc123", "problem_statement": "It breaks",
         "version": "1.0", "created_at": "2024-01-01"},
        {"instance_id": "other__x-1", "repo": "other/x", "base_commit": "def", "problem_statement": "Also"},
        {"instance_id": "bad-1", "repo": "org/lib", "problem_statement": "no commit"}])
    tasks, errors = load_tasks(tmp_path / "swe.jsonl", TaskDefaults(swe_repos=str(tmp_path / "clones")))
    assert errors == [f"{tmp_path / 'swe.jsonl'}:3: missing \"base_commit\""]
    local, remote = tasks
    assert local.kind is TaskKind.SWEBENCH and local.id == "org__lib-12"
    assert local.repo == str(tmp_path / "clones" / "org__lib") and local.ref == "abc123"
    assert "It breaks" in local.prompt and "org/lib" in local.prompt and "abc123" in local.prompt
    assert remote.repo == "https://github.com/other/x.git"


def test_results_file_survives_a_torn_line(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"id": "a", "outcome": "success"}) + "\n" + '{"id": "b", "outco')
    warnings = []
    assert [r["id"] for r in read_records(out, warn=warnings.append)] == ["a"]
    assert warnings == [f"{out}:2: not a result line (torn by a crash?); ignored"]
    rf = ResultsFile(out)
    rf.append({"id": "c", "outcome": "crashed", "note": "ünïcode"})
    rf.close()
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[1] == '{"id": "b", "outco' and json.loads(lines[2])["note"] == "ünïcode"
    assert [r["id"] for r in read_records(out)] == ["a", "c"]


@pytest.mark.parametrize("outcome,rerun_failed,runs", [
    (None, False, True), ("success", True, False), ("crashed", False, False), ("crashed", True, True),
    ("over_budget", False, False), ("interrupted", False, True), ("setup_failed", True, True)])
def test_rerun_decisions(outcome, rerun_failed, runs):
    previous = None if outcome is None else {"id": "x", "outcome": outcome}
    assert should_run(previous, rerun_failed) is runs


def test_summary_counts_cost_tokens_and_extremes():
    recs = [{"id": f"t{i}", "outcome": "success", "total_cost_usd": i / 100, "wall_ms": 1000 * (10 - i),
             "usage": {"input_tokens": 100, "output_tokens": 10}} for i in range(6)]
    recs.append({"id": "t0", "outcome": "crashed", "error": "codeloop was killed\nmore", "wall_ms": 50})
    s = summarize(recs)
    assert s["tasks"] == 6 and s["outcomes"] == {"success": 5, "crashed": 1}
    assert s["total_cost_usd"] == 0.15 and s["tokens"]["input_tokens"] == 500
    assert [x["id"] for x in s["slowest"]] == ["t1", "t2", "t3", "t4", "t5"]
    assert [x["id"] for x in s["costliest"]][:2] == ["t5", "t4"]
    assert s["failed"] == [{"id": "t0", "outcome": "crashed", "error": "codeloop was killed"}]
    text = render(s)
    assert "6 tasks: success 5 · crashed 1" in text and "crashed: t0 — codeloop was killed" in text


def test_predictions_only_for_swebench_latest_line(tmp_path):
    recs = [{"id": "i-1", "kind": "swebench", "diff": "old", "model": "m"},
            {"id": "i-1", "kind": "swebench", "diff": "new", "model": "m"},
            {"id": "plain", "kind": "plain", "diff": "x"},
            {"id": "i-2", "kind": "swebench", "diff": None, "model": None}]
    path = tmp_path / "p.jsonl"
    assert write_predictions(recs, path, "fallback") == 2
    assert [json.loads(x) for x in path.read_text().splitlines()] == [
        {"instance_id": "i-1", "model_name_or_path": "codeloop/m", "model_patch": "new"},
        {"instance_id": "i-2", "model_name_or_path": "codeloop/fallback", "model_patch": ""}]


def test_workspace_clone_ref_setup_and_diff(tmp_path):
    base = make_repo(tmp_path / "src", {"a.txt": "one\n", ".gitignore": "*.log\n"})
    (tmp_path / "src" / "a.txt").write_text("uncommitted\n")
    batch = tmp_path / "batch"
    spec = TaskSpec(id="x/y z", prompt="p", repo=str(tmp_path / "src"), ref=base, setup="echo gen > gen.txt")
    ws, baseline = prepare(spec, batch)
    assert ws.name == folder_name("x/y z") and "/" not in ws.name
    assert (ws / "a.txt").read_text() == "one\n" and (ws / "gen.txt").exists()
    (ws / "a.txt").write_text("two\n")
    (ws / "new.txt").write_text("n\n")
    (ws / "noise.log").write_text("ignored\n")
    patch = diff(ws, baseline)
    assert "-one\n+two" in patch and "new.txt" in patch and "gen.txt" not in patch and "noise.log" not in patch
    # the agent's own `git status` is not disturbed by the snapshot index
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True).stdout
    assert "A " not in status
    shutil.rmtree(ws / ".git")   # what an agent could do if nothing protected .git
    with pytest.raises(WorkspaceError, match="no longer a git repository"):
        diff(ws, baseline)
    with pytest.raises(WorkspaceError, match="not found"):
        prepare(TaskSpec(id="bad", prompt="p", repo=str(tmp_path / "src"), ref="no-such-ref"), batch)
    with pytest.raises(WorkspaceError, match="failed"):
        prepare(TaskSpec(id="gone", prompt="p", repo=str(tmp_path / "nowhere")), batch)


def test_batch_diff_runs_nothing_the_workspace_names(tmp_path):
    """Issue 25 #5: a task rewrote its workspace's git config (fsmonitor, a filter, a textconv and
    an external diff), added a hook and planted a nested repository with its own fsmonitor; the
    batch's `git add -A` and `git diff` on the host run none of them (a marker file would show)."""
    base = make_repo(tmp_path / "src", {"a.txt": "one\n"})
    ws, baseline = prepare(TaskSpec(id="t", prompt="p", repo=str(tmp_path / "src"), ref=base), tmp_path / "batch")
    markers = [tmp_path / f"ran-{i}" for i in range(6)]
    with open(ws / ".git" / "config", "a") as fh:
        fh.write(f"[core]\n\tfsmonitor = touch {markers[0]}\n"
                 f"[filter \"x\"]\n\tclean = touch {markers[1]}; cat\n\tsmudge = cat\n"
                 f"[diff \"x\"]\n\ttextconv = touch {markers[2]}; cat\n[diff]\n\texternal = touch {markers[3]}\n")
    hook = ws / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {markers[4]}\n")
    hook.chmod(0o755)
    (ws / ".gitattributes").write_text("* filter=x diff=x\n")
    (ws / "a.txt").write_text("two\n")
    sub = ws / "sub"
    make_repo(sub, {"s.txt": "s\n"})
    subprocess.run(["git", "-C", str(sub), "config", "core.fsmonitor", f"touch {markers[5]}"], check=True)
    patch = diff(ws, baseline)
    assert "-one\n+two" in patch and "Subproject commit" in patch and ".gitattributes" in patch
    assert [m.name for m in markers if m.exists()] == []


def test_report_cli_text_and_predictions(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "i-1", "kind": "swebench", "outcome": "success", "diff": "d", "model": "m", "total_cost_usd": 0.5,
         "wall_ms": 2000}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODELOOP_")}
    r = subprocess.run([sys.executable, "-m", "codeloop", "batch", "report", str(out), "--predictions",
                        str(tmp_path / "p.jsonl")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("1 tasks: success 1\ncost $0.5000")
    assert read_results(tmp_path / "p.jsonl")[0]["instance_id"] == "i-1"


def test_live_cost_counts_each_call_once_and_the_ledger_every_attempt():
    from codeloop.cli.commands.batch.budget import Ledger, LiveCost
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    line = {"type": "assistant", "message": {"id": "m1", "model": "claude-sonnet-4-5-20250929", "usage": usage}}
    live = LiveCost()
    assert live.add_line(line) and not live.add_line(line)  # a message split over lines repeats its usage
    assert live.total() == 3.0  # $3 per million input tokens
    assert live.add_line({"type": "assistant", "message": {"id": "m2", "model": "claude-sonnet-4-5-20250929",
                                                           "usage": {"output_tokens": 100_000}}})
    assert live.total() == 4.5
    assert not live.add_line({"type": "assistant", "message": {"id": "m3"}})  # no usage: nothing to count
    ledger = Ledger(5.0)
    assert not ledger.spend("attempt-1", 3.0)
    assert not ledger.spend("attempt-1", 2.0)  # a cost never goes down
    assert ledger.spend("attempt-2", 2.0) and ledger.total() == 5.0  # a lost attempt's money still counts
    assert not Ledger(None).spend("x", 1e9)


def test_resume_plans_from_previous_lines(tmp_path):
    from codeloop.cli.commands.batch.resume import plan_for
    base = {"id": "t", "session_id": "s1", "workspace": str(tmp_path), "baseline": "abc", "workspace_kept": True}
    assert plan_for(None, enabled=True, batch_dir=tmp_path) is None
    assert plan_for({**base, "outcome": "failed"}, enabled=True, batch_dir=tmp_path) is None
    assert plan_for({**base, "outcome": "over_budget"}, enabled=True, batch_dir=tmp_path) is None  # its own cap
    plan = plan_for({**base, "outcome": "over_budget", "stopped_by": "batch_budget"}, enabled=True,
                    batch_dir=tmp_path)
    assert plan is not None and plan.refused is None and plan.session_id == "s1"
    assert plan_for({**base, "outcome": "interrupted"}, enabled=False, batch_dir=tmp_path).refused == "--no-resume"
    gone = plan_for({**base, "outcome": "interrupted", "workspace_kept": False}, enabled=True, batch_dir=tmp_path)
    assert "not kept" in gone.refused
    assert should_run({**base, "outcome": "over_budget", "stopped_by": "batch_budget"}, False)
    assert not should_run({**base, "outcome": "over_budget"}, False)
