"""Inline SVG charts for the HTML batch report: a bar chart of counts and a histogram.

Drawn here, in Python, as SVG text: the page needs no script or library to show them and
nothing is fetched when it is viewed. Every chart has a fixed viewBox and scales with its box;
each bar carries a <title> (the browser's tooltip) with its exact figure.
"""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT = 420, 220
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 44, 12, 14, 40
OUTCOME_COLOURS = {"success": "#2e9e5b", "failed": "#d9534f", "max_turns": "#e6a23c", "over_budget": "#b5548c",
                   "crashed": "#8b0000", "setup_failed": "#7a6a53", "timed_out": "#c77c2e",
                   "interrupted": "#6c7a89"}
_DEFAULT_COLOUR = "#4a78c2"


def _svg(body: list[str], label: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def _axis(top: float) -> list[str]:
    """The y axis with 0, the middle and the top value, and the baseline."""
    plot_h = HEIGHT - _PAD_T - _PAD_B
    out = [f'<line x1="{_PAD_L}" y1="{HEIGHT - _PAD_B}" x2="{WIDTH - _PAD_R}" y2="{HEIGHT - _PAD_B}" '
           'class="axis"/>']
    for frac in (0.0, 0.5, 1.0):
        y = HEIGHT - _PAD_B - frac * plot_h
        value = top * frac
        text = f"{value:.0f}" if top >= 4 or frac in (0.0, 1.0) else f"{value:.1f}"
        out.append(f'<text x="{_PAD_L - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{text}</text>')
        if frac:
            out.append(f'<line x1="{_PAD_L}" y1="{y:.1f}" x2="{WIDTH - _PAD_R}" y2="{y:.1f}" class="grid"/>')
    return out


def bar_chart(counts: dict[str, int], label: str) -> str:
    """One bar per key (e.g. outcome), its count above it."""
    items = [(k, v) for k, v in counts.items() if v]
    if not items:
        return _svg([f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" class="tick">no tasks</text>'],
                    label)
    top = max(v for _, v in items)
    plot_w, plot_h = WIDTH - _PAD_L - _PAD_R, HEIGHT - _PAD_T - _PAD_B
    slot = plot_w / len(items)
    bar_w = min(60.0, slot * 0.7)
    body = _axis(top)
    for i, (key, value) in enumerate(items):
        h = max(1.0, value / top * plot_h)
        x = _PAD_L + i * slot + (slot - bar_w) / 2
        y = HEIGHT - _PAD_B - h
        colour = OUTCOME_COLOURS.get(key, _DEFAULT_COLOUR)
        body.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                    f'fill="{colour}"><title>{escape(key)}: {value}</title></rect>')
        body.append(f'<text x="{x + bar_w / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" class="value">{value}</text>')
        body.append(f'<text x="{x + bar_w / 2:.1f}" y="{HEIGHT - _PAD_B + 14}" text-anchor="middle" '
                    f'class="tick">{escape(key)}</text>')
    return _svg(body, label)


def _bins(values: list[float], n: int) -> tuple[float, float, list[int]]:
    lo, hi = min(values), max(values)
    if math.isclose(lo, hi):
        lo, hi = (lo - 0.5, hi + 0.5) if lo else (0.0, 1.0)
    width = (hi - lo) / n
    counts = [0] * n
    for v in values:
        counts[min(n - 1, int((v - lo) / width))] += 1
    return lo, width, counts


def histogram(values: list[float], label: str, unit_fmt: str = "{:.2f}", bins: int = 10) -> str:
    """How many values fall in each of `bins` equal ranges between the smallest and the largest."""
    if not values:
        return _svg([f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" class="tick">no data</text>'],
                    label)
    bins = max(1, min(bins, len(values)))
    lo, width, counts = _bins(values, bins)
    top = max(counts)
    plot_w, plot_h = WIDTH - _PAD_L - _PAD_R, HEIGHT - _PAD_T - _PAD_B
    bar_w = plot_w / bins
    body = _axis(top)
    for i, count in enumerate(counts):
        h = count / top * plot_h
        x = _PAD_L + i * bar_w
        start, end = lo + i * width, lo + (i + 1) * width
        body.append(f'<rect class="bar" x="{x + 1:.1f}" y="{HEIGHT - _PAD_B - h:.1f}" width="{bar_w - 2:.1f}" '
                    f'height="{max(h, 0.5):.1f}" fill="{_DEFAULT_COLOUR}"><title>{unit_fmt.format(start)} – '
                    f'{unit_fmt.format(end)}: {count}</title></rect>')
    for frac, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        x = _PAD_L + frac * plot_w
        body.append(f'<text x="{x:.1f}" y="{HEIGHT - _PAD_B + 14}" text-anchor="{anchor}" class="tick">'
                    f'{escape(unit_fmt.format(lo + frac * width * bins))}</text>')
    body.append(f'<text x="{_PAD_L + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" class="caption">'
                f'{escape(label)}</text>')
    return _svg(body, label)
