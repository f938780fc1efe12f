"""Batch summaries: counts by outcome, cost and tokens, the slowest and costliest tasks.

Used for the summary printed at the end of `codeloop batch` and by `codeloop batch report`;
both read the latest result line of each task id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from codeloop.cli.commands.batch.results import Outcome, latest_by_id

TOP_N = 5
TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _cost(rec: dict[str, Any]) -> float:
    value = rec.get("total_cost_usd")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _wall_s(rec: dict[str, Any]) -> float:
    value = rec.get("wall_ms")
    return value / 1000 if isinstance(value, (int, float)) else 0.0


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A JSON-ready summary of the latest result of every task (`spent_usd`: every attempt's cost,
    e.g. an interrupted run before its resumed one)."""
    records = list(records)
    latest = list(latest_by_id(records).values())
    counts = {o.value: 0 for o in Outcome}
    tokens = dict.fromkeys(TOKEN_KEYS, 0)
    for rec in latest:
        outcome = rec.get("outcome")
        key = outcome if isinstance(outcome, str) and outcome in counts else "unknown"
        counts[key] = counts.get(key, 0) + 1
        usage = rec.get("usage") or {}
        for key in TOKEN_KEYS:
            value = usage.get(key)
            tokens[key] += value if isinstance(value, int) else 0
    ran = [r for r in latest if r.get("wall_ms") is not None]
    slowest = sorted(ran, key=_wall_s, reverse=True)[:TOP_N]
    costliest = sorted((r for r in latest if _cost(r) > 0), key=_cost, reverse=True)[:TOP_N]
    kept = [r for r in latest if r.get("workspace_kept")]
    removed = [r for r in latest if r.get("workspace_kept") is False]
    disk = {"kept": len(kept), "kept_bytes": sum(r.get("workspace_bytes") or 0 for r in kept),
            "removed": len(removed), "removed_bytes": sum(r.get("workspace_bytes") or 0 for r in removed)}
    return {"tasks": len(latest), "outcomes": {k: v for k, v in counts.items() if v},
            "workspaces": disk, "resumed": sum(1 for r in latest if r.get("start") == "resumed"),
            "restarted": sum(1 for r in latest if r.get("start") == "restarted"),
            "total_cost_usd": round(sum(_cost(r) for r in latest), 6), "tokens": tokens,
            "spent_usd": round(sum(_cost(r) for r in records), 6),
            "rate_limited": sum(r.get("rate_limited") or 0 for r in latest),
            "slowest": [{"id": r["id"], "seconds": round(_wall_s(r), 2), "outcome": r.get("outcome")}
                        for r in slowest],
            "costliest": [{"id": r["id"], "cost_usd": round(_cost(r), 6), "outcome": r.get("outcome")}
                          for r in costliest],
            "failed": [{"id": r["id"], "outcome": r.get("outcome"),
                        "error": (r.get("error") or "").splitlines()[0][:160] if r.get("error") else ""}
                       for r in latest if r.get("outcome") != Outcome.SUCCESS.value]}


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def render(summary: dict[str, Any]) -> str:
    """The summary as a few plain lines for people."""
    outcomes = " · ".join(f"{k} {v}" for k, v in summary["outcomes"].items()) or "none"
    t = summary["tokens"]
    lines = [f"{summary['tasks']} tasks: {outcomes}",
             f"cost ${summary['total_cost_usd']:.4f}"
             + (f" (all attempts ${summary['spent_usd']:.4f})"
                if summary.get("spent_usd", 0) > summary["total_cost_usd"] + 5e-7 else "")
             + f" · tokens {t['input_tokens']:,} in / "
             f"{t['output_tokens']:,} out (cache read {t['cache_read_input_tokens']:,}, "
             f"write {t['cache_creation_input_tokens']:,})"]
    disk = summary.get("workspaces") or {}
    if disk.get("kept") or disk.get("removed"):
        lines.append(f"workspaces: {disk['kept']} kept ({_mb(disk['kept_bytes'])}), {disk['removed']} removed "
                     f"({_mb(disk['removed_bytes'])} freed)")
    if summary.get("resumed") or summary.get("restarted"):
        lines.append(f"interrupted runs: {summary['resumed']} resumed, {summary['restarted']} restarted")
    if summary["rate_limited"]:
        lines.append(f"rate-limited answers (429/529): {summary['rate_limited']}")
    if summary["slowest"]:
        lines.append("slowest: " + ", ".join(f"{s['id']} {s['seconds']:.1f}s" for s in summary["slowest"]))
    if summary["costliest"]:
        lines.append("costliest: " + ", ".join(f"{s['id']} ${s['cost_usd']:.4f}" for s in summary["costliest"]))
    for f in summary["failed"][:20]:
        lines.append(f"  {f['outcome']}: {f['id']}" + (f" — {f['error']}" if f["error"] else ""))
    if len(summary["failed"]) > 20:
        lines.append(f"  … and {len(summary['failed']) - 20} more not successful")
    return "\n".join(lines)
