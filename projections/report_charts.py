"""Charts for the oversight report's HTML page, drawn as inline SVG.

Small pure functions: each takes a report figure (a section of the dict
`oversight_report` returns) and returns SVG markup that needs no script, no
font and no network, every text escaped. Charts scale to the page's width.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from datetime import date
from html import escape
from typing import Any

KIND_COLOURS = {
    "approve": "#2e7d32",
    "reject": "#c62828",
    "edit": "#ef6c00",
    "respond": "#1565c0",
    "escalate": "#6a1b9a",
    "expired": "#616161",
}
AGE_COLOURS = ("#fbc02d", "#f9a825", "#f57f17", "#e65100", "#b71c1c")
OUTCOME_COLOURS = {
    "decided": "#2e7d32",
    "expired": "#616161",
    "cancelled": "#c62828",
    "open": "#f57f17",
}
FOUR_EYES_COLOURS = {
    "approved": KIND_COLOURS["approve"],
    "approved_short": "#b71c1c",
    "rejected": KIND_COLOURS["reject"],
    "expired": KIND_COLOURS["expired"],
}
BAR = "#455a64"
NOT_OUTCOMES = ("raised", "unapplied")  # the coverage figure's counts that are no outcome
TICKS = (
    (0.1, "0.1 s"),
    (1.0, "1 s"),
    (10.0, "10 s"),
    (60.0, "1 min"),
    (600.0, "10 min"),
    (3600.0, "1 h"),
    (86400.0, "1 d"),
    (604800.0, "7 d"),
    (2592000.0, "30 d"),
)


def display(value: Any) -> str:
    """A value as the page shows it: numbers as in the JSON, null as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value) if isinstance(value, int | float) else str(value)


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "") -> str:
    attrs = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{attrs}>{escape(text)}</text>'


def _rect(x: float, y: float, width: float, height: float, colour: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" '
        f'fill="{colour}"><title>{escape(tip)}</title></rect>'
    )


def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    return (
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def _short(name: str) -> str:
    return name if len(name) <= 14 else name[:13] + "\u2026"


def duration(seconds: float) -> str:
    """Seconds as a person reads them: 45 s, 12 min, 1.5 h, 2 d."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def bar_chart(
    rows: Sequence[tuple[str, float | None, str]],
    label: str,
    fmt: Callable[[float | None], str] = display,
) -> str:
    """Horizontal bars, one (name, value, colour) a row, scaled to the largest value."""
    width, left, row = 300, 100, 22
    top = max((v or 0 for _, v, _ in rows), default=0) or 1
    body = []
    for i, (name, value, colour) in enumerate(rows):
        y = i * row + 2
        length = (width - left - 50) * (value or 0) / top
        body += [
            _text(left - 6, y + 14, _short(name), "end"),
            _rect(left, y + 3, length, row - 8, colour, f"{name}: {fmt(value)}"),
            _text(left + length + 4, y + 14, fmt(value)),
        ]
    return _svg(width, row * len(rows) + 4, label, body)


def _kinds(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The decision kinds some row counts, in the rows' order, totals aside."""
    kinds = [k for k in dict.fromkeys(k for r in rows.values() for k in r) if k != "total"]
    return [k for k in kinds if any(r.get(k) for r in rows.values())]


def _legend(kinds: list[str], y: int) -> tuple[list[str], int]:
    """A legend of the kinds' colours from `y` down, five a line; and its height."""
    body = []
    for i, kind in enumerate(kinds):
        x = 4 + (i % 5) * 59
        line = y + (i // 5) * 14
        body += [
            _rect(x, line - 8, 8, 8, KIND_COLOURS.get(kind, BAR), kind),
            _text(x + 11, line, kind, cls="tick"),
        ]
    return body, 14 * ((len(kinds) + 4) // 5) - 4


def stacked_chart(rows: dict[str, dict[str, Any]], label: str) -> str:
    """One bar a row (a reviewer), split by decision kind, with a legend of the kinds."""
    width, left, row = 300, 100, 22
    kinds = _kinds(rows)
    top = max((sum(r.get(k) or 0 for k in kinds) for r in rows.values()), default=0) or 1
    body = []
    for i, (name, counts) in enumerate(rows.items()):
        y, x = i * row + 2, float(left)
        body.append(_text(left - 6, y + 14, _short(name), "end"))
        for kind in (k for k in kinds if counts.get(k)):
            length = (width - left - 40) * counts[kind] / top
            tip = f"{name}: {counts[kind]} {kind}"
            body.append(_rect(x, y + 3, length, row - 8, KIND_COLOURS.get(kind, BAR), tip))
            x += length
        body.append(_text(x + 4, y + 14, display(sum(counts.get(k) or 0 for k in kinds))))
    legend, height = _legend(kinds, row * len(rows) + 10)
    return _svg(width, row * len(rows) + 10 + height, label, body + legend)


def day_chart(days: dict[str, dict[str, Any]], label: str) -> str:
    """One column a UTC day ("2025-03-04"), split by decision kind, on a time axis: a
    day without decisions is a gap. Scaled to the busiest day, with a legend of the kinds."""
    dates = {date.fromisoformat(day): counts for day, counts in days.items()}
    first, last = min(dates), max(dates)
    width, left, base, height = 300, 34, 92, 80
    step = (width - left - 6) / ((last - first).days + 1)
    column = min(max(step * 0.8, 0.5), 24.0)
    kinds = _kinds(days)
    top = max((sum(c.get(k) or 0 for k in kinds) for c in days.values()), default=0) or 1
    body = [
        f'<line x1="{left}" y1="{base}" x2="{width - 6}" y2="{base}" class="axis"/>',
        _text(left - 4, base, "0", "end", "tick"),
        _text(left - 4, base - height + 8, display(top), "end", "tick"),
        _text(left, base + 13, first.isoformat(), "start", "tick"),
    ]
    if last != first:
        body.append(_text(width - 6, base + 13, last.isoformat(), "end", "tick"))
    for day, counts in dates.items():
        x, y = left + (day - first).days * step + (step - column) / 2, float(base)
        for kind in (k for k in kinds if counts.get(k)):
            length = height * counts[kind] / top
            y -= length
            tip = f"{day.isoformat()}: {counts[kind]} {kind}"
            body.append(_rect(x, y, column, length, KIND_COLOURS.get(kind, BAR), tip))
    legend, legend_height = _legend(kinds, base + 30)
    return _svg(width, base + 30 + legend_height, label, body + legend)


def _axis(values: list[float]) -> tuple[float, float]:
    """A log-scale axis, from the tick below the smallest value to the one at or above."""
    positive = [v for v in values if v > 0] or [1.0]
    lo = max((t for t, _ in TICKS if t < min(positive)), default=min(positive) / 10)
    hi = min((t for t, _ in TICKS if t >= max(positive)), default=max(positive))
    return lo, hi


def _x(value: float, axis: tuple[float, float], left: float = 10, width: float = 280) -> float:
    lo, hi = axis
    clamped = min(max(value, lo), hi)
    return left + width * math.log(clamped / lo) / math.log(hi / lo)


def _axis_marks(axis: tuple[float, float], floor: float, y: int) -> list[str]:
    marks = [f'<line x1="10" y1="{y}" x2="290" y2="{y}" class="axis"/>']
    for tick, name in TICKS:
        if axis[0] <= tick <= axis[1]:
            x = _x(tick, axis)
            marks += [
                f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" class="axis"/>',
                _text(x, y + 15, name, "middle", "tick"),
            ]
    x = _x(floor, axis)
    anchor = "end" if x > 200 else "start"
    marks += [
        f'<line x1="{x:.1f}" y1="12" x2="{x:.1f}" y2="{y}" class="floor"/>',
        _text(x + (-3 if anchor == "end" else 3), 10, f"floor {floor:g} s", anchor, "fl"),
    ]
    return marks


def time_chart(figure: dict[str, Any], floor: float) -> str:
    """Median, p90 and max on a log axis, the rubber-stamp floor a dashed line;
    a histogram instead when the figure has one with any answer in it."""
    bins = figure.get("histogram") or []
    if any(b.get("count") for b in bins):
        legend = (
            '<p class="legend">Log scale: each bar spans its bucket, as high as the answers '
            "in it; dashed red line: the rubber-stamp floor.</p>"
        )
        return histogram_chart(bins, floor) + legend
    median, p90, top = figure.get("median"), figure.get("p90"), figure.get("max")
    if median is None or p90 is None or top is None:
        return '<p class="none">No decisions in the period.</p>'
    axis = _axis([median, p90, top, floor])
    xm, xp, xt = (_x(v, axis) for v in (median, p90, top))
    summary = f"median {duration(median)} \u00b7 p90 {duration(p90)} \u00b7 max {duration(top)}"
    body = [
        f'<rect x="10" y="30" width="{xp - 10:.1f}" height="28" class="box"/>',
        f'<line x1="{xp:.1f}" y1="44" x2="{xt:.1f}" y2="44" class="whisker"/>',
        f'<line x1="{xt:.1f}" y1="36" x2="{xt:.1f}" y2="52" class="whisker"/>',
        f'<line x1="{xm:.1f}" y1="26" x2="{xm:.1f}" y2="62" class="median"/>',
        *_axis_marks(axis, floor, 72),
        _text(150, 108, summary, "middle"),
    ]
    legend = (
        '<p class="legend">Log scale. Box: up to p90; thick line: median; whisker: to max; '
        "dashed red line: the rubber-stamp floor.</p>"
    )
    return _svg(300, 114, f"Time to decision: {summary}; floor {floor:g} s", body) + legend


def _next_tick(seconds: float) -> float:
    return min((t for t, _ in TICKS if t > seconds), default=seconds * 10)


def _bin_name(b: dict[str, Any]) -> str:
    low, high = b.get("from"), b.get("to")
    if high is None:
        return f"{duration(float(low))} or more" if low else "any time"
    if not low:
        return f"under {duration(float(high))}"
    return f"{duration(float(low))} to {duration(float(high))}"


def histogram_chart(bins: list[dict[str, Any]], floor: float) -> str:
    """Bins of {"from", "to" (None: open-ended), "count"} as bars on a log axis; an
    open-ended bin reaches the next tick. A count is written over its bar if it fits."""
    edges = [float(b[k]) for b in bins for k in ("from", "to") if b.get(k)]
    ends = [_next_tick(float(b["from"])) for b in bins if b.get("to") is None and b.get("from")]
    axis = _axis([*edges, *ends, floor])
    top = max((int(b["count"]) for b in bins), default=0) or 1
    body = []
    for b in bins:
        x1 = _x(float(b["from"] or 0), axis)
        x2 = _x(axis[1] if b.get("to") is None else float(b["to"]), axis)
        height = 50 * int(b["count"]) / top
        count, tip = str(b["count"]), f"{_bin_name(b)}: {b['count']}"
        body.append(_rect(x1 + 0.5, 72 - height, max(x2 - x1 - 1, 1), height, BAR, tip))
        if x2 - x1 >= 6 * len(count):
            body.append(_text((x1 + x2) / 2, 68 - height, count, "middle", "tick"))
    return _svg(300, 94, "Time to decision, histogram", body + _axis_marks(axis, floor, 72))


def _decisions_chart(figure: dict[str, Any], _floor: float) -> str:
    rows = [(k, v, KIND_COLOURS.get(k, BAR)) for k, v in figure.get("by_kind", {}).items()]
    chart = bar_chart(rows, "Decisions by kind") if rows else ""
    reviewers, days = figure.get("by_reviewer") or {}, figure.get("by_day") or {}
    if reviewers and all(isinstance(v, dict) for v in reviewers.values()):
        chart += stacked_chart(reviewers, "Decisions by reviewer, by kind")
    if days and all(isinstance(v, dict) for v in days.values()):
        chart += day_chart(days, "Decisions over time (UTC days), by kind")
    return chart


def _age_chart(figure: dict[str, Any], _floor: float) -> str:
    ages = list(figure.get("by_age", {}).items())
    rows = [(k, v, AGE_COLOURS[min(i, len(AGE_COLOURS) - 1)]) for i, (k, v) in enumerate(ages)]
    return bar_chart(rows, "Open interrupts by age") if rows else ""


def _counts_chart(key: str, label: str) -> Callable[[dict[str, Any], float], str]:
    """A chart of the figure's counts under `key` (by reviewer, by principal), a bar each."""

    def chart(figure: dict[str, Any], _floor: float) -> str:
        rows = [(k, v, BAR) for k, v in (figure.get(key) or {}).items()]
        return bar_chart(rows, label) if rows else ""

    return chart


def _four_eyes_chart(figure: dict[str, Any], _floor: float) -> str:
    if not figure.get("value"):
        return ""
    rows = [(k, figure.get(k), colour) for k, colour in FOUR_EYES_COLOURS.items()]
    return bar_chart(rows, "Four-eyes decisions by how they ended")


def _rate_chart(figure: dict[str, Any], _floor: float) -> str:
    rows = [(k, v, KIND_COLOURS["reject"]) for k, v in figure.get("by_reviewer", {}).items()]

    def percent(rate: float | None) -> str:
        return "n/a" if rate is None else f"{rate:.0%}"

    return bar_chart(rows, "Override rate by reviewer", percent) if rows else ""


def _outcome_chart(figure: dict[str, Any], _floor: float) -> str:
    # What became of them; `unapplied` cuts across outcomes (a count of its own, not a bar).
    counts = [(k, v) for k, v in figure.items() if k not in NOT_OUTCOMES and type(v) is int]
    rows = [(k, v, OUTCOME_COLOURS.get(k, BAR)) for k, v in counts]
    return bar_chart(rows, "What became of the interrupts raised") if rows else ""


CHARTS: dict[str, Callable[[dict[str, Any], float], str]] = {
    "decisions": _decisions_chart,
    "time_to_decision_seconds": time_chart,
    "fast_decisions": _counts_chart("by_reviewer", "Fast decisions by reviewer"),
    "override_rate": _rate_chart,
    "four_eyes": _four_eyes_chart,
    "flow_edits": _counts_chart("by_reviewer", "Edits as_node by reviewer"),
    "bypass_attempts": _counts_chart("by_principal", "Refused bypass attempts by principal"),
    "backlog": _age_chart,
    "coverage": _outcome_chart,
}
