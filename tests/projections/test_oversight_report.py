"""The Article 14 oversight report against a recorded history with known answers.

The history is recorded here, through the public API, on every store kind:
four graphs, four reviewers, decisions of every kind, deadlines that expire,
are escalated, are met and are missed, two cancellations with reasons, an
open backlog, over eight days. Event timestamps come from
`datetime.now(UTC)` in `domain.record.thread`; the `clock` fixture replaces that
module's `datetime` with one whose `now()` reads a clock the test sets, so
every timestamp, and so every figure, is known. The expected figures below
are computed by hand, from the history, in the comments beside them.

Report period: 2025-03-03 00:00 to 2025-03-08 00:00 (UTC, end excluded);
the backlog as of 2025-03-08 12:00; rubber-stamp floor 10 s.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import operator
from datetime import UTC, datetime, timedelta
from html import escape
from html.parser import HTMLParser
from typing import Annotated, Any, TypedDict

import pytest

from domain.graph import END, START, StateGraph
from domain.oversight.read_log import READ_KINDS
from domain.types import Command, interrupt
from projections.catalog import runner_for
from projections.oversight_report import oversight_report
from projections.report_formats import to_csv, to_html, to_json
from tests.clock import Clock, set_clock


def at(day: int, hour: int = 0, minute: int = 0, second: float = 0.0) -> datetime:
    """A moment in March 2025, UTC."""
    return datetime(2025, 3, day, hour, minute, tzinfo=UTC) + timedelta(seconds=second)


SINCE, UNTIL, NOW, FLOOR = at(3), at(8), at(8, 12), 10.0
AGENT = {"id": "agent-7", "role": "agent"}
ADMIN = {"id": "ops-lead", "role": "admin"}
P3_REASON = "Supplier under investigation (fraud & AML <case 17>)"
C3_REASON = "Counterparty withdrew"


# -- the clock ---------------------------------------------------------------


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Events are stamped with `clock.now` (domain.record.thread's datetime.now replaced)."""
    return set_clock(monkeypatch, at(1))


# -- the graphs and the history ------------------------------------------------


class Item(TypedDict):
    item: str
    answers: Annotated[list, operator.add]


def ask_once(state: Item) -> dict[str, Any]:
    return {"answers": [interrupt({"approve": state["item"]})]}


def ask_twice(state: Item) -> dict[str, Any]:
    legal = interrupt({"legal sign-off": state["item"]})
    finance = interrupt({"finance sign-off": state["item"]})
    return {"answers": [legal, finance]}


class Wire(Item):
    on_expiry: str


def ask_within_an_hour(state: Wire) -> dict[str, Any]:
    answer = interrupt({"wire": state["item"]}, deadline=3600, on_expiry=state["on_expiry"])
    return {"answers": [answer]}


GRAPHS = {
    "refunds": (Item, ask_once),
    "payouts": (Item, ask_once),
    "contracts": (Item, ask_twice),
    "wires": (Wire, ask_within_an_hour),
}


class History:
    """Records threads through the public API, each event at a moment of our choosing."""

    def __init__(self, store: Any, clock: Clock) -> None:
        self.store, self.clock = store, clock
        self.graphs = {name: self._graph(name, *spec) for name, spec in GRAPHS.items()}
        self.graph_of: dict[str, str] = {}

    def _graph(self, name: str, state: type, node: Any) -> Any:
        builder = StateGraph(state)
        builder.add_node("review", node)
        builder.add_edge(START, "review")
        builder.add_edge("review", END)
        return builder.compile(checkpointer=self.store, name=name)

    def raise_(self, graph: str, thread_id: str, when: datetime, **extra: Any) -> None:
        self.clock.now, self.graph_of[thread_id] = when, graph
        config = {"configurable": {"thread_id": thread_id, "actor": AGENT}}
        result = self.graphs[graph].invoke({"item": thread_id, "answers": [], **extra}, config)
        assert "__interrupt__" in result

    def decide(
        self,
        thread_id: str,
        when: datetime,
        reviewer: str,
        decision: str,
        resume: Any = True,
        role: str = "reviewer",
    ) -> None:
        self.clock.now = when
        config = {
            "configurable": {
                "thread_id": thread_id,
                "actor": {"id": reviewer, "role": role},
                "decision": decision,
                "reason": f"{decision} by {reviewer}",
            }
        }
        self.graphs[self.graph_of[thread_id]].invoke(Command(resume=resume), config)

    def cancel(self, thread_id: str, when: datetime, reason: str) -> None:
        self.clock.now = when
        self.store.cancel(thread_id, ADMIN, reason)

    def expire(self, thread_id: str, when: datetime) -> None:
        """What the deadline worker does at `when`: apply the overdue interrupt's rule."""
        self.clock.now = when
        (interrupt_id,) = self.store.thread(thread_id).interrupts
        assert self.store.expire(thread_id, interrupt_id, when) is not None


def record_history(h: History) -> None:
    # Before the period: decided, cancelled, or (r-stale) still open.
    h.raise_("refunds", "r-old", at(2, 10))
    h.decide("r-old", at(2, 10, 5), "alice", "approve")
    h.raise_("payouts", "p-old", at(2, 9))
    h.cancel("p-old", at(2, 9, 5), "Duplicate request")
    h.raise_("refunds", "r-stale", at(1, 8))  # open: 7 d 4 h old at NOW
    # Raised before the period, decided in it: a decision, but not a raise, of the period.
    h.raise_("refunds", "r-cross", at(2, 23))
    h.decide("r-cross", at(3, 1), "bob", "reject", False)  # 7200 s
    # Day 1 (03-03).
    h.raise_("refunds", "r1", at(3, 9))
    h.decide("r1", at(3, 9, 0, 4), "alice", "approve")  # 4 s: fast
    h.raise_("refunds", "r2", at(3, 9, 10))
    h.decide("r2", at(3, 9, 10, 6), "alice", "approve")  # 6 s: fast
    h.raise_("payouts", "p1", at(3, 10))
    h.decide("p1", at(3, 10, 2), "bob", "reject", False)  # 120 s
    # Day 2 (03-04).
    h.raise_("payouts", "p2", at(4, 11))
    h.decide("p2", at(4, 11, 10), "bob", "edit", {"amount": 80})  # 600 s
    h.raise_("refunds", "r3", at(4, 12))
    h.decide("r3", at(4, 12, 0, 30), "carol", "respond", "ask for a receipt")  # 30 s
    h.raise_("refunds", "r4", at(4, 13))
    h.decide("r4", at(4, 13, 0, 2), "carol", "escalate", "to finance")  # 2 s: fast
    h.raise_("payouts", "p7", at(4, 15))  # open: 3 d 21 h old at NOW
    # Day 3 (03-05): two interrupts in one node; a stop.
    h.raise_("contracts", "c1", at(5, 8))
    h.decide("c1", at(5, 8, 1, 30), "alice", "approve")  # 90 s; the second is raised then
    h.decide("c1", at(5, 8, 2, 15), "carol", "reject", False)  # 45 s
    h.raise_("payouts", "p3", at(5, 9))
    h.cancel("p3", at(5, 9, 30), P3_REASON)
    h.raise_("refunds", "r5", at(5, 10))
    h.decide("r5", at(5, 10, 0, 10), "bob", "approve")  # exactly 10 s: not below the floor
    # Wires must be answered within the hour.
    h.raise_("wires", "w1", at(5, 12), on_expiry="reject")
    h.expire("w1", at(5, 13))  # 3600 s: decided "expired" by its rule, no reviewer; a breach
    h.raise_("wires", "w5", at(5, 14), on_expiry="escalate:manager")
    h.expire("w5", at(5, 15))  # escalated: still open, for a manager, due 16:00
    # 5400 s, before its new deadline; escalated to a manager, so decided by one
    h.decide("w5", at(5, 15, 30), "dave", "reject", False, role="manager")
    # Day 4 (03-06).
    h.raise_("contracts", "c2", at(6, 14))
    h.decide("c2", at(6, 14, 0, 9.5), "bob", "approve")  # 9.5 s: fast; the second stays open
    h.raise_("contracts", "c3", at(6, 9))
    h.cancel("c3", at(6, 17), C3_REASON)
    h.raise_("wires", "w2", at(6, 10), on_expiry="reject")
    h.decide("w2", at(6, 11, 30), "alice", "approve")  # 5400 s, half an hour late: a breach
    h.raise_("wires", "w3", at(6, 8), on_expiry="reject")
    h.decide("w3", at(6, 8, 0, 20), "carol", "approve")  # 20 s, in time
    # Day 5 (03-07): raised in the period, decided (r6) or open (p4, r8) after it.
    h.raise_("payouts", "p4", at(7, 20))  # open: 16 h
    h.raise_("refunds", "r8", at(7, 18))  # open: 18 h
    h.raise_("wires", "w4", at(7, 9), on_expiry="reject")  # open: 27 h, past due: a breach
    h.raise_("refunds", "r6", at(7, 23, 59, 50))
    h.decide("r6", at(8, 0, 0, 20), "alice", "approve")  # decided after the period ends
    # After the period: open, in the backlog only.
    h.raise_("refunds", "r7", at(8, 11, 30))  # 30 min
    h.raise_("payouts", "p5", at(8, 11))  # exactly 1 h
    h.raise_("payouts", "p6", at(8, 10))  # 2 h
    h.raise_("contracts", "c4", at(8, 2))  # 10 h


@pytest.fixture
def db(store, clock):
    record_history(History(store, clock))
    runner = runner_for(store)
    runner.catch_up()
    yield runner.db
    runner.close()


def report(db: Any, **overrides: Any) -> dict[str, Any]:
    params = {"since": SINCE, "until": UNTIL, "rubber_stamp_seconds": FLOOR, "now": NOW}
    return oversight_report(db, **(params | overrides))


def figures(full: dict[str, Any]) -> dict[str, Any]:
    """The report without its `how`s (checked on their own)."""
    return {k: {n: v for n, v in s.items() if n != "how"} for k, s in full.items()}


KINDS = ("approve", "reject", "edit", "respond", "escalate", "expired")


def kinds(**counts: int) -> dict[str, int]:
    return {k: counts.get(k, 0) for k in KINDS}


def reviewer(**counts: int) -> dict[str, int]:
    return kinds(**counts) | {"total": sum(counts.values())}


EDGES = (0, 10, 30, 60, 300, 900, 3600, 14400, 86400, None)  # seconds; None: no upper limit


def histogram(**counts: int) -> list[dict[str, Any]]:
    """The time-to-decision buckets, counts given by lower edge: histogram(s10=2) for 10-30 s."""
    return [
        {"from": low, "to": high, "count": counts.get(f"s{low}", 0)}
        for low, high in itertools.pairwise(EDGES)
    ]


def ages(under_1h: int = 0, h1_4: int = 0, h4_24: int = 0, d1_7: int = 0, over_7d: int = 0):
    counts = (under_1h, h1_4, h4_24, d1_7, over_7d)
    labels = ("under 1 h", "1-4 h", "4-24 h", "1-7 days", "over 7 days")
    return {"value": sum(counts), "by_age": dict(zip(labels, counts, strict=True))}


def coverage(raised: int, decided: int, expired: int, cancelled: int, open_: int) -> dict:
    return {
        "raised": raised,
        "decided": decided,
        "expired": expired,
        "cancelled": cancelled,
        "superseded": 0,
        "open": open_,
        "unapplied": 0,
        "accounted_for": True,
    }


# This history asks each question once, with one approver, and no one edits the flow or
# tries to get round a hold point (tests/projections/test_hold_point_report.py does).
QUIET_HOLD_POINTS = {
    "reasked": {"value": 0, "pairs": [], "stale_decisions_refused": 0},
    "four_eyes": {
        "value": 0,
        "approved": 0,
        "approved_short": 0,
        "rejected": 0,
        "expired": 0,
        "approvals": 0,
        "repeat_approvals_refused": 0,
    },
    "flow_edits": {"value": 0, "by_reviewer": {}},
    "bypass_attempts": {"value": 0, "by_principal": {}},
}


def cancellation(thread: str, graph: str, when: str, reason: str) -> dict[str, Any]:
    return {"thread_id": thread, "graph_id": graph, "at": when, "by": "ops-lead", "reason": reason}


def period(since: datetime = SINCE, until: datetime = UNTIL, graph: str | None = None) -> dict:
    return {
        "since": since.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "until": until.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "graph_id": graph,
        "generated_at": "2025-03-08T12:00:00.000000Z",
        "rubber_stamp_seconds": FLOOR,
    }


P3 = cancellation("p3", "payouts", "2025-03-05T09:30:00.000000Z", P3_REASON)
C3 = cancellation("c3", "contracts", "2025-03-06T17:00:00.000000Z", C3_REASON)
# Open at NOW, whatever the period: r7 30 min | p5 1 h (the bound), p6 2 h | c4 10 h,
# p4 16 h, r8 18 h | w4 27 h, c2's second 1 d 22 h, p7 3 d 21 h | r-stale 7 d 4 h.
BACKLOG = ages(1, 2, 3, 3, 1)

# Raised in the period: r1 r2 p1 | p2 r3 r4 p7 | c1 (two) p3 r5 w1 w5 | c2 (two) c3 w2 w3 |
# p4 r8 w4 r6 = 22.
# Decided in the period: r-cross r1 r2 p1 | p2 r3 r4 | c1 (two) r5 w1 (expired) w5 | c2's
# first w2 w3 = 15, of which 14 human answers (w1 expired by its rule: nobody's).
# Human seconds, sorted: 2 4 6 9.5 10 20 30 45 90 120 600 5400 5400 7200; median the mean
# of the 7th and 8th ((30 + 45) / 2), p90 the ceil(0.9 * 14) = 13th (5400), max 7200.
# Overrides: reject r-cross p1 c1' w5, edit p2 = 5 of 14 human answers.
# Histogram of those seconds: under 10 s 2 4 6 9.5 | 10-30 s 10 20 | 30 s-1 min 30 45 |
# 1-5 min 90 120 | 5-15 min 600 | 15 min-1 h none | 1-4 h 5400 5400 7200 | none above.
NO_REVIEWS = {"value": 0, "by_decision": {}, "by_tool": {}, "edited": 0}  # no tool calls reviewed
# No read on record (tests/projections/test_read_records.py counts them)
# No hold, incident or purge is on record here (tests/service/test_retention.py counts them)
NO_RECORD_LIFE = {
    name: {"value": 0, "items": []} for name in ("legal_holds", "incidents", "purges")
}
NO_READS = {
    "value": 0,
    "by_kind": dict.fromkeys(READ_KINDS, 0),
    "by_reader": {},
    "threads_with_payloads_read": 0,
}
EXPECTED = {
    "period": period(),
    "interrupts_raised": {"value": 22},
    "decisions": {
        "value": 15,
        "by_kind": kinds(approve=7, reject=4, edit=1, respond=1, escalate=1, expired=1),
        "by_reviewer": {
            "alice": reviewer(approve=4),  # r1, r2, c1, w2
            "bob": reviewer(approve=2, reject=2, edit=1),  # r5, c2; r-cross, p1; p2
            "carol": reviewer(approve=1, reject=1, respond=1, escalate=1),  # w3; c1'; r3; r4
            "dave": reviewer(reject=1),  # w5; w1 expired by its rule is nobody's
        },
        "by_day": {  # by the UTC day of the decision; 03-07 had none (r6 came after)
            "2025-03-03": kinds(approve=2, reject=2),  # r1 r2; r-cross (01:00) p1
            "2025-03-04": kinds(edit=1, respond=1, escalate=1),  # p2; r3; r4
            "2025-03-05": kinds(approve=2, reject=2, expired=1),  # c1 r5; c1' w5; w1
            "2025-03-06": kinds(approve=3),  # w3 w2 c2's first
        },
    },
    "time_to_decision_seconds": {
        "median": 37.5,
        "p90": 5400.0,
        "max": 7200.0,
        "histogram": histogram(s0=4, s10=2, s30=2, s60=2, s300=1, s3600=3),
    },
    # Below 10 s: r1 (4), r2 (6), r4 (2), c2 (9.5); r5 took exactly 10.
    "fast_decisions": {"value": 4, "by_reviewer": {"alice": 2, "bob": 1, "carol": 1}},
    "override_rate": {
        "value": 0.3571,  # 5 / 14
        # 0/4, 3/5, 1/4, 1/1
        "by_reviewer": {"alice": 0.0, "bob": 0.6, "carol": 0.25, "dave": 1.0},
        # 1/3, 2/2, 1/6, 1/3
        "by_graph": {"contracts": 0.3333, "payouts": 1.0, "refunds": 0.1667, "wires": 0.3333},
    },
    # w1 expired, w5 escalated (its first deadline passed), w2 answered late, w4 open past
    # due; not w3 (in time).
    "deadline_breaches": {"value": 4},
    "cancellations": {"value": 2, "threads": [P3, C3]},  # p-old was stopped before
    **QUIET_HOLD_POINTS,
    "reviewed_actions": NO_REVIEWS,
    "reads": NO_READS,
    **NO_RECORD_LIFE,
    "backlog": BACKLOG,
    # Of the 22: decided 14 (r6 after the period; r-cross was raised before it), expired w1,
    # cancelled p3 c3, open p7, c2's second, p4, r8, w4.
    "coverage": coverage(22, decided=14, expired=1, cancelled=2, open_=5),
}

# One graph at a time. payouts: raised p1 p2 p7 p3 p4; decided p1 (reject, 120 s), p2 (edit,
# 600 s); cancelled p3; open at NOW p5 (1 h), p6 (2 h), p4 (16 h), p7 (3 d 21 h).
# wires: raised w1 w5 w2 w3 w4; w1 expired (3600 s, nobody's), w5 (dave, reject, 5400 s),
# w2 (alice, approve, 5400 s), w3 (carol, approve, 20 s); human seconds 20 5400 5400:
# median 5400; open w4 (27 h).
BY_GRAPH = {
    "payouts": {
        "period": period(graph="payouts"),
        "interrupts_raised": {"value": 5},
        "decisions": {
            "value": 2,
            "by_kind": kinds(reject=1, edit=1),
            "by_reviewer": {"bob": reviewer(reject=1, edit=1)},
            "by_day": {"2025-03-03": kinds(reject=1), "2025-03-04": kinds(edit=1)},
        },
        "time_to_decision_seconds": {
            "median": 360.0,
            "p90": 600.0,
            "max": 600.0,
            "histogram": histogram(s60=1, s300=1),  # 120 s, 600 s
        },
        "fast_decisions": {"value": 0, "by_reviewer": {}},
        "override_rate": {"value": 1.0, "by_reviewer": {"bob": 1.0}, "by_graph": {"payouts": 1.0}},
        "deadline_breaches": {"value": 0},
        "cancellations": {"value": 1, "threads": [P3]},
        **QUIET_HOLD_POINTS,
        "reviewed_actions": NO_REVIEWS,
        "reads": NO_READS,
        **NO_RECORD_LIFE,
        **NO_RECORD_LIFE,
        "backlog": ages(0, 2, 1, 1, 0),
        "coverage": coverage(5, decided=2, expired=0, cancelled=1, open_=2),
    },
    "wires": {
        "period": period(graph="wires"),
        "interrupts_raised": {"value": 5},
        "decisions": {
            "value": 4,
            "by_kind": kinds(approve=2, reject=1, expired=1),
            "by_reviewer": {
                "alice": reviewer(approve=1),
                "carol": reviewer(approve=1),
                "dave": reviewer(reject=1),
            },
            # 03-05: w5 rejected, w1 expired; 03-06: w3, w2 approved
            "by_day": {"2025-03-05": kinds(reject=1, expired=1), "2025-03-06": kinds(approve=2)},
        },
        "time_to_decision_seconds": {
            "median": 5400.0,
            "p90": 5400.0,
            "max": 5400.0,
            "histogram": histogram(s10=1, s3600=2),  # 20 s; 5400 s, 5400 s
        },
        "fast_decisions": {"value": 0, "by_reviewer": {}},
        "override_rate": {
            "value": 0.3333,
            "by_reviewer": {"alice": 0.0, "carol": 0.0, "dave": 1.0},
            "by_graph": {"wires": 0.3333},
        },
        "deadline_breaches": {"value": 4},
        "cancellations": {"value": 0, "threads": []},
        **QUIET_HOLD_POINTS,
        "reviewed_actions": NO_REVIEWS,
        "reads": NO_READS,
        **NO_RECORD_LIFE,
        **NO_RECORD_LIFE,
        "backlog": ages(d1_7=1),
        "coverage": coverage(5, decided=3, expired=1, cancelled=0, open_=1),
    },
}


def test_the_clock_stamps_every_event_and_the_chain_still_verifies(store, clock):
    history = History(store, clock)
    history.raise_("refunds", "t", at(3, 9))
    history.decide("t", at(3, 9, 0, 4), "alice", "approve")

    stamps = [(type(e).__name__, e.timestamp) for e in store.thread_events("t")]
    assert ("InterruptRaised", at(3, 9)) in stamps
    assert ("InterruptResumed", at(3, 9, 0, 4)) in stamps
    assert {stamp for _, stamp in stamps} == {at(3, 9), at(3, 9, 0, 4)}
    assert store.verify_chain("t").ok


def test_every_figure_equals_the_hand_computed_value(db):
    full = report(db)

    assert figures(full) == EXPECTED
    for section, figure in full.items():
        assert section == "period" or figure["how"].strip(), section


@pytest.mark.parametrize("graph", sorted(BY_GRAPH))
def test_a_graph_filter_counts_only_that_graph(db, graph):
    assert figures(report(db, graph_id=graph)) == BY_GRAPH[graph]


def test_a_period_counts_only_what_happened_in_it(db):
    # 03-04 only: raised p2 r3 r4 p7; decided p2 (bob, edit, 600 s), r3 (carol, respond,
    # 30 s), r4 (carol, escalate, 2 s: fast); no stop, no deadline. The backlog is as of NOW.
    assert figures(report(db, since=at(4), until=at(5))) == {
        "period": period(at(4), at(5)),
        "interrupts_raised": {"value": 4},
        "decisions": {
            "value": 3,
            "by_kind": kinds(edit=1, respond=1, escalate=1),
            "by_reviewer": {"bob": reviewer(edit=1), "carol": reviewer(respond=1, escalate=1)},
            "by_day": {"2025-03-04": kinds(edit=1, respond=1, escalate=1)},
        },
        "time_to_decision_seconds": {
            "median": 30.0,
            "p90": 600.0,
            "max": 600.0,
            "histogram": histogram(s0=1, s30=1, s300=1),  # 2 s, 30 s, 600 s
        },
        "fast_decisions": {"value": 1, "by_reviewer": {"carol": 1}},
        "override_rate": {
            "value": 0.3333,
            "by_reviewer": {"bob": 1.0, "carol": 0.0},
            "by_graph": {"payouts": 1.0, "refunds": 0.0},
        },
        "deadline_breaches": {"value": 0},
        "cancellations": {"value": 0, "threads": []},
        **QUIET_HOLD_POINTS,
        "reviewed_actions": NO_REVIEWS,
        "reads": NO_READS,
        **NO_RECORD_LIFE,
        **NO_RECORD_LIFE,
        "backlog": BACKLOG,
        "coverage": coverage(4, decided=3, expired=0, cancelled=0, open_=1),
    }


def test_a_period_before_anything_happened_is_empty_but_for_the_backlog(db):
    empty = report(db, since=at(1, 0), until=at(1, 8))  # ends as r-stale is raised

    assert empty["interrupts_raised"]["value"] == 0
    assert empty["decisions"]["value"] == 0
    assert empty["decisions"]["by_day"] == {}
    assert empty["time_to_decision_seconds"] | {"how": ""} == {
        "median": None,
        "p90": None,
        "max": None,
        "histogram": histogram(),
        "how": "",
    }
    assert empty["override_rate"]["value"] is None
    assert empty["backlog"] == BACKLOG | {"how": empty["backlog"]["how"]}
    assert "No decisions in the period." in to_html(empty)


# -- the three formats carry the same numbers -----------------------------------


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """Every plain value in a figure, by dotted key (the test's own flattening)."""
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        out: dict[str, Any] = {}
        for key, item in items:
            if not (prefix.count(".") == 0 and key == "how"):
                out |= flatten(item, f"{prefix}.{key}")
        return out
    return {prefix: value}


def report_leaves(full: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section, figure in full.items():
        out |= flatten(figure, section)
    return out


class DataKeys(HTMLParser):
    """The text of every element marked `data-key`, by key."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self.open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        key = dict(attrs).get("data-key")
        self.open.append(key)
        if key is not None:
            assert key not in self.values, f"{key} marked twice"
            self.values[key] = ""

    def handle_endtag(self, tag: str) -> None:
        self.open.pop()

    def handle_data(self, data: str) -> None:
        for key in self.open:
            if key is not None:
                self.values[key] += data


def csv_cells(full: dict[str, Any]) -> dict[str, str]:
    rows = list(csv.DictReader(io.StringIO(to_csv(full))))
    assert list(rows[0]) == ["section", "key", "value", "how"]
    for row in rows:
        assert row["how"] == full[row["section"]].get("how", "")
    return {f"{r['section']}.{r['key']}": r["value"] for r in rows}


def html_cells(page: str) -> dict[str, str]:
    parser = DataKeys()
    parser.feed(page)
    return parser.values


def assert_same_values(full: dict[str, Any]) -> None:
    """JSON, CSV and HTML give every value of the report, numbers and all."""
    leaves = report_leaves(full)
    assert json.loads(to_json(full)) == full
    cells, page = csv_cells(full), to_html(full)
    shown = html_cells(page)
    assert set(cells) == set(leaves)
    assert set(shown) == set(leaves) - ({"period.graph_id"} - set(shown))  # None: "all graphs"
    for key, value in leaves.items():
        if value is None:
            assert (cells[key], shown.get(key, "n/a")) == ("", "n/a"), key
        elif isinstance(value, bool):
            assert (cells[key], shown[key]) == (str(value).lower(), "yes" if value else "no")
        elif isinstance(value, int | float):
            assert float(cells[key]) == value == float(shown[key]), key
        else:
            assert cells[key] == value == shown[key], key
    for section, figure in full.items():
        if section != "period":
            assert f"How: {escape(figure['how'])}" in page


def test_json_csv_and_html_carry_the_same_numbers(db):
    full = report(db)
    numbers = [v for v in report_leaves(full).values() if type(v) in (int, float)]
    assert len(numbers) > 60

    assert_same_values(full)
    assert_same_values(report(db, graph_id="wires"))
    assert_same_values(report(db, since=at(1), until=at(1, 8)))  # no decisions: nulls
    cells, shown = csv_cells(full), html_cells(to_html(full))
    assert cells["decisions.by_reviewer.bob.edit"] == shown["decisions.by_reviewer.bob.edit"] == "1"
    assert cells["override_rate.by_graph.refunds"] == "0.1667"
    assert cells["cancellations.threads.0.reason"] == P3_REASON
    # The two figures drawn as charts: decisions by day, and the time-to-decision buckets.
    day = "decisions.by_day.2025-03-05"
    assert [cells[f"{day}.{kind}"] for kind in KINDS] == ["2", "2", "0", "0", "0", "1"]
    assert [shown[f"{day}.{kind}"] for kind in KINDS] == ["2", "2", "0", "0", "0", "1"]
    bins = "time_to_decision_seconds.histogram"
    assert [cells[f"{bins}.{i}.count"] for i in range(9)] == list("422210300")
    assert [shown[f"{bins}.{i}.count"] for i in range(9)] == list("422210300")
    assert (cells[f"{bins}.6.from"], cells[f"{bins}.6.to"]) == ("3600", "14400")
    assert (cells[f"{bins}.8.from"], cells[f"{bins}.8.to"]) == ("86400", "")
    assert (shown[f"{bins}.8.from"], shown[f"{bins}.8.to"]) == ("86400", "n/a")


def test_the_html_page_is_self_contained_and_escapes_text(db):
    page = to_html(report(db))

    assert page.startswith("<!doctype html>")
    assert page.count("<svg") >= 7
    assert "Decisions over time (UTC days), by kind" in page
    assert "Time to decision, histogram" in page
    assert 'class="floor"' in page
    assert "floor 10 s" in page
    assert 'name="viewport"' in page
    lowered = page.lower()
    for outside in ("http", "<script", "<link", "<img", "<iframe", "url(", "@import", "src="):
        assert outside not in lowered, outside
    assert "&lt;case 17&gt;" in page
    assert "fraud &amp; AML" in page
    assert "<case 17>" not in page


# -- the formats on their own --------------------------------------------------

HOSTILE = '<img src=x onerror="alert(1)">'


def synthetic(name: str = "alice", reason: str = "Stop & check") -> dict[str, Any]:
    """A report as `oversight_report` shapes it, with names chosen by the test."""
    return {
        "period": period(graph=f"{name}-graph"),
        "decisions": {
            "value": 2,
            "by_kind": kinds(approve=1, reject=1),
            "by_reviewer": {name: reviewer(approve=1, reject=1)},
            "how": "answers <in> the period",
        },
        "time_to_decision_seconds": {"median": 3.5, "p90": 4.0, "max": 4.0, "how": "seconds"},
        "cancellations": {
            "value": 1,
            "threads": [cancellation("t-1", "g", "2025-03-05T09:30:00.000000Z", reason)],
            "how": "stops",
        },
    }


def test_names_and_reasons_are_escaped_everywhere():
    figures = synthetic(name=HOSTILE, reason="</dl><script>alert(2)</script>")
    page = to_html(figures)

    assert "<img" not in page
    assert "<script" not in page
    assert "&lt;/dl&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert 'data-key="decisions.by_reviewer.&lt;img src=x onerror=&quot;alert(1)&quot;&gt;' in page
    assert "answers &lt;in&gt; the period" in page
    assert_same_values(figures)  # the names come back intact from the data-key cells


def test_csv_cells_cannot_be_read_as_formulas():
    figures = synthetic(reason='=HYPERLINK("x","click")')
    cells = csv_cells(figures)

    assert cells["cancellations.threads.0.reason"] == '\'=HYPERLINK("x","click")'
    assert cells["decisions.by_kind.approve"] == "1"


def test_a_histogram_and_decisions_by_day_are_drawn_when_the_report_has_them():
    figures = synthetic()
    figures["decisions"]["by_day"] = {
        "2025-03-03": kinds(approve=1),
        "2025-03-04": kinds(reject=1),
    }
    figures["time_to_decision_seconds"]["histogram"] = [
        {"from": 0, "to": 10, "count": 4},
        {"from": 10, "to": 60, "count": 2},
        {"from": 60, "to": None, "count": 1},
    ]
    page = to_html(figures)

    assert "Time to decision, histogram" in page
    assert "Decisions over time (UTC days), by kind" in page
    assert 'class="floor"' in page
    assert "floor 10 s" in page
    assert_same_values(figures)


def test_a_box_chart_with_the_floor_is_drawn_without_a_histogram():
    page = to_html(synthetic())

    assert "median 3.5 s \u00b7 p90 4 s \u00b7 max 4 s" in page
    assert 'class="floor"' in page
