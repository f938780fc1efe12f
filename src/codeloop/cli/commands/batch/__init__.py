"""`codeloop batch`: run many headless sessions at once, locally or on Ray; `codeloop batch report`.

This module owns the command line only; the driver schedules, the runner runs one task (watch:
its stream-json and stops; resume: continuing an interrupted one; workspace: its folder and
diff), the backends (local, ray) place tasks, budget holds the spend ledger, report and
html_report (with html_charts) summarise a results file. Import-light: nothing heavy loads
until a batch starts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_ERROR, EXIT_SIGINT = 0, 1, 130
PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="codeloop batch",
        description="Run one headless codeloop session per task line, each in its own workspace.",
        epilog="Task lines (JSONL): {\"id\", \"prompt\", \"repo\"+\"ref\" | \"workdir\", \"setup\", \"model\", "
               "\"max_turns\", \"max_budget_usd\", \"allowed_tools\", \"permission_mode\", \"json_schema\"}, or "
               "SWE-bench instances. Summary of a results file: codeloop batch report RESULTS.jsonl")
    p.add_argument("tasks", type=Path, help="tasks file, one JSON object a line")
    p.add_argument("--out", "-o", type=Path, required=True, help="results file (JSONL, appended)")
    p.add_argument("--workers", "-j", type=_positive_int, default=4, help="tasks running at once (default 4)")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local worker processes, or Ray (pip install 'codeloop[ray]')")
    p.add_argument("--ray-address", metavar="ADDR", help="join this Ray cluster (default: start a local instance)")
    p.add_argument("--ray-task-cpus", type=_positive_float, default=1.0, metavar="N",
                   help="CPUs each Ray task asks for (default 1)")
    p.add_argument("--ray-task-memory-mb", type=_positive_int, default=1024, metavar="MB",
                   help="memory each Ray task asks for (default 1024)")
    p.add_argument("--ray-max-retries", type=int, default=2, metavar="N",
                   help="Ray retries of a task whose worker was lost (default 2)")
    p.add_argument("--max-total-usd", type=_positive_float, metavar="USD",
                   help="once this run has spent this much (running tasks' live cost counted), stop the "
                        "running tasks (over_budget) and start no more")
    p.add_argument("--keep-workspaces", choices=("all", "failed", "none"), default="failed",
                   help="which task workspaces stay on disk when their task ends (default: failed)")
    p.add_argument("--no-resume", dest="resume", action="store_false",
                   help="an interrupted task starts over instead of resuming its session")
    p.add_argument("--shared-dir", type=Path, metavar="DIR",
                   help="on a Ray cluster: a folder every node sees at the same path, for workspaces and "
                        "logs (default: each node's temp folder; results come back to the driver either way)")
    p.add_argument("--rerun-failed", action="store_true", help="run again the tasks whose last result failed")
    p.add_argument("--batch-dir", type=Path, metavar="DIR",
                   help="where workspaces and logs go (default: RESULTS.batch/ beside the results file)")
    p.add_argument("--predictions", type=Path, metavar="FILE",
                   help="SWE-bench predictions file (default: RESULTS.predictions.jsonl)")
    p.add_argument("--swe-repos", metavar="DIR",
                   help="local clones of SWE-bench repositories (DIR/owner__name), instead of cloning GitHub")
    p.add_argument("--task-timeout", type=_positive_float, metavar="SECONDS", help="interrupt a task after this long")
    p.add_argument("--setup-timeout", type=_positive_float, default=900.0, metavar="SECONDS",
                   help="limit for a task's setup command (default 900)")
    g = p.add_argument_group("defaults for task lines that leave them out")
    g.add_argument("--model")
    g.add_argument("--max-turns", type=_positive_int)
    g.add_argument("--max-budget-usd", type=_positive_float, metavar="USD")
    g.add_argument("--allowedTools", "--allowed-tools", dest="allowed_tools", nargs="+", action="extend",
                   metavar="TOOL")
    g.add_argument("--permission-mode", choices=PERMISSION_MODES)
    return p


def _report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="codeloop batch report",
                                description="Summarise a results file: outcomes, cost, tokens, slowest and "
                                            "costliest tasks.")
    p.add_argument("results", type=Path)
    p.add_argument("--json", action="store_true", help="the summary as one JSON object")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="also write a self-contained HTML page: charts, slowest and costliest tasks, each "
                        "task's diff and transcript")
    p.add_argument("--predictions", type=Path, metavar="FILE",
                   help="also (re)write the SWE-bench predictions file from the results")
    p.add_argument("--model-name", default="default", help="model_name_or_path fallback for predictions")
    return p


def report_main(argv: list[str]) -> int:
    from codeloop.cli.commands.batch.report import render, summarize
    from codeloop.cli.commands.batch.results import read_records, write_predictions

    args = _report_parser().parse_args(argv)
    if not args.results.is_file():
        sys.stderr.write(f"codeloop batch report: no results file at {args.results}\n")
        return EXIT_ERROR
    records = read_records(args.results, warn=lambda t: sys.stderr.write(f"codeloop batch report: {t}\n"))
    summary = summarize(records)
    sys.stdout.write((json.dumps(summary, indent=2) if args.json else render(summary)) + "\n")
    if args.html:
        from codeloop.cli.commands.batch.html_report import write_html
        try:
            write_html(records, args.results.resolve(), args.html)
        except OSError as exc:
            sys.stderr.write(f"codeloop batch report: cannot write {args.html}: {exc.strerror or exc}\n")
            return EXIT_ERROR
        sys.stderr.write(f"codeloop batch report: wrote {args.html}\n")
    if args.predictions:
        n = write_predictions(records, args.predictions, args.model_name)
        sys.stderr.write(f"codeloop batch report: wrote {n} predictions to {args.predictions}\n")
    return EXIT_OK


def batch_main(argv: list[str]) -> int:
    if argv[:1] == ["report"]:
        return report_main(argv[1:])
    from codeloop.cli.commands.batch.driver import BackendKind, BatchError, BatchOptions, run_batch
    from codeloop.cli.commands.batch.tasks import TaskDefaults
    from codeloop.cli.commands.batch.workspace import KeepWorkspaces

    args = _run_parser().parse_args(argv)
    from codeloop.cli.startup.tool_lists import tool_list as _tool_list
    if not args.tasks.is_file():
        sys.stderr.write(f"codeloop batch: no tasks file at {args.tasks}\n")
        return EXIT_ERROR
    defaults = TaskDefaults(model=args.model, max_turns=args.max_turns, max_budget_usd=args.max_budget_usd,
                            allowed_tools=_tool_list(args.allowed_tools) or [],
                            permission_mode=args.permission_mode, swe_repos=args.swe_repos)
    opts = BatchOptions(tasks=args.tasks, out=args.out, workers=args.workers, backend=BackendKind(args.backend),
                        ray_address=args.ray_address, ray_task_cpus=args.ray_task_cpus,
                        ray_task_memory_mb=args.ray_task_memory_mb, ray_max_retries=max(0, args.ray_max_retries),
                        max_total_usd=args.max_total_usd, rerun_failed=args.rerun_failed,
                        batch_dir=args.batch_dir, predictions=args.predictions, task_timeout_s=args.task_timeout,
                        setup_timeout_s=args.setup_timeout, defaults=defaults,
                        keep_workspaces=KeepWorkspaces(args.keep_workspaces), shared_dir=args.shared_dir,
                        resume=args.resume)
    try:
        return run_batch(opts)
    except BatchError as exc:
        sys.stderr.write(f"codeloop batch: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:  # outside the driver's own handler (e.g. while Ray starts or stops)
        sys.stderr.write("codeloop batch: interrupted (the results file is intact)\n")
        return EXIT_SIGINT
