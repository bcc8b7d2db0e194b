"""The interrupts or threads behind a count of the oversight report: the dashboard's
drill-down. Each list reads the table its figure counts, with the condition the figure
counts by (`projections.oversight_report`'s RAISED, BREACHED, FAST, OPEN and the
scope's `decided`), so a count and its list cannot come to differ."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from projections.database import Database
from projections.oversight_report import (
    BREACHED,
    DECISION_KINDS,
    FAST,
    HUMAN,
    OPEN,
    RAISED,
    RUBBER_STAMP_SECONDS,
    cancelled_threads,
)
from projections.report_scope import ReportScope
from projections.timestamps import utc_text

INTERRUPT_COLUMNS = (
    "interrupt_id",
    "thread_id",
    "graph_id",
    "node",
    "raised_at",
    "due_by",
    "outcome",
    "closed_at",
    "decision",
    "reviewer_id",
    "seconds_to_decision",
)
CANCELLATION_COLUMNS = ("thread_id", "graph_id", "cancelled_at", "actor_id", "reason")
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


def figure_list(
    db: Database,
    name: str,
    *,
    since: datetime,
    until: datetime,
    graph_id: str | None,
    now: datetime,
) -> list[dict[str, Any]]:
    """The rows the figure `name` counts, for the period and graph, oldest first."""
    scope = ReportScope.of(db, utc_text(since), utc_text(until), graph_id)
    condition = FIGURES[name].condition
    with db.transaction(write=False) as cursor:
        if condition is None:
            return [
                dict(zip(CANCELLATION_COLUMNS, r, strict=True))
                for r in cancelled_threads(cursor, scope)
            ]
        where, params = condition(scope, utc_text(now))
        cursor.execute(
            f"SELECT {', '.join(INTERRUPT_COLUMNS)} FROM {scope.log} WHERE {where} "
            "ORDER BY raised_at, interrupt_id",
            params,
        )
        return [dict(zip(INTERRUPT_COLUMNS, row, strict=True)) for row in cursor.fetchall()]
