"""The oversight report's SQL counts what a row-by-row count of the same rows gives.

The report groups and counts in the database. Here the oversight log is filled
directly (as the benchmark does) with generated rows, among them the values
where a filter could be off by one: times to decision on the bucket edges and
the rubber-stamp floor, reviewers missing or empty, interrupts raised exactly a
bucket's age before `now`, periods that start and end mid-day. Each report is
compared, figure by figure, with the same figures counted in Python, one row at
a time, as the report did before it counted in SQL.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter, defaultdict
from dataclasses import astuple, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from projections.catalog import runner_for
from projections.oversight import CANCELLATIONS, INTERRUPTS
from projections.oversight_report import oversight_report
from projections.timestamps import utc_text

BASE = datetime(2025, 3, 3, 5, 30, tzinfo=UTC)
KINDS = ("approve", "reject", "edit", "respond", "escalate", "expired")
EDGES = (0, 10, 30, 60, 300, 900, 3600, 14400, 86400, None)
TRICKY_SECONDS = (0.0, 9.5, 9.999999, 10.0, 10.000001, 30.0, 60.0, 299.999999, 3600.0, 86400.0)
AGES = ((3600, "under 1 h"), (4 * 3600, "1-4 h"), (86400, "4-24 h"), (7 * 86400, "1-7 days"))


@dataclass
class Row:
    """One row of the oversight log; the fields are its columns."""

    interrupt_id: str
    thread_id: str
    graph_id: str
    raised_at: str
    due_by: str | None
    escalations: int
    outcome: str
    node: str = "review"
    idx: int = 0
    required_role: str | None = "reviewer"
    closed_at: str | None = None
    decision: str | None = None
    reviewer_id: str | None = None
    reviewer_role: str | None = None
    reason: str | None = None
    seconds_to_decision: float | None = None


def generated(count: int, seed: int) -> tuple[list[Row], list[tuple[Any, ...]]]:
    rng = random.Random(seed)
    rows, stops = [], []
    for n in range(count):
        raised = BASE + timedelta(microseconds=rng.randrange(6 * 86_400 * 10**6))
        outcome = rng.choices(
            ["decided", "expired", "cancelled", "superseded", "open"], [12, 2, 2, 1, 3]
        )[0]
        seconds = (
            rng.choice(TRICKY_SECONDS)
            if rng.random() < 0.3
            else round(10 ** rng.uniform(-1, 5.2), 6)
        )
        closed = raised + timedelta(seconds=seconds)
        due = utc_text(raised + timedelta(hours=1)) if rng.random() < 0.5 else None
        graph, escalations = rng.choice(["g1", "g2", "g3"]), rng.choice([0, 0, 0, 1])
        row = Row(f"i{n:05d}", f"t{n:05d}", graph, utc_text(raised), due, escalations, outcome)
        if outcome == "decided":
            row.decision = rng.choice(KINDS[:5])
            row.reviewer_id = rng.choice(["alice", "bob", "carol", None, ""])
        elif outcome == "expired":
            row.decision = "expired"
        if outcome in ("decided", "expired"):
            row.closed_at, row.seconds_to_decision = utc_text(closed), seconds
        elif outcome in ("cancelled", "superseded"):
            row.closed_at = utc_text(closed)
        if outcome == "cancelled":
            stops.append((row.thread_id, row.graph_id, row.closed_at, "ops", "admin", f"stop {n}"))
        rows.append(row)
    return rows, stops


def counted(rows: list[Row], stops: list[tuple[Any, ...]], **params: Any) -> dict[str, Any]:
    """The report's figures, `how`s aside, counted one row at a time."""
    start, end = utc_text(params["since"]), utc_text(params["until"])
    graph, floor, now = params.get("graph_id"), params["rubber_stamp_seconds"], params["now"]
    mine = [r for r in rows if graph is None or r.graph_id == graph]
    raised = [r for r in mine if start <= r.raised_at < end]
    decided = [
        r
        for r in mine
        if r.outcome in ("decided", "expired") and r.closed_at and start <= r.closed_at < end
    ]
    human = [r for r in decided if r.decision != "expired"]
    seconds = sorted(r.seconds_to_decision for r in human if r.seconds_to_decision is not None)
    per_reviewer: dict[str, Counter[str]] = defaultdict(Counter)
    per_graph: dict[str, Counter[str]] = defaultdict(Counter)
    per_day: dict[str, Counter[str]] = defaultdict(Counter)
    for r in decided:
        per_day[str(r.closed_at)[:10]][str(r.decision)] += 1
    for r in human:
        per_reviewer[r.reviewer_id or "unknown"][str(r.decision)] += 1
        per_graph[r.graph_id][str(r.decision)] += 1
    fast = Counter(
        r.reviewer_id or "unknown"
        for r in human
        if r.seconds_to_decision is not None and r.seconds_to_decision < floor
    )

    def rate(part: int, whole: int) -> float | None:
        return None if whole == 0 else round(part / whole, 4)

    def overrides(c: Counter[str]) -> int:
        return c["reject"] + c["edit"]

    outcomes = Counter(r.outcome for r in raised)
    open_ages = [
        (now - datetime.fromisoformat(r.raised_at)).total_seconds()
        for r in mine
        if r.outcome == "open"
    ]
    backlog = dict.fromkeys([name for _, name in AGES] + ["over 7 days"], 0)
    for age in open_ages:
        backlog[next((name for limit, name in AGES if age < limit), "over 7 days")] += 1
    return {
        "interrupts_raised": {"value": len(raised)},
        "decisions": {
            "value": len(decided),
            "by_kind": {k: sum(r.decision == k for r in decided) for k in KINDS},
            "by_reviewer": {
                name: {k: c[k] for k in KINDS} | {"total": c.total()}
                for name, c in sorted(per_reviewer.items())
            },
            "by_day": {day: {k: c[k] for k in KINDS} for day, c in sorted(per_day.items())},
        },
        "time_to_decision_seconds": {
            "median": round(statistics.median(seconds), 3) if seconds else None,
            "p90": round(seconds[max(math.ceil(0.9 * len(seconds)) - 1, 0)], 3)
            if seconds
            else None,
            "max": round(max(seconds), 3) if seconds else None,
            "histogram": [
                {
                    "from": lo,
                    "to": hi,
                    "count": sum(lo <= s and (hi is None or s < hi) for s in seconds),
                }
                for lo, hi in itertools.pairwise(EDGES)
            ],
        },
        "fast_decisions": {"value": fast.total(), "by_reviewer": dict(sorted(fast.items()))},
        "override_rate": {
            "value": rate(sum(overrides(c) for c in per_reviewer.values()), len(human)),
            "by_reviewer": {
                n: rate(overrides(c), c.total()) for n, c in sorted(per_reviewer.items())
            },
            "by_graph": {n: rate(overrides(c), c.total()) for n, c in sorted(per_graph.items())},
        },
        "deadline_breaches": {
            "value": sum(
                r.due_by is not None
                and (
                    r.outcome == "expired"
                    or r.escalations > 0
                    or (r.closed_at is not None and r.closed_at > r.due_by)
                    or (r.outcome == "open" and r.due_by < utc_text(now))
                )
                for r in raised
            )
        },
        "cancellations": {
            "value": sum(1 for s in stops if start <= s[2] < end and graph in (None, s[1])),
            "threads": [
                {"thread_id": t, "graph_id": g, "at": at, "by": by, "reason": why}
                for t, g, at, by, _, why in sorted(stops, key=lambda s: s[2])
                if start <= at < end and graph in (None, g)
            ],
        },
        "backlog": {"value": len(open_ages), "by_age": backlog},
        "coverage": {
            "raised": len(raised),
            **{o: outcomes[o] for o in ("decided", "cancelled", "expired", "superseded", "open")},
            "accounted_for": True,
        },
    }


@pytest.fixture(scope="module")
def history() -> tuple[list[Row], list[tuple[Any, ...]]]:
    return generated(600, seed=14)


@pytest.fixture
def db(store, history):
    rows, stops = history
    runner = runner_for(store)
    columns = ", ".join(Row.__dataclass_fields__)
    with runner.db.transaction() as cursor:
        cursor.executemany(
            f"INSERT INTO {runner.db.table(INTERRUPTS)} ({columns}) "
            f"VALUES ({', '.join(['%s'] * 16)})",
            [astuple(row) for row in rows],
        )
        cursor.executemany(
            f"INSERT INTO {runner.db.table(CANCELLATIONS)} (thread_id, graph_id, cancelled_at, "
            "actor_id, actor_role, reason) VALUES (%s, %s, %s, %s, %s, %s)",
            stops,
        )
    yield runner.db
    runner.close()


def an_open_row_raised(rows: list[Row], index: int) -> datetime:
    return datetime.fromisoformat([r for r in rows if r.outcome == "open"][index].raised_at)


MID_DAY = {"since": BASE + timedelta(hours=30, seconds=0.5), "until": BASE + timedelta(days=3)}
CASES = {
    "the whole history": {},
    "one graph": {"graph_id": "g2"},
    "a graph with nothing": {"graph_id": "nope"},
    "mid-day to mid-day": MID_DAY,
    "an empty period": {"since": BASE - timedelta(days=2), "until": BASE - timedelta(days=1)},
    "a floor between buckets": {"rubber_stamp_seconds": 45.0},
    "a floor on a value": {"rubber_stamp_seconds": 9.999999},
}
AGE_CASES = {"an hour after": 3600, "four hours after": 4 * 3600, "a week after": 7 * 86400}


def check(db: Any, history: tuple[list[Row], list[tuple[Any, ...]]], **case: Any) -> None:
    params = {
        "since": BASE - timedelta(days=1),
        "until": BASE + timedelta(days=8),
        "rubber_stamp_seconds": 10.0,
        "now": BASE + timedelta(days=9),
    } | case
    full = oversight_report(db, **params)
    figures = {
        k: {n: v for n, v in s.items() if n != "how"} for k, s in full.items() if k != "period"
    }
    assert figures == counted(*history, **params)


@pytest.mark.parametrize("case", CASES)
def test_the_report_counts_what_the_rows_say(db, history, case):
    check(db, history, **CASES[case])


@pytest.mark.parametrize("age", AGE_CASES)
def test_the_backlog_ages_are_cut_where_the_rows_say(db, history, age):
    # `now` exactly a bucket's limit after an open interrupt was raised: it is in the older bucket.
    check(db, history, now=an_open_row_raised(history[0], 3) + timedelta(seconds=AGE_CASES[age]))


def test_an_interrupt_with_no_known_outcome_is_not_accounted_for(db, history):
    # Given one more interrupt in the period whose outcome is none the report knows
    lost = Row("lost-1", "t-lost", "g1", utc_text(BASE + timedelta(hours=1)), None, 0, "vanished")
    with db.transaction() as cursor:
        columns = ", ".join(Row.__dataclass_fields__)
        cursor.execute(
            f"INSERT INTO {db.table(INTERRUPTS)} ({columns}) VALUES ({', '.join(['%s'] * 16)})",
            astuple(lost),
        )

    # When
    coverage = oversight_report(db, since=BASE - timedelta(days=1), until=BASE + timedelta(days=8))[
        "coverage"
    ]

    # Then
    known = ("decided", "expired", "cancelled", "superseded", "open")
    assert coverage["raised"] == sum(coverage[name] for name in known) + 1
    assert coverage["accounted_for"] is False
