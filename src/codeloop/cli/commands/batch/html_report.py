"""`codeloop batch report RESULTS --html FILE`: one self-contained page about a batch.

The page holds everything it shows (inline CSS, a few lines of inline script, SVG charts drawn
by `html_charts`); nothing is fetched when it is viewed, so it can be mailed or archived as one
file. Sections: the totals; charts of outcomes, cost and wall time per task; the slowest and
costliest tasks; then every task (latest result line of each id) with its error, its diff and
a readable view of its transcript (read from the batch folder: the `transcript` path of the
line, else the same file name under RESULTS.batch/transcripts/ when the files were moved).
Long texts are cut (`MAX_BLOCK_CHARS`, `MAX_MESSAGES`) so a page of big tasks stays usable.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from codeloop.cli.commands.batch.html_charts import OUTCOME_COLOURS, bar_chart, histogram
from codeloop.cli.commands.batch.report import summarize
from codeloop.cli.commands.batch.results import latest_by_id

MAX_BLOCK_CHARS = 4000
MAX_DIFF_CHARS = 200_000
MAX_MESSAGES = 400

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:16px;
color:#1d232b;background:#fafbfc}
h1{font-size:22px;margin:4px 0 12px}h2{font-size:17px;margin:22px 0 8px}
.totals{display:flex;flex-wrap:wrap;gap:10px}.totals div{background:#fff;border:1px solid #dde2e8;border-radius:6px;
padding:8px 12px}.totals b{display:block;font-size:18px}
.charts{display:flex;flex-wrap:wrap;gap:12px}.charts figure{margin:0;background:#fff;border:1px solid #dde2e8;
border-radius:6px;padding:8px}.charts figcaption{font-weight:600;margin-bottom:4px}
svg.chart{max-width:100%;height:auto}.axis{stroke:#8795a1}.grid{stroke:#e3e8ee}.tick{font-size:10px;fill:#52606d}
.value{font-size:11px;fill:#1d232b}.caption{font-size:11px;fill:#52606d}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #dde2e8;padding:4px 8px;text-align:left}
.tables{display:flex;flex-wrap:wrap;gap:16px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;color:#fff;font-size:12px}
details.task{background:#fff;border:1px solid #dde2e8;border-radius:6px;margin:6px 0;padding:4px 10px}
details.task>summary{cursor:pointer;padding:4px 0}.meta{color:#52606d;font-size:12px}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
.diff{background:#f6f8fa;border:1px solid #e3e8ee;padding:6px;overflow:auto;max-height:600px}
.diff .add{color:#116329;background:#e6ffec}.diff .del{color:#82071e;background:#ffebe9}.diff .hunk{color:#0550ae}
.diff .file{font-weight:700}.error{color:#82071e}
.transcript{border-left:3px solid #dde2e8;padding-left:10px;max-height:700px;overflow:auto}
.msg{margin:6px 0}.role{font-size:11px;font-weight:700;text-transform:uppercase;color:#52606d}
.msg.user .role{color:#0550ae}.msg.assistant .role{color:#116329}
.tool{background:#f6f8fa;border:1px solid #e3e8ee;border-radius:4px;padding:4px 6px;margin:4px 0}
.tool.result.is-error{border-color:#ffb3b3}.cut{color:#8795a1;font-style:italic}
#filter{padding:4px 8px;width:260px}.hidden{display:none}
"""

_JS = """
(function(){
  var box=document.getElementById('filter');var tasks=document.querySelectorAll('details.task');
  box.addEventListener('input',function(){var q=box.value.toLowerCase();
    tasks.forEach(function(t){t.classList.toggle('hidden',q!==''&&t.dataset.key.indexOf(q)<0);});});
  document.getElementById('expand').addEventListener('click',function(){tasks.forEach(function(t){t.open=true;});});
  document.getElementById('collapse').addEventListener('click',function(){tasks.forEach(function(t){t.open=false;});});
  if(location.hash){var t=document.querySelector(location.hash);if(t&&t.tagName==='DETAILS'){t.open=true;}}
})();
"""


def _cut(text: str, limit: int = MAX_BLOCK_CHARS) -> str:
    if len(text) <= limit:
        return escape(text)
    return escape(text[:limit]) + f'<span class="cut">… {len(text) - limit:,} more characters</span>'


def _badge(outcome: str | None) -> str:
    colour = OUTCOME_COLOURS.get(outcome or "", "#4a78c2")
    return f'<span class="badge" style="background:{colour}">{escape(outcome or "unknown")}</span>'


def _diff_html(diff: str) -> str:
    rows = []
    for line in diff[:MAX_DIFF_CHARS].splitlines():
        cls = ("file" if line.startswith(("diff --git", "+++ ", "--- ")) else "add" if line.startswith("+")
               else "del" if line.startswith("-") else "hunk" if line.startswith("@@") else "")
        rows.append(f'<span class="{cls}">{escape(line)}</span>' if cls else escape(line))
    more = (f'\n<span class="cut">… diff cut at {MAX_DIFF_CHARS:,} characters</span>'
            if len(diff) > MAX_DIFF_CHARS else "")
    return '<pre class="diff">' + "\n".join(rows) + more + "</pre>"


def _transcript_file(rec: dict[str, Any], results: Path) -> Path | None:
    path = rec.get("transcript")
    if not path:
        return None
    if Path(path).is_file():
        return Path(path)
    from codeloop.cli.commands.batch.driver import default_batch_dir
    moved = default_batch_dir(results) / "transcripts" / Path(path).name
    return moved if moved.is_file() else None


def _block_html(block: Any, role: str) -> str:
    if isinstance(block, str):
        return f"<pre>{_cut(block)}</pre>"
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return f"<pre>{_cut(str(block.get('text') or ''))}</pre>"
    if kind == "tool_use":
        args = json.dumps(block.get("input"), indent=1, ensure_ascii=False)
        return (f'<div class="tool call"><b>{escape(str(block.get("name")))}</b><pre>{_cut(args)}</pre></div>')
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
        err = " is-error" if block.get("is_error") else ""
        return (f'<div class="tool result{err}"><span class="meta">result</span>'
                f'<pre>{_cut(str(content or ""))}</pre></div>')
    if kind == "thinking":
        return (f'<details><summary class="meta">thinking</summary>'
                f'<pre>{_cut(str(block.get("thinking") or ""))}</pre></details>')
    return f'<span class="meta">[{escape(str(kind))}]</span>'


def _transcript_html(path: Path | None) -> str:
    if path is None:
        return '<p class="meta">No transcript recorded.</p>'
    try:
        raw = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f'<p class="meta">Transcript unreadable: {escape(str(exc))}</p>'
    parts, shown = [], 0
    for line in raw:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant") or entry.get("isMeta"):
            continue
        msg = entry.get("message") or {}
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [content]
        inner = "".join(_block_html(b, entry["type"]) for b in blocks)
        if not inner:
            continue
        shown += 1
        if shown > MAX_MESSAGES:
            parts.append(f'<p class="cut">… more messages in {escape(str(path))}</p>')
            break
        parts.append(f'<div class="msg {entry["type"]}"><div class="role">{entry["type"]}</div>{inner}</div>')
    return '<div class="transcript">' + ("".join(parts) or '<p class="meta">(empty)</p>') + "</div>"


def _task_html(i: int, rec: dict[str, Any], results: Path) -> str:
    cost, wall = rec.get("total_cost_usd") or 0.0, (rec.get("wall_ms") or 0) / 1000
    meta = [f"${cost:.4f}", f"{wall:.1f} s", f"{rec.get('num_turns') or 0} turns", str(rec.get("model") or ""),
            f"start: {rec.get('start') or 'fresh'}", f"attempt {rec.get('attempt') or 1}",
            f"host {rec.get('host') or '?'}", f"node {str(rec['node'])[:12]}" if rec.get("node") else ""]
    key = escape(f"{rec['id']} {rec.get('outcome')}".lower())
    body = [f'<p class="meta">{escape(" · ".join(m for m in meta if m))}</p>']
    if rec.get("error"):
        body.append(f'<pre class="error">{_cut(str(rec["error"]))}</pre>')
    if rec.get("restart_reason"):
        body.append(f'<p class="meta">restarted: {escape(str(rec["restart_reason"]))}</p>')
    body.append("<h4>Diff</h4>" + (_diff_html(rec["diff"]) if rec.get("diff") else '<p class="meta">No changes.</p>'))
    body.append("<h4>Transcript</h4>" + _transcript_html(_transcript_file(rec, results)))
    return (f'<details class="task" id="task-{i}" data-key="{key}"><summary>{_badge(rec.get("outcome"))} '
            f'<b>{escape(rec["id"])}</b> <span class="meta">${cost:.4f} · {wall:.1f} s</span></summary>'
            + "".join(body) + "</details>")


def _table(title: str, rows: list[tuple[str, str, str]], anchors: dict[str, int]) -> str:
    if not rows:
        return ""
    trs = "".join(f'<tr><td><a href="#task-{anchors[i]}">{escape(i)}</a></td><td>{escape(v)}</td>'
                  f"<td>{_badge(o)}</td></tr>" for i, v, o in rows)
    return f"<div><h2>{escape(title)}</h2><table>{trs}</table></div>"


def render_html(records: list[dict[str, Any]], results: Path) -> str:
    latest = list(latest_by_id(records).values())
    summary = summarize(records)
    anchors = {rec["id"]: i for i, rec in enumerate(latest)}
    costs = [float(r.get("total_cost_usd") or 0.0) for r in latest]
    walls = [(r.get("wall_ms") or 0) / 1000 for r in latest if r.get("wall_ms") is not None]
    ok = summary["outcomes"].get("success", 0)
    tokens = summary["tokens"]
    totals = [("tasks", str(summary["tasks"])), ("succeeded", f"{ok} ({ok / max(1, summary['tasks']):.0%})"),
              ("cost", f"${summary['total_cost_usd']:.4f}"),
              ("spent, all attempts", f"${summary['spent_usd']:.4f}"),
              ("tokens in / out", f"{tokens['input_tokens']:,} / {tokens['output_tokens']:,}"),
              ("task time (sum)", f"{sum(walls):.1f} s")]
    charts = [("Outcomes", bar_chart(summary["outcomes"], "tasks by outcome")),
              ("Cost per task", histogram(costs, "cost per task (USD)", "${:.4f}")),
              ("Wall time per task", histogram(walls, "wall time per task (seconds)", "{:.1f}s"))]
    slow = [(s["id"], f"{s['seconds']:.1f} s", s["outcome"]) for s in summary["slowest"]]
    costly = [(s["id"], f"${s['cost_usd']:.4f}", s["outcome"]) for s in summary["costliest"]]
    title = f"codeloop batch: {results.name}"
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        '<div class="totals">' + "".join(f"<div>{escape(k)}<b>{escape(v)}</b></div>" for k, v in totals) + "</div>",
        '<h2>Distributions</h2><div class="charts">'
        + "".join(f"<figure><figcaption>{escape(c)}</figcaption>{svg}</figure>" for c, svg in charts) + "</div>",
        '<div class="tables">' + _table("Slowest tasks", slow, anchors) + _table("Costliest tasks", costly, anchors)
        + "</div>",
        '<h2>Tasks</h2><p><input id="filter" type="search" placeholder="filter by id or outcome"> '
        '<button id="expand" type="button">expand all</button> <button id="collapse" type="button">collapse all'
        "</button></p>",
        "".join(_task_html(i, rec, results) for i, rec in enumerate(latest)),
        f"<script>{_JS}</script></body></html>"])


def write_html(records: list[dict[str, Any]], results: Path, out: Path) -> None:
    """Write the page atomically (a viewer never sees half a page)."""
    page = render_html(records, results)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
