"""The Article 14 oversight report, computed from the oversight log.

Every figure carries `how`: how it is computed, in words, so the report
explains itself to an auditor. Interrupts count in the period they were
raised; decisions in the period they were made; the backlog is as of `now`.

The database does the counting: one aggregate query for each population (the
interrupts raised in the period, the decisions made in it, the open backlog)
returns one row, or one row per day, kind, reviewer and graph of decision. Read
row by row are only the seconds each human answer took, which the median, p90
and histogram need in order, and the cancellations, which the report lists.
The figures about hold points (re-asked questions, four eyes, edits that
decided the flow, refused bypasses) are `projections/hold_point_report.py`'s.
"""

from __future__ import annotations

import json
import math
import statistics
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from projections.database import Cursor, Database
from projections.hold_point_report import hold_point_figures, unapplied
from projections.read_records import read_figures
from projections.record_life import record_figures
from projections.report_scope import ReportScope
from projections.timestamps import utc_text

DECISION_KINDS = ("approve", "reject", "edit", "respond", "escalate", "expired")
OVERRIDES = ("reject", "edit")
OUTCOMES = ("decided", "expired", "cancelled", "superseded", "open")
COVERAGE = ("decided", "cancelled", "expired", "superseded", "open")  # the figure's order
AGE_BUCKETS = ((3600, "under 1 h"), (4 * 3600, "1-4 h"), (86400, "4-24 h"), (7 * 86400, "1-7 days"))
OLDEST = "over 7 days"  # the backlog's last age bucket, past AGE_BUCKETS
# Upper edges (seconds) of the time-to-decision histogram's buckets; a last bucket has none.
HISTOGRAM_EDGES = (
    (10, "10 s"),
    (30, "30 s"),
    (60, "1 min"),
    (300, "5 min"),
    (900, "15 min"),
    (3600, "1 h"),
    (4 * 3600, "4 h"),
    (86400, "24 h"),
)
RUBBER_STAMP_SECONDS = 10.0
# The conditions of the figures that have lists behind them (projections/report_lists.py
# reads the same rows with the same words): each %s is a parameter, in order.
RAISED = "raised_at >= %s AND raised_at < %s"  # the period's start and end
BREACHED = (  # the report's `now`
    "due_by IS NOT NULL AND (outcome = 'expired' OR escalations > 0 "
    "OR closed_at > due_by OR (outcome = 'open' AND due_by < %s))"
)
HUMAN = "decision <> 'expired'"
FAST = "seconds_to_decision < %s"  # the rubber-stamp floor
OPEN = "outcome = 'open'"


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile: the smallest value with `fraction` of values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)]


def _rate(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 4)


def oversight_report(
    db: Database,
    *,
    since: datetime,
    until: datetime,
    graph_id: str | None = None,
    rubber_stamp_seconds: float = RUBBER_STAMP_SECONDS,
    now: datetime | None = None,
) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    scope = ReportScope.of(db, utc_text(since), utc_text(until), graph_id)
    with db.transaction(write=False) as cursor:
        raised, outcomes, breaches = _raised(cursor, scope, now)
        groups = _decision_groups(cursor, scope, rubber_stamp_seconds)
        seconds = _human_seconds(cursor, scope)
        cancellations = cancelled_threads(cursor, scope)
        hold_points = hold_point_figures(cursor, scope)
        backlog = _backlog(cursor, scope, now)
        ran_past = unapplied(cursor, scope)
        reviewed = _reviewed_actions(cursor, scope)
        reads = read_figures(cursor, db, scope.start, scope.end, graph_id)
    record = record_figures(db, scope.start, scope.end)
    return {
        "period": {
            "since": scope.start,
            "until": scope.end,
            "graph_id": graph_id,
            "generated_at": utc_text(now),
            "rubber_stamp_seconds": rubber_stamp_seconds,
        },
        "interrupts_raised": {
            "value": raised,
            "how": "interrupts raised in the period",
        },
        **_decision_figures(groups, seconds, rubber_stamp_seconds),
        "deadline_breaches": {
            "value": breaches,
            "how": "interrupts raised in the period whose deadline passed: expired, "
            "escalated, answered late, or still open past it at generated_at",
        },
        "cancellations": {
            "value": len(cancellations),
            "threads": [
                {"thread_id": t, "graph_id": g, "at": at, "by": actor, "reason": reason}
                for t, g, at, actor, reason in cancellations
            ],
            "how": "threads stopped (Art. 14(4)(e)) in the period, with who and why",
        },
        **hold_points,
        "reviewed_actions": reviewed,
        "backlog": backlog,
        "reads": reads,
        **record,
        "coverage": {
            "raised": raised,
            **{name: outcomes[name] for name in COVERAGE},
            "unapplied": ran_past,
            "accounted_for": raised == sum(outcomes.values()) and ran_past == 0,
            "how": (
                "each interrupt raised in the period is decided, expired (its deadline's rule "
                "decided it), cancelled with its thread, superseded (its node asked again) "
                "or still open; unapplied: those whose node ran past them without applying "
                "an answer to the question they asked (open, or decided and the answer not "
                "received with the question's digest); accounted_for: every one has one of "
                "those outcomes, and none is unapplied"
            ),
        },
    }


def _reviewed_actions(cursor: Cursor, scope: ReportScope) -> dict[str, Any]:
    """The agents' tool calls put to a reviewer and decided in the period: each action's
    decision, by kind and by tool, and how many were edited."""
    cursor.execute(
        f"SELECT actions FROM {scope.log} WHERE {scope.decided} AND actions IS NOT NULL",
        scope.decided_params,
    )
    by_kind: Counter[str] = Counter()
    by_tool: dict[str, Counter[str]] = {}
    edited = 0
    for (text,) in cursor.fetchall():
        for action in json.loads(text)["actions"]:
            kind = action.get("decision")
            if kind is None:
                continue
            by_kind[kind] += 1
            by_tool.setdefault(str(action["name"]), Counter())[kind] += 1
            edited += bool(action.get("edited"))
    return {
        "value": sum(by_kind.values()),
        "by_decision": dict(sorted(by_kind.items())),
        "by_tool": {tool: dict(sorted(kinds.items())) for tool, kinds in sorted(by_tool.items())},
        "edited": edited,
        "how": "the actions (an agent's tool calls) of reviews answered in the period, each "
        "with its own decision (approve, edit, reject, respond), by kind and by tool; "
        "edited: those run with the arguments a reviewer put in place of the agent's",
    }


def _raised(cursor: Cursor, scope: ReportScope, now: datetime) -> tuple[int, dict[str, int], int]:
    """Interrupts raised in the period: how many, how many of each outcome, how many breached."""
    per_outcome = ", ".join(f"COUNT(*) FILTER (WHERE outcome = '{name}')" for name in OUTCOMES)
    cursor.execute(
        f"SELECT COUNT(*), {per_outcome}, COUNT(*) FILTER (WHERE {BREACHED}) "
        f"FROM {scope.log} WHERE {RAISED}{scope.graph}",
        [utc_text(now), scope.start, scope.end, *scope.graph_params],
    )
    raised, *counts, breaches = (int(n) for n in cursor.fetchone())
    return raised, dict(zip(OUTCOMES, counts, strict=True)), breaches


def _decision_groups(cursor: Cursor, scope: ReportScope, floor: float) -> list[Any]:
    """(UTC day, kind, reviewer, graph, decisions, of which faster than `floor`) for the period."""
    cursor.execute(
        "SELECT substr(closed_at, 1, 10), decision, reviewer_id, graph_id, COUNT(*), "
        f"COUNT(*) FILTER (WHERE {FAST}) "
        f"FROM {scope.log} WHERE {scope.decided} GROUP BY 1, 2, 3, 4",
        [floor, *scope.decided_params],
    )
    return cursor.fetchall()


def _human_seconds(cursor: Cursor, scope: ReportScope) -> list[float]:
    """Seconds to decide, of each human answer in the period, in ascending order."""
    cursor.execute(
        f"SELECT seconds_to_decision FROM {scope.log} WHERE {scope.decided} "
        "AND decision <> 'expired' AND seconds_to_decision IS NOT NULL",
        scope.decided_params,
    )
    # Sorted here: Python sorts a column of floats faster than SQLite's sorter does.
    return sorted([row[0] for row in cursor.fetchall()])


def cancelled_threads(cursor: Cursor, scope: ReportScope) -> list[Any]:
    """(thread, graph, when, by, reason) of the threads cancelled in the period."""
    cursor.execute(
        f"SELECT thread_id, graph_id, cancelled_at, actor_id, reason FROM {scope.cancelled} "
        f"WHERE cancelled_at >= %s AND cancelled_at < %s{scope.graph} ORDER BY cancelled_at",
        [scope.start, scope.end, *scope.graph_params],
    )
    return cursor.fetchall()


def _decision_figures(groups: list[Any], seconds: list[float], floor: float) -> dict[str, Any]:
    """Figures over decisions; expiries count as decisions of kind 'expired' but
    are nobody's: reviewer figures, speed and override rates read human answers."""
    by_kind: Counter[str] = Counter()
    by_day: dict[str, Counter[str]] = defaultdict(Counter)
    per_reviewer: dict[str, Counter[str]] = defaultdict(Counter)
    per_graph: dict[str, Counter[str]] = defaultdict(Counter)
    fast: Counter[str] = Counter()
    for day, decision, reviewer, graph, count, quick in groups:
        by_kind[decision] += count
        by_day[day][decision] += count
        if decision == "expired":
            continue
        per_reviewer[reviewer or "unknown"][decision] += count
        per_graph[graph][decision] += count
        if quick:
            fast[reviewer or "unknown"] += quick
    human = sum(sum(c.values()) for c in per_reviewer.values())
    overrides = sum(by_kind[kind] for kind in OVERRIDES)

    def override_rates(named: dict[str, Counter[str]]) -> dict[str, float | None]:
        return {
            name: _rate(sum(c[k] for k in OVERRIDES), sum(c.values()))
            for name, c in sorted(named.items())
        }

    return {
        "decisions": {
            "value": sum(by_kind.values()),
            "by_kind": {kind: by_kind.get(kind, 0) for kind in DECISION_KINDS},
            "by_reviewer": {
                name: {kind: c.get(kind, 0) for kind in DECISION_KINDS} | {"total": sum(c.values())}
                for name, c in sorted(per_reviewer.items())
            },
            "by_day": {
                day: {kind: c.get(kind, 0) for kind in DECISION_KINDS}
                for day, c in sorted(by_day.items())
            },
            "how": "human answers (InterruptResumed) by kind and reviewer, plus expiries "
            "(InterruptExpired, kind 'expired', no reviewer), recorded in the period; "
            "by_day: both by UTC day and kind, days without decisions left out",
        },
        "time_to_decision_seconds": {
            "median": None if not seconds else round(statistics.median(seconds), 3),
            "p90": None if not seconds else round(percentile(seconds, 0.9) or 0.0, 3),
            "max": None if not seconds else round(seconds[-1], 3),
            "histogram": _histogram(seconds),
            "how": "seconds from InterruptRaised to InterruptResumed, for human answers in "
            "the period; p90 by nearest rank; histogram: those answers counted by time "
            "taken, from <= seconds < to (to null: no limit), bucket edges "
            f"{', '.join(label for _, label in HISTOGRAM_EDGES)}; the page's chart marks "
            f"the rubber-stamp floor ({floor:g} s) on it",
        },
        "fast_decisions": {
            "value": sum(fast.values()),
            "by_reviewer": dict(sorted(fast.items())),
            "how": f"human answers given less than {floor:g} s after the interrupt was "
            "raised: possible rubber-stamping (automation bias, Art. 14(4)(b))",
        },
        "override_rate": {
            "value": _rate(overrides, human),
            "by_reviewer": override_rates(per_reviewer),
            "by_graph": override_rates(per_graph),
            "how": "(reject + edit) / human answers in the period",
        },
    }


def _histogram(ordered: Sequence[float]) -> list[dict[str, Any]]:
    """Sorted seconds counted into the buckets HISTOGRAM_EDGES bound."""
    edges: list[int | None] = [0, *(edge for edge, _ in HISTOGRAM_EDGES), None]
    below = [0, *(bisect_left(ordered, edge) for edge, _ in HISTOGRAM_EDGES), len(ordered)]
    return [
        {"from": edges[i], "to": edges[i + 1], "count": below[i + 1] - below[i]}
        for i in range(len(edges) - 1)
    ]


def _backlog(cursor: Cursor, scope: ReportScope, now: datetime) -> dict[str, Any]:
    """Open interrupts by age at `now`: text order is time order, so the database compares
    each raised_at with `now` less each bucket's limit."""
    younger = [utc_text(now - timedelta(seconds=limit)) for limit, _ in AGE_BUCKETS]
    younger_than = ", ".join("COUNT(*) FILTER (WHERE raised_at > %s)" for _ in younger)
    cursor.execute(
        f"SELECT COUNT(*), {younger_than} FROM {scope.log} WHERE {OPEN}{scope.graph}",
        [*younger, *scope.graph_params],
    )
    total, *younger_counts = (int(n) for n in cursor.fetchone())
    labels = [label for _, label in AGE_BUCKETS] + [OLDEST]
    cumulative = [*younger_counts, total]
    counts = [b - a for a, b in zip([0, *cumulative], cumulative, strict=False)]
    return {
        "value": total,
        "by_age": dict(zip(labels, counts, strict=True)),
        "how": "interrupts still open at generated_at, by age",
    }
