"""The oversight report as JSON, CSV, and one self-contained HTML page.

The report is the dict `oversight_report` returns: a `period`, then one
section per figure, each saying `how` it is computed. The three formats carry
the same numbers. CSV has one row per figure (section, key, value, how), nested
figures flattened to dotted keys (`decisions.by_reviewer.alice.approve`, list
items by position: `time_to_decision_seconds.histogram.0.count`). The HTML page
marks each figure's cell with `data-key="<section>.<key>"`, the CSV's section
and key, so a test or a script can read it back. The page needs no network:
inline CSS, and inline SVG charts from `projections.report_charts`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from html import escape
from typing import Any

from projections.report_charts import CHARTS, display

Report = dict[str, Any]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
TITLES = {
    "interrupts_raised": "Interrupts raised",
    "decisions": "Decisions",
    "time_to_decision_seconds": "Time to decision (seconds)",
    "fast_decisions": "Fast decisions: possible rubber-stamping",
    "override_rate": "Override rate",
    "deadline_breaches": "Deadline breaches",
    "cancellations": "Cancellations (stop)",
    "reasked": "Questions asked again: the answer was for another",
    "four_eyes": "Four eyes: decisions that needed several approvals",
    "flow_edits": "Edits that decided the flow (as_node)",
    "bypass_attempts": "Refused attempts to get round a hold point",
    "backlog": "Open backlog by age",
    "coverage": "Coverage",
}


def to_json(report: Report) -> str:
    """The report as JSON, indented, its keys in the report's own order."""
    return json.dumps(report, indent=2) + "\n"


# -- CSV ---------------------------------------------------------------------


def leaves(figure: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, plain value) for each value in a figure, its `how` aside."""
    if isinstance(figure, dict):
        items = [(str(k), v) for k, v in figure.items() if prefix or k != "how"]
    elif isinstance(figure, list):
        items = [(str(i), v) for i, v in enumerate(figure)]
    else:
        yield prefix, figure
        return
    for key, value in items:
        yield from leaves(value, f"{prefix}.{key}" if prefix else key)


def cell(value: Any) -> str:
    """A CSV cell: numbers as in the JSON, null empty, text guarded against formulas."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def to_csv(report: Report) -> str:
    """One row per figure: section, key, value, how."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["section", "key", "value", "how"])
    for section, figure in report.items():
        how = cell(figure.get("how")) if isinstance(figure, dict) else ""
        writer.writerows([section, key, cell(value), how] for key, value in leaves(figure))
    return out.getvalue()


# -- HTML ----------------------------------------------------------------------

CSS = """
body{margin:0;background:#f3f4f6;color:#1d2330;
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:12px}
h1{font-size:1.35rem;margin:.2em 0}h2{font-size:1.02rem;margin:0 0 .3em}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:.5em 0 1em}
dt{color:#5b6472}dd{margin:0;overflow-wrap:anywhere}
dl.item{margin:.4em 0;padding:.3em 0 .3em .6em;border-left:3px solid #c62828;font-size:.88rem}
@media (max-width:420px){header dl{grid-template-columns:1fr;gap:0}header dd{margin-bottom:.3em}}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,300px),1fr));
gap:12px;align-items:start}
@media (min-width:700px){section.wide{grid-column:span 2}}
section{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:12px;min-width:0}
.big{font-size:1.9rem;font-weight:600;margin:0 0 .2em}
.how,.legend,.none{color:#5b6472;font-size:.85rem;margin:.5em 0 0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.88rem;margin:.5em 0 0}
caption{text-align:left;color:#5b6472;font-size:.85rem;white-space:nowrap}
th,td{padding:2px 8px 2px 0;text-align:left;border-bottom:1px solid #eceef2;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
svg{display:block;width:100%;max-width:400px;height:auto;margin:.3em 0;font-size:12px;
fill:#1d2330}
.tick{font-size:10px;fill:#5b6472}.fl{font-size:10px;fill:#c62828}
.axis{stroke:#8a93a0}.floor{stroke:#c62828;stroke-width:1.5;stroke-dasharray:4 3}
.box{fill:#90caf9}.median{stroke:#0d47a1;stroke-width:3}.whisker{stroke:#0d47a1;stroke-width:1.5}
"""


def _key(*parts: str) -> str:
    return f' data-key="{escape(".".join(parts))}"'


def _value_cell(value: Any, *key: str) -> str:
    number = ' class="n"' if isinstance(value, int | float) and not isinstance(value, bool) else ""
    return f"<td{number}{_key(*key)}>{escape(display(value))}</td>"


def _table(caption: str, head: list[str], rows: list[str]) -> str:
    cols = "".join(f"<th>{escape(h)}</th>" for h in head)
    return (
        f'<div class="scroll"><table><caption>{escape(caption)}</caption>'
        f"<tr>{cols}</tr>{''.join(rows)}</table></div>"
    )


def _mapping_table(section: str, key: str, mapping: dict[str, Any]) -> str:
    caption = key.replace("_", " ")
    if not mapping:
        return f'<p class="none">{escape(caption)}: none</p>'
    if _is_matrix(mapping):
        cols = list(dict.fromkeys(c for v in mapping.values() for c in v))
        rows = [
            f"<tr><th>{escape(str(name))}</th>"
            + "".join(_value_cell(row.get(c), section, key, str(name), c) for c in cols)
            + "</tr>"
            for name, row in mapping.items()
        ]
        return _table(caption, ["", *cols], rows)
    rows = [
        f"<tr><th>{escape(path)}</th>{_value_cell(v, section, key, path)}</tr>"
        for path, v in leaves(mapping, "")
    ]
    return _table(caption, ["", ""], rows)


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _rows_table(section: str, key: str, items: list[dict[str, Any]]) -> str:
    """Items of numbers only (histogram bins, ...) as one table, an item a row."""
    cols = list(dict.fromkeys(field for item in items for field in item))
    rows = [
        "<tr>"
        + "".join(
            _value_cell(item[c], section, key, str(i), c) if c in item else "<td></td>"
            for c in cols
        )
        + "</tr>"
        for i, item in enumerate(items)
    ]
    return _table(key.replace("_", " "), cols, rows)


def _list_items(section: str, key: str, items: list[Any]) -> str:
    """Each item (a cancelled thread, ...) as its own short list, readable at any width;
    items of numbers only as the rows of one table."""
    if not items:
        return f'<p class="none">{escape(key.replace("_", " "))}: none</p>'
    if not all(isinstance(item, dict) for item in items):
        return _mapping_table(section, key, {str(i): item for i, item in enumerate(items)})
    if all(_is_number(value) for item in items for value in item.values()):
        return _rows_table(section, key, items)
    return "".join(
        '<dl class="item">'
        + "".join(
            f"<dt>{escape(str(field))}</dt>"
            f"<dd{_key(section, key, str(i), str(field))}>{escape(display(value))}</dd>"
            for field, value in item.items()
        )
        + "</dl>"
        for i, item in enumerate(items)
    )


def _card(section: str, figure: Any, floor: float) -> str:
    figure = figure if isinstance(figure, dict) else {"value": figure}
    title = TITLES.get(section, section.replace("_", " ").capitalize())
    parts = [f"<h2>{escape(title)}</h2>"]
    if "value" in figure:
        parts.append(
            f'<p class="big"{_key(section, "value")}>{escape(display(figure["value"]))}</p>'
        )
    chart = CHARTS.get(section)
    if chart is not None:
        parts.append(chart(figure, floor))
    scalars = [
        f"<tr><th>{escape(k)}</th>{_value_cell(v, section, k)}</tr>"
        for k, v in figure.items()
        if k not in ("value", "how") and not isinstance(v, dict | list)
    ]
    if scalars:
        parts.append(_table("", ["", ""], scalars))
    for k, v in figure.items():
        if isinstance(v, dict):
            parts.append(_mapping_table(section, k, v))
        elif isinstance(v, list):
            parts.append(_list_items(section, k, v))
    if figure.get("how"):
        parts.append(f'<p class="how">How: {escape(str(figure["how"]))}</p>')
    wide = any(isinstance(v, dict) and _is_matrix(v) for v in figure.values())
    cls = ' class="wide"' if wide else ""
    return f'<section id="{escape(section)}"{cls}>{"".join(parts)}</section>'


def _is_matrix(mapping: dict[str, Any]) -> bool:
    return bool(mapping) and all(isinstance(v, dict) for v in mapping.values())


def _header(period: dict[str, Any]) -> str:
    names = {
        "since": "From (UTC)",
        "until": "Until (UTC, excluded)",
        "graph_id": "Graph",
        "generated_at": "Generated",
        "rubber_stamp_seconds": "Rubber-stamp floor (s)",
    }
    rows = []
    for key, value in period.items():
        shown = escape(display(value))
        if key == "graph_id" and value is None:
            rows.append("<dt>Graph</dt><dd>all graphs</dd>")
            continue
        rows.append(f"<dt>{escape(names.get(key, key))}</dt><dd{_key('period', key)}>{shown}</dd>")
    return (
        "<header><h1>Human oversight report</h1>"
        "<p>EU AI Act Article 14: interrupts raised, decisions, and what became of them.</p>"
        f"<dl>{''.join(rows)}</dl></header>"
    )


def to_html(report: Report) -> str:
    """One self-contained page: inline CSS and SVG, every text escaped."""
    period = report.get("period", {})
    floor = float(period.get("rubber_stamp_seconds", 10.0))
    cards = "".join(_card(k, v, floor) for k, v in report.items() if k != "period")
    graph = period.get("graph_id") or "all graphs"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Oversight report: {escape(str(graph))}, {escape(str(period.get('since')))} "
        f"to {escape(str(period.get('until')))}</title><style>{CSS}</style></head>"
        f'<body><main>{_header(period)}<div class="cards">{cards}</div></main></body></html>\n'
    )


FORMATS: dict[str, Callable[[Report], str]] = {"json": to_json, "csv": to_csv, "html": to_html}
