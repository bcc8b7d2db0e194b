"""The interrupts or threads behind a count of the oversight report: the dashboard's
drill-down. Each list reads the table its figure counts, with the condition the figure
counts by (`projections.oversight_report`'s RAISED, BREACHED, FAST, OPEN and the
scope's `decided`; cancellations: `cancelled_threads`'s period and graph), so a count and
its list cannot come to differ. Some figures are split on the dashboard (`PARTS`: decisions
by reviewer, interrupts by outcome), each part with its own list. Lists are read a page at a
time, by keyset (`projections.paging`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from projections.database import Database
from projections.oversight_report import (
    AGE_BUCKETS,
    BREACHED,
    COVERAGE,
    DECISION_KINDS,
    FAST,
    HUMAN,
    OLDEST,
    OPEN,
    RAISED,
    RUBBER_STAMP_SECONDS,
)
from projections.paging import KeysetPage, keyset_page
from projections.report_scope import ReportScope
from projections.timestamps import utc_text

# The keyset's two columns first (projections/paging.py), then the rest a row shows.
INTERRUPT_COLUMNS = (
    "raised_at",
    "interrupt_id",
    "thread_id",
    "graph_id",
    "node",
    "due_by",
    "outcome",
    "closed_at",
    "decision",
    "reviewer_id",
    "seconds_to_decision",
)
CANCELLATION_COLUMNS = ("cancelled_at", "thread_id", "graph_id", "actor_id", "reason")
PAGE_SIZE = 50
Condition = Callable[[ReportScope, str], tuple[str, list[Any]]]


@dataclass(frozen=True)
class Figure:
    """A count of the report that has a list: its label, where the report keeps the count,
    and the condition (SQL and parameters) on the interrupt log; none for cancellations."""

    label: str
    path: tuple[str, ...]
    condition: Condition | None


def _raised(scope: ReportScope, _now: str) -> tuple[str, list[Any]]:
    return f"{RAISED}{scope.graph}", scope.period_params


def _breached(scope: ReportScope, now: str) -> tuple[str, list[Any]]:
    return f"{RAISED}{scope.graph} AND {BREACHED}", [*scope.period_params, now]


def _decided(scope: ReportScope, _now: str) -> tuple[str, list[Any]]:
    return scope.decided, scope.decided_params


def _decided_as(kind: str) -> Condition:
    def condition(scope: ReportScope, _now: str) -> tuple[str, list[Any]]:
        return f"{scope.decided} AND decision = %s", [*scope.decided_params, kind]

    return condition


def _fast(scope: ReportScope, _now: str) -> tuple[str, list[Any]]:
    where = f"{scope.decided} AND {HUMAN} AND {FAST}"
    return where, [*scope.decided_params, RUBBER_STAMP_SECONDS]


def _open(scope: ReportScope, _now: str) -> tuple[str, list[Any]]:
    return f"{OPEN}{scope.graph}", scope.graph_params


FIGURES: dict[str, Figure] = {
    "interrupts_raised": Figure("Interrupts raised", ("interrupts_raised",), _raised),
    "decisions": Figure("Decisions", ("decisions",), _decided),
    **{
        f"decisions_{kind}": Figure(
            f"Decisions: {kind}", ("decisions", "by_kind", kind), _decided_as(kind)
        )
        for kind in DECISION_KINDS
    },
    "fast_decisions": Figure("Fast decisions", ("fast_decisions",), _fast),
    "deadline_breaches": Figure("Deadline breaches", ("deadline_breaches",), _breached),
    "cancellations": Figure("Cancellations", ("cancellations",), None),
    "backlog": Figure("Open now (backlog)", ("backlog",), _open),
}


def count_of(report: dict[str, Any], name: str) -> int:
    """The figure's count, as the report gives it."""
    value: Any = report
    for key in FIGURES[name].path:
        value = value[key]
    return int(value["value"] if isinstance(value, dict) else value)


class UnknownPartError(ValueError):
    """A part of a figure that it has no count for."""


PartCondition = Callable[[str, datetime], tuple[str, list[Any]]]


@dataclass(frozen=True)
class Part:
    """The counts a figure is split into on the dashboard (one reviewer's, one outcome's,
    one age's): the query parameter naming one, where the report keeps each count, and
    the condition on the interrupt log that selects one part's rows (given the report's
    `now`)."""

    param: str
    label: str
    counts: Callable[[dict[str, Any]], dict[str, int]]
    condition: PartCondition
    known: tuple[str, ...] = ()  # the only values it takes, if limited


def _by_reviewer(value: str, _now: datetime) -> tuple[str, list[Any]]:
    return f"{HUMAN} AND COALESCE(reviewer_id, 'unknown') = %s", [value]


def _by_outcome(value: str, _now: datetime) -> tuple[str, list[Any]]:
    return "outcome = %s", [value]


AGES = (*(label for _, label in AGE_BUCKETS), OLDEST)


def _by_age(value: str, now: datetime) -> tuple[str, list[Any]]:
    """Raised within the bucket's limit of `now` and not within the one's before it (the
    report's `_backlog`, which counts raised_at > now - limit)."""
    limits = [seconds for seconds, _ in AGE_BUCKETS]
    index = AGES.index(value)
    where, params = [], []
    if index < len(limits):
        where.append("raised_at > %s")
        params.append(utc_text(now - timedelta(seconds=limits[index])))
    if index > 0:
        where.append("raised_at <= %s")
        params.append(utc_text(now - timedelta(seconds=limits[index - 1])))
    return " AND ".join(where), params


def _reviewers_of(kind: str | None) -> Callable[[dict[str, Any]], dict[str, int]]:
    def counts(report: dict[str, Any]) -> dict[str, int]:
        by_reviewer = report["decisions"]["by_reviewer"]
        return {name: int(kinds[kind or "total"]) for name, kinds in by_reviewer.items()}

    return counts


PARTS: dict[str, Part] = {
    "decisions": Part("reviewer", "by reviewer", _reviewers_of(None), _by_reviewer),
    **{
        f"decisions_{kind}": Part("reviewer", "by reviewer", _reviewers_of(kind), _by_reviewer)
        for kind in DECISION_KINDS
        if kind != "expired"  # nobody's
    },
    "fast_decisions": Part(
        "reviewer",
        "by reviewer",
        lambda report: dict(report["fast_decisions"]["by_reviewer"]),
        _by_reviewer,
    ),
    "interrupts_raised": Part(
        "outcome",
        "by outcome",
        lambda report: {outcome: int(report["coverage"][outcome]) for outcome in COVERAGE},
        _by_outcome,
        COVERAGE,
    ),
    "backlog": Part(
        "age",
        "by age",
        lambda report: dict(report["backlog"]["by_age"]),
        _by_age,
        AGES,
    ),
}


def parts_of(report: dict[str, Any], name: str) -> list[tuple[str, int]]:
    """The figure's parts that count something, as the report gives them (none if unsplit)."""
    part = PARTS.get(name)
    return [] if part is None else [(k, n) for k, n in part.counts(report).items() if n]


def _part_condition(name: str, value: str | None, now: datetime) -> tuple[str, list[Any]]:
    part = PARTS.get(name)
    if value is None:
        return "", []
    if part is None or (part.known and value not in part.known):
        known = f": one of {', '.join(part.known)}" if part is not None and part.known else ""
        msg = f"Figure {name!r} has no part {value!r}{known}"
        raise UnknownPartError(msg)
    where, params = part.condition(value, now)
    return f" AND {where}", params


def figure_page(
    db: Database,
    name: str,
    *,
    since: datetime,
    until: datetime,
    graph_id: str | None,
    now: datetime,
    part: str | None = None,
    after: str | None = None,
    limit: int = PAGE_SIZE,
) -> KeysetPage:
    """One page of the rows the figure `name` (or its `part`) counts, for the period and
    graph, oldest first, after the cursor `after`; its total is the count's."""
    scope = ReportScope.of(db, utc_text(since), utc_text(until), graph_id)
    condition = FIGURES[name].condition
    columns: tuple[str, ...]
    if condition is None:
        where = f"cancelled_at >= %s AND cancelled_at < %s{scope.graph}"
        table, columns, params = scope.cancelled, CANCELLATION_COLUMNS, scope.period_params
    else:
        where, params = condition(scope, utc_text(now))
        table, columns = scope.log, INTERRUPT_COLUMNS
    extra, extra_params = _part_condition(name, part, now)
    page = keyset_page(
        db,
        table=table,
        columns=", ".join(columns),
        where=[where + extra],
        params=[*params, *extra_params],
        keys=(columns[0], columns[1]),
        descending=False,
        limit=limit,
        after=after,
    )
    rows = [dict(zip(columns, row, strict=True)) for row in page.rows]
    return KeysetPage(rows, page.total, page.next_cursor)


def figure_list(
    db: Database,
    name: str,
    *,
    since: datetime,
    until: datetime,
    graph_id: str | None,
    now: datetime,
    part: str | None = None,
) -> list[dict[str, Any]]:
    """Every row the figure `name` (or its `part`) counts, page after page."""
    rows: list[dict[str, Any]] = []
    after = None
    while True:
        page = figure_page(
            db, name, since=since, until=until, graph_id=graph_id, now=now, part=part, after=after
        )
        rows += page.rows
        after = page.next_cursor
        if after is None:
            return rows
