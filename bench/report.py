"""Result model of the benchmarks and the writer of BENCHMARKS.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.backends import HOLDPOINT, HOLDPOINT_FULL, LANGGRAPH, SIDE_ORDER
from bench.stats import fmt_ratio

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

Stats = dict[str, float]
NOT_MEASURED = "not measured"
RATIO_LABELS = {HOLDPOINT: "ratio H/L", HOLDPOINT_FULL: "ratio H(synchronous=full)/L"}


@dataclass(frozen=True)
class Metric:
    """One measured quantity: its key in a Stats dict, header and formatter."""

    key: str
    header: str
    fmt: Callable[[float], str]


@dataclass
class Table:
    """A markdown table."""

    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    """A target from the issue and whether this run met it (None: could not tell).

    A ``reported`` target has no limit: the figure is only reported.
    """

    description: str
    met: bool | None
    detail: str
    reported: bool = False

    @property
    def verdict(self) -> str:
        """Return "met", "MISSED", "reported" or "not evaluated"."""
        if self.reported:
            return "reported"
        if self.met is None:
            return "not evaluated"
        return "met" if self.met else "MISSED"


@dataclass
class CaseResult:
    """Everything one benchmark reports."""

    name: str
    title: str
    method: str
    tables: list[Table] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def ratio(by_side: dict[str, Stats | None], key: str, side: str = HOLDPOINT) -> float | None:
    """Return ``side``'s value over LangGraph's, or None when either is missing."""
    hold, lang = by_side.get(side), by_side.get(LANGGRAPH)
    if hold is None or lang is None or not lang.get(key):
        return None
    return hold[key] / lang[key]


def comparison_rows(
    group: str, by_side: dict[str, Stats | None], metrics: Sequence[Metric]
) -> list[list[str]]:
    """One row per side measured, then each Holdpoint side's ratio to LangGraph."""
    rows = []
    names = [name for name in SIDE_ORDER if name in by_side or name != HOLDPOINT_FULL]
    for name in names:
        stats = by_side.get(name)
        cells = [m.fmt(stats[m.key]) if stats else "no result" for m in metrics]
        rows.append([group, name, *cells])
    for name, label in RATIO_LABELS.items():
        if name in names:
            ratios = [ratio(by_side, m.key, name) for m in metrics]
            rows.append([group, label, *("n/a" if r is None else fmt_ratio(r) for r in ratios)])
    return rows


def ratio_target(description: str, value: float | None, limit: float) -> Target:
    """Build a target of the form "ratio <= limit"."""
    if value is None:
        return Target(description, None, NOT_MEASURED)
    return Target(description, value <= limit, f"ratio {fmt_ratio(value)} (limit {limit:g})")


def reported_target(description: str, value: float | None) -> Target:
    """Build a target without a limit: the ratio is reported, not judged."""
    if value is None:
        return Target(description, None, NOT_MEASURED)
    return Target(description, None, f"ratio {fmt_ratio(value)} (no limit)", reported=True)


def skipped_row(group: str, reason: str, cells: int) -> list[str]:
    """A table row saying that ``group`` (a backend) was skipped, and why."""
    return [group, f"skipped: {reason}", *([""] * cells)]


def skipped_target(description: str, reason: str) -> Target:
    """A target not evaluated because its backend was skipped."""
    return Target(description, None, f"skipped: {reason}")


def _table_md(table: Table) -> list[str]:
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    return [*lines, ""]


DESIGN_CHOICES = Path(__file__).with_name("design_choices.md")


def render(results: Sequence[CaseResult], header: Sequence[str], missing: dict[str, str]) -> str:
    """Render the whole BENCHMARKS.md document: the run's results, then the design choices
    measured by hand (`design_choices.md`), which no run measures."""
    lines = ["# Benchmarks: Holdpoint vs LangGraph", "", *header, ""]
    for name, reason in missing.items():
        lines += [f"**{name} was not available**: `{reason}`", ""]
    summary = Table(["benchmark", "target", "result", "met"])
    for case in results:
        for target in case.targets:
            verdict = f"**{target.verdict}**" if target.met is False else target.verdict
            summary.rows.append([case.title, target.description, target.detail, verdict])
    lines += ["## Targets", "", *_table_md(summary)]
    for case in results:
        lines += [f"## {case.title}", "", case.method, ""]
        for table in case.tables:
            lines += _table_md(table)
        for error in case.errors:
            lines += ["Error:", "", "```", error.rstrip(), "```", ""]
    lines += ["", DESIGN_CHOICES.read_text(encoding="utf-8")]
    return "\n".join(lines).rstrip() + "\n"


def write_report(
    path: Path,
    results: Sequence[CaseResult],
    header: Sequence[str],
    missing: dict[str, str],
) -> None:
    """Write (overwrite) the markdown report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(results, header, missing), encoding="utf-8")
