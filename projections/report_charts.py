"""Charts for the oversight report's HTML page, drawn as inline SVG.

Small pure functions: each takes a report figure (a section of the dict
`oversight_report` returns) and returns SVG markup that needs no script, no
font and no network, every text escaped. Charts scale to the page's width.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
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
BAR = "#455a64"
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


def stacked_chart(rows: dict[str, dict[str, Any]], label: str) -> str:
    """One bar a row (a reviewer), split by decision kind, with a legend of the kinds."""
    width, left, row = 300, 100, 22
    kinds = [k for k in dict.fromkeys(k for r in rows.values() for k in r) if k != "total"]
    kinds = [k for k in kinds if any(r.get(k) for r in rows.values())]
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
    y = row * len(rows) + 10
    for i, kind in enumerate(kinds):
        x = 4 + (i % 5) * 59
        line = y + (i // 5) * 14
        body += [
            _rect(x, line - 8, 8, 8, KIND_COLOURS.get(kind, BAR), kind),
            _text(x + 11, line, kind, cls="tick"),
        ]
    return _svg(width, y + 14 * ((len(kinds) + 4) // 5) - 4, label, body)


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
    a histogram instead when the figure has one."""
    if figure.get("histogram"):
        return histogram_chart(figure["histogram"], floor)
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


def histogram_chart(bins: list[dict[str, Any]], floor: float) -> str:
    """Bins of {"from", "to" (None: open-ended), "count"} as bars on a log axis."""
    edges = [float(b[k]) for b in bins for k in ("from", "to") if b.get(k)]
    axis = _axis([*edges, floor])
    top = max((int(b["count"]) for b in bins), default=0) or 1
    body = []
    for b in bins:
        x1 = _x(float(b["from"] or 0), axis)
        x2 = _x(axis[1] if b.get("to") is None else float(b["to"]), axis)
        height = 50 * int(b["count"]) / top
        tip = f"{b['from']} to {b.get('to') or 'more'} s: {b['count']}"
        body += [
            _rect(x1 + 0.5, 72 - height, max(x2 - x1 - 1, 1), height, BAR, tip),
            _text((x1 + x2) / 2, 68 - height, str(b["count"]), "middle", "tick"),
        ]
    return _svg(300, 94, "Time to decision, histogram", body + _axis_marks(axis, floor, 72))


def _decisions_chart(figure: dict[str, Any], _floor: float) -> str:
    rows = [(k, v, KIND_COLOURS.get(k, BAR)) for k, v in figure.get("by_kind", {}).items()]
    chart = bar_chart(rows, "Decisions by kind") if rows else ""
    for key, label in (("by_reviewer", "by reviewer"), ("by_day", "over time (UTC days)")):
        table = figure.get(key) or {}
        if table and all(isinstance(v, dict) for v in table.values()):
            chart += stacked_chart(table, f"Decisions {label}, by kind")
    return chart


def _age_chart(figure: dict[str, Any], _floor: float) -> str:
    ages = list(figure.get("by_age", {}).items())
    rows = [(k, v, AGE_COLOURS[min(i, len(AGE_COLOURS) - 1)]) for i, (k, v) in enumerate(ages)]
    return bar_chart(rows, "Open interrupts by age") if rows else ""


def _per_reviewer_chart(figure: dict[str, Any], _floor: float) -> str:
    rows = [(k, v, BAR) for k, v in figure.get("by_reviewer", {}).items()]
    return bar_chart(rows, "Fast decisions by reviewer") if rows else ""


def _rate_chart(figure: dict[str, Any], _floor: float) -> str:
    rows = [(k, v, KIND_COLOURS["reject"]) for k, v in figure.get("by_reviewer", {}).items()]

    def percent(rate: float | None) -> str:
        return "n/a" if rate is None else f"{rate:.0%}"

    return bar_chart(rows, "Override rate by reviewer", percent) if rows else ""


def _outcome_chart(figure: dict[str, Any], _floor: float) -> str:
    counts = [(k, v) for k, v in figure.items() if k != "raised" and type(v) is int]
    rows = [(k, v, OUTCOME_COLOURS.get(k, BAR)) for k, v in counts]
    return bar_chart(rows, "What became of the interrupts raised") if rows else ""


CHARTS: dict[str, Callable[[dict[str, Any], float], str]] = {
    "decisions": _decisions_chart,
    "time_to_decision_seconds": time_chart,
    "fast_decisions": _per_reviewer_chart,
    "override_rate": _rate_chart,
    "backlog": _age_chart,
    "coverage": _outcome_chart,
}
