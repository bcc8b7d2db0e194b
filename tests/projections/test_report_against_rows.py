"""The oversight report's SQL counts what a row-by-row count of the same rows gives.

The report groups and counts in the database. Here the oversight log is filled
directly (as the benchmark does) with generated rows, among them the values
where a filter could be off by one: times to decision on the bucket edges and
the rubber-stamp floor, reviewers missing or empty, interrupts raised exactly a
bucket's age before `now`, periods that start and end mid-day. Each report is
compared, figure by figure, with the same figures counted in Python, one row at
a time, as the report did before it counted in SQL. The hold points' figures
too: the rows' digests, approvals, re-asks and applied answers, and generated
flow edits and refused attempts, whose targets are threads, interrupts, or
nothing the log knows.
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

from domain.oversight.read_log import READ_KINDS
from projections.catalog import runner_for
from projections.oversight_report import oversight_report
from projections.oversight_tables import CANCELLATIONS, FLOW_EDITS, INTERRUPTS, REFUSALS
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
    digest: str | None = None
    approvals_needed: int = 1
    approvals_given: int = 0
    reasked: str | None = None
    applied: str | None = None


COLUMNS = ", ".join(Row.__dataclass_fields__)
MARKS = ", ".join(["%s"] * len(Row.__dataclass_fields__))
REFUSAL_REASONS = ("hold_point", "hold_point", "four_eyes", "question_changed")


@dataclass
class History:
    rows: list[Row]
    stops: list[tuple[Any, ...]]
    edits: list[tuple[Any, ...]]  # (position, thread, graph, at, actor, role, as_node, reason)
    refusals: list[tuple[Any, ...]]  # (position, at, principal, role, reason, action, target)


def generated(count: int, seed: int) -> History:
    rows, stops = generated_rows(count, seed)
    hold_points(rows, random.Random(seed + 1))  # its own draws: the rows above stay as they were
    return History(rows, stops, *flow_edits_and_refusals(rows, random.Random(seed + 2)))


def hold_points(rows: list[Row], rng: random.Random) -> None:
    """Digests, approvals (some four eyes), re-asks and what became of the answers."""
    for n, row in enumerate(rows):
        row.digest = f"sha256:{n:064x}"
        row.approvals_needed = rng.choice([1, 1, 1, 2, 3])
        if row.approvals_needed > 1 and row.decision not in (None, "expired"):
            row.decision = rng.choice(["approve", "approve", "reject"])
            row.approvals_given = rng.randrange(row.approvals_needed + 1)
        if n and rng.random() < 0.1:
            row.reasked = rows[rng.randrange(n)].interrupt_id
        if row.outcome in ("open", "decided", "expired"):
            row.applied = rng.choices([None, "applied", "unapplied", "reasked"], [4, 10, 1, 1])[0]


def flow_edits_and_refusals(
    rows: list[Row], rng: random.Random
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    edits, refusals = [], []
    for n in range(80):
        at = utc_text(BASE + timedelta(microseconds=rng.randrange(6 * 86_400 * 10**6)))
        row = rng.choice(rows)
        if n % 2:
            actor = rng.choice(["alice", "bob", None])
            edits.append((n, row.thread_id, row.graph_id, at, actor, "reviewer", "review", "why"))
        else:
            target = rng.choice([row.thread_id, row.interrupt_id, "not-in-the-log", None])
            principal = rng.choice(["mallory", "agent-7", None])
            reason = rng.choice(REFUSAL_REASONS)
            refusals.append((n, at, principal, "agent", reason, "update_state", target))
    return edits, refusals


def generated_rows(count: int, seed: int) -> tuple[list[Row], list[tuple[Any, ...]]]:
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


def counted(history: History, **params: Any) -> dict[str, Any]:
    """The report's figures, `how`s aside, counted one row at a time."""
    rows, stops = history.rows, history.stops
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
        **counted_hold_points(history, mine, raised, start, end, graph),
        # No row here is a review of tool calls (tests/api/http/test_agent_review.py counts them)
        "reviewed_actions": {"value": 0, "by_decision": {}, "by_tool": {}, "edited": 0},
        # No read is on record in these rows (tests/projections/test_read_records.py counts them)
        "reads": {
            "value": 0,
            "by_kind": dict.fromkeys(READ_KINDS, 0),
            "by_reader": {},
            "threads_with_payloads_read": 0,
        },
        # Nor any hold, incident or purge (tests/service/test_retention.py counts them)
        **{name: {"value": 0, "items": []} for name in ("legal_holds", "incidents", "purges")},
        "backlog": {"value": len(open_ages), "by_age": backlog},
        "coverage": {
            "raised": len(raised),
            **{o: outcomes[o] for o in ("decided", "cancelled", "expired", "superseded", "open")},
            "unapplied": sum(r.applied == "unapplied" for r in raised),
            "accounted_for": not any(r.applied == "unapplied" for r in raised),
        },
    }


def counted_hold_points(
    history: History, mine: list[Row], raised: list[Row], start: str, end: str, graph: str | None
) -> dict[str, Any]:
    """The hold points' figures, counted one row at a time."""
    four_eyes = [
        r
        for r in mine
        if r.approvals_needed > 1
        and r.outcome in ("decided", "expired")
        and r.closed_at
        and start <= r.closed_at < end
    ]
    graph_of = {r.thread_id: r.graph_id for r in history.rows}
    graph_of |= {r.interrupt_id: r.graph_id for r in history.rows}
    refused = Counter(
        (reason, principal or "unknown")
        for _, at, principal, _, reason, _, target in history.refusals
        if start <= at < end and (graph is None or graph_of.get(target) == graph)
    )
    edited = Counter(
        actor or "unknown"
        for _, _, g, at, actor, *_ in history.edits
        if start <= at < end and graph in (None, g)
    )
    reasks = sorted((r for r in raised if r.reasked), key=lambda r: (r.raised_at, r.interrupt_id))

    def of_reason(reason: str) -> int:
        return sum(n for (why, _), n in refused.items() if why == reason)

    return {
        "reasked": {
            "value": len(reasks),
            "pairs": [
                {
                    "interrupt_id": r.interrupt_id,
                    "reasks": r.reasked,
                    "thread_id": r.thread_id,
                    "node": r.node,
                    "raised_at": r.raised_at,
                }
                for r in reasks
            ],
            "stale_decisions_refused": of_reason("question_changed"),
        },
        "four_eyes": {
            "value": len(four_eyes),
            "approved": sum(
                r.decision == "approve" and r.approvals_given >= r.approvals_needed
                for r in four_eyes
            ),
            "approved_short": sum(
                r.decision == "approve" and r.approvals_given < r.approvals_needed
                for r in four_eyes
            ),
            "rejected": sum(r.decision == "reject" for r in four_eyes),
            "expired": sum(r.decision == "expired" for r in four_eyes),
            "approvals": sum(r.approvals_given for r in four_eyes),
            "repeat_approvals_refused": of_reason("four_eyes"),
        },
        "flow_edits": {"value": edited.total(), "by_reviewer": dict(sorted(edited.items()))},
        "bypass_attempts": {
            "value": of_reason("hold_point"),
            "by_principal": {
                p: n for (why, p), n in sorted(refused.items()) if why == "hold_point"
            },
        },
    }


@pytest.fixture(scope="module")
def history() -> History:
    return generated(600, seed=14)


@pytest.fixture
def db(store, history):
    runner = runner_for(store)
    db = runner.db
    with db.transaction() as cursor:
        cursor.executemany(
            f"INSERT INTO {db.table(INTERRUPTS)} ({COLUMNS}) VALUES ({MARKS})",
            [astuple(row) for row in history.rows],
        )
        cursor.executemany(
            f"INSERT INTO {db.table(CANCELLATIONS)} (thread_id, graph_id, cancelled_at, "
            "actor_id, actor_role, reason) VALUES (%s, %s, %s, %s, %s, %s)",
            history.stops,
        )
        cursor.executemany(
            f"INSERT INTO {db.table(FLOW_EDITS)} (position, thread_id, graph_id, at, actor_id, "
            "actor_role, as_node, reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            history.edits,
        )
        cursor.executemany(
            f"INSERT INTO {db.table(REFUSALS)} (position, at, principal_id, role, reason, "
            "action, target) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            history.refusals,
        )
    yield db
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


def check(db: Any, history: History, **case: Any) -> None:
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
    assert figures == counted(history, **params)


@pytest.mark.parametrize("case", CASES)
def test_the_report_counts_what_the_rows_say(db, history, case):
    check(db, history, **CASES[case])


@pytest.mark.parametrize("age", AGE_CASES)
def test_the_backlog_ages_are_cut_where_the_rows_say(db, history, age):
    # `now` exactly a bucket's limit after an open interrupt was raised: it is in the older bucket.
    check(db, history, now=an_open_row_raised(history.rows, 3) + timedelta(seconds=AGE_CASES[age]))


def test_an_interrupt_with_no_known_outcome_is_not_accounted_for(db, history):
    # Given one more interrupt in the period whose outcome is none the report knows
    lost = Row("lost-1", "t-lost", "g1", utc_text(BASE + timedelta(hours=1)), None, 0, "vanished")
    with db.transaction() as cursor:
        cursor.execute(
            f"INSERT INTO {db.table(INTERRUPTS)} ({COLUMNS}) VALUES ({MARKS})", astuple(lost)
        )

    # When
    coverage = oversight_report(db, since=BASE - timedelta(days=1), until=BASE + timedelta(days=8))[
        "coverage"
    ]

    # Then
    known = ("decided", "expired", "cancelled", "superseded", "open")
    assert coverage["raised"] == sum(coverage[name] for name in known) + 1
    assert coverage["accounted_for"] is False
