"""The Article 14 oversight report, computed from the oversight log.

Every figure carries `how`: how it is computed, in words, so the report
explains itself to an auditor. Interrupts count in the period they were
raised; decisions in the period they were made; the backlog is as of `now`.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any

from projections.database import Database
from projections.oversight import CANCELLATIONS, INTERRUPTS
from projections.timestamps import parse_utc_text, utc_text

DECISION_KINDS = ("approve", "reject", "edit", "respond", "escalate", "expired")
OVERRIDES = ("reject", "edit")
OUTCOMES = ("decided", "expired", "cancelled", "superseded", "open")
AGE_BUCKETS = ((3600, "under 1 h"), (4 * 3600, "1-4 h"), (86400, "4-24 h"), (7 * 86400, "1-7 days"))


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
    rubber_stamp_seconds: float = 10.0,
    now: datetime | None = None,
) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    start, end = utc_text(since), utc_text(until)
    graph_clause, graph_params = ("AND graph_id = %s", [graph_id]) if graph_id else ("", [])
    log, cancelled = db.table(INTERRUPTS), db.table(CANCELLATIONS)
    with db.transaction(write=False) as cursor:
        cursor.execute(
            f"SELECT outcome, COUNT(*) FROM {log} WHERE raised_at >= %s AND raised_at < %s "
            f"{graph_clause} GROUP BY outcome",
            [start, end, *graph_params],
        )
        outcomes = {outcome: int(count) for outcome, count in cursor.fetchall()}
        cursor.execute(
            f"SELECT decision, reviewer_id, graph_id, seconds_to_decision FROM {log} "
            f"WHERE outcome IN ('decided', 'expired') AND closed_at >= %s AND closed_at < %s "
            f"{graph_clause}",
            [start, end, *graph_params],
        )
        decisions = cursor.fetchall()
        cursor.execute(
            f"SELECT thread_id, graph_id, cancelled_at, actor_id, reason FROM {cancelled} "
            f"WHERE cancelled_at >= %s AND cancelled_at < %s {graph_clause} ORDER BY cancelled_at",
            [start, end, *graph_params],
        )
        cancellations = cursor.fetchall()
        cursor.execute(
            f"SELECT COUNT(*) FROM {log} WHERE raised_at >= %s AND raised_at < %s "
            "AND due_by IS NOT NULL AND (outcome = 'expired' OR escalations > 0 "
            f"OR closed_at > due_by OR (outcome = 'open' AND due_by < %s)) {graph_clause}",
            [start, end, utc_text(now), *graph_params],
        )
        breaches = int(cursor.fetchone()[0])
        cursor.execute(
            f"SELECT raised_at FROM {log} WHERE outcome = 'open' {graph_clause}", graph_params
        )
        open_raised = [row[0] for row in cursor.fetchall()]
    raised = sum(outcomes.values())
    return {
        "period": {
            "since": start,
            "until": end,
            "graph_id": graph_id,
            "generated_at": utc_text(now),
            "rubber_stamp_seconds": rubber_stamp_seconds,
        },
        "interrupts_raised": {
            "value": raised,
            "how": "interrupts raised in the period",
        },
        **_decision_figures(decisions, rubber_stamp_seconds),
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
        "backlog": _backlog(open_raised, now),
        "coverage": {
            "raised": raised,
            "decided": outcomes.get("decided", 0),
            "cancelled": outcomes.get("cancelled", 0),
            "expired": outcomes.get("expired", 0),
            "superseded": outcomes.get("superseded", 0),
            "open": outcomes.get("open", 0),
            "accounted_for": raised == sum(outcomes.get(k, 0) for k in OUTCOMES),
            "how": (
                "each interrupt raised in the period is decided, expired (its deadline's rule "
                "decided it), cancelled with its thread, superseded (its node asked again) "
                "or still open"
            ),
        },
    }


def _decision_figures(rows: list[Any], floor: float) -> dict[str, Any]:
    """Figures over decisions; expiries count as decisions of kind 'expired' but
    are nobody's: reviewer figures, speed and override rates read human answers."""
    by_kind = Counter(decision for decision, *_ in rows)
    human = [row for row in rows if row[0] != "expired"]
    per_reviewer: dict[str, Counter[str]] = defaultdict(Counter)
    per_graph: dict[str, Counter[str]] = defaultdict(Counter)
    fast: Counter[str] = Counter()
    for decision, reviewer, graph, seconds in human:
        per_reviewer[reviewer or "unknown"][decision] += 1
        per_graph[graph][decision] += 1
        if seconds is not None and seconds < floor:
            fast[reviewer or "unknown"] += 1
    seconds = [float(row[3]) for row in human if row[3] is not None]
    overrides = sum(by_kind[kind] for kind in OVERRIDES)

    def override_rates(groups: dict[str, Counter[str]]) -> dict[str, float | None]:
        return {
            name: _rate(sum(c[k] for k in OVERRIDES), sum(c.values()))
            for name, c in sorted(groups.items())
        }

    return {
        "decisions": {
            "value": len(rows),
            "by_kind": {kind: by_kind.get(kind, 0) for kind in DECISION_KINDS},
            "by_reviewer": {
                name: {kind: c.get(kind, 0) for kind in DECISION_KINDS} | {"total": sum(c.values())}
                for name, c in sorted(per_reviewer.items())
            },
            "how": "human answers (InterruptResumed) by kind and reviewer, plus expiries "
            "(InterruptExpired, kind 'expired', no reviewer), recorded in the period",
        },
        "time_to_decision_seconds": {
            "median": None if not seconds else round(statistics.median(seconds), 3),
            "p90": None if not seconds else round(percentile(seconds, 0.9) or 0.0, 3),
            "max": None if not seconds else round(max(seconds), 3),
            "how": "seconds from InterruptRaised to InterruptResumed, for human answers in "
            "the period; p90 by nearest rank",
        },
        "fast_decisions": {
            "value": sum(fast.values()),
            "by_reviewer": dict(sorted(fast.items())),
            "how": f"human answers given less than {floor:g} s after the interrupt was "
            "raised: possible rubber-stamping (automation bias, Art. 14(4)(b))",
        },
        "override_rate": {
            "value": _rate(overrides, len(human)),
            "by_reviewer": override_rates(per_reviewer),
            "by_graph": override_rates(per_graph),
            "how": "(reject + edit) / human answers in the period",
        },
    }


def _backlog(open_raised: list[str], now: datetime) -> dict[str, Any]:
    buckets = dict.fromkeys([label for _, label in AGE_BUCKETS] + ["over 7 days"], 0)
    for raised_at in open_raised:
        raised = parse_utc_text(raised_at)
        age = (now - raised).total_seconds()
        label = next((name for limit, name in AGE_BUCKETS if age < limit), "over 7 days")
        buckets[label] += 1
    return {
        "value": len(open_raised),
        "by_age": buckets,
        "how": "interrupts still open at generated_at, by age",
    }
