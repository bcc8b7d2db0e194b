"""The oversight report's figures about hold points (`domain/oversight/hold_points.py`).

An answer binds to the question it answered, four eyes need two different
approvers, an edit `as_node` decides the flow, and an attempt to change a
thread at a hold point without the right to decide it is refused and
recorded. These figures show each rule at work in the period: the questions
asked again because their answer was for another, the four-eyes decisions and
their approvals, the edits that decided the flow and by whom, and the refused
attempts to get round a hold point, by whom. Each reads rare rows through an
index of its own (`oversight_tables.RARE_ROW_INDEXES`, the small tables'
`at`), so the report costs about what it did without them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from projections.database import Cursor
from projections.oversight_tables import UNAPPLIED
from projections.report_scope import ReportScope

RAISED = "raised_at >= %s AND raised_at < %s"


def unapplied(cursor: Cursor, scope: ReportScope) -> int:
    """Interrupts raised in the period whose node ran past them without applying an
    answer to the question they asked (the domain never records one: a regression would)."""
    cursor.execute(
        f"SELECT COUNT(*) FROM {scope.log} WHERE applied = '{UNAPPLIED}' AND {RAISED}{scope.graph}",
        scope.period_params,
    )
    return int(cursor.fetchone()[0])


def hold_point_figures(cursor: Cursor, scope: ReportScope) -> dict[str, Any]:
    """The figures `reasked`, `four_eyes`, `flow_edits` and `bypass_attempts`."""
    refused = _refusals(cursor, scope)
    by_reason: Counter[str] = Counter()
    for (reason, _principal), count in refused.items():
        by_reason[reason] += count
    bypassers = {p: n for (reason, p), n in sorted(refused.items()) if reason == "hold_point"}
    return {
        "reasked": _reasked(cursor, scope, by_reason["question_changed"]),
        "four_eyes": _four_eyes(cursor, scope, by_reason["four_eyes"]),
        "flow_edits": _flow_edits(cursor, scope),
        "bypass_attempts": {
            "value": by_reason["hold_point"],
            "by_principal": bypassers,
            "how": "attempts refused because they would change a thread standing at a "
            "hold point (an edit of its state, a Command, a fork past a decision) by "
            "someone who may not decide it, or an edit as_node by a role that may not "
            "decide the flow: AccessRefused with reason hold_point, recorded in the "
            "period, by principal ('unknown': none named); with a graph, those whose "
            "target is a thread or an interrupt of the graph",
        },
    }


def _reasked(cursor: Cursor, scope: ReportScope, stale: int) -> dict[str, Any]:
    cursor.execute(
        f"SELECT interrupt_id, reasked, thread_id, node, raised_at FROM {scope.log} "
        f"WHERE reasked IS NOT NULL AND {RAISED}{scope.graph} ORDER BY raised_at, interrupt_id",
        scope.period_params,
    )
    pairs = [
        {"interrupt_id": new, "reasks": old, "thread_id": thread, "node": node, "raised_at": at}
        for new, old, thread, node, at in cursor.fetchall()
    ]
    return {
        "value": len(pairs),
        "pairs": pairs,
        "stale_decisions_refused": stale,
        "how": "interrupts raised in the period that ask again in place of one whose "
        "answer did not apply, because the node asked another question (its state was "
        "changed meanwhile): each pair is the new interrupt and the one it re-asks; "
        "stale_decisions_refused: decisions refused in the period because the decider "
        "was shown another payload than the one the interrupt asks (AccessRefused with "
        "reason question_changed)",
    }


def _four_eyes(cursor: Cursor, scope: ReportScope, repeats: int) -> dict[str, Any]:
    cursor.execute(
        "SELECT COUNT(*), "
        "COUNT(*) FILTER (WHERE decision = 'approve' AND approvals_given >= approvals_needed), "
        "COUNT(*) FILTER (WHERE decision = 'approve' AND approvals_given < approvals_needed), "
        "COUNT(*) FILTER (WHERE decision = 'reject'), "
        "COUNT(*) FILTER (WHERE decision = 'expired'), COALESCE(SUM(approvals_given), 0) "
        f"FROM {scope.log} WHERE approvals_needed > 1 "
        "AND outcome IN ('decided', 'expired') AND closed_at >= %s AND closed_at < %s"
        f"{scope.graph}",
        scope.period_params,
    )
    decided, approved, short, rejected, expired, approvals = (int(n) for n in cursor.fetchone())
    return {
        "value": decided,
        "approved": approved,
        "approved_short": short,
        "rejected": rejected,
        "expired": expired,
        "approvals": approvals,
        "repeat_approvals_refused": repeats,
        "how": "interrupts that need approvals by more than one principal (four eyes), "
        "decided in the period: approved with every approval they need, approved with "
        "fewer (the domain never records one: a regression would), rejected (one "
        "rejection ends them), or expired by their deadline's rule; approvals: those "
        "they were given (InterruptApproved, and the last, approving, InterruptResumed); "
        "repeat_approvals_refused: approvals refused in the period because the same "
        "principal had approved already (AccessRefused with reason four_eyes)",
    }


def _flow_edits(cursor: Cursor, scope: ReportScope) -> dict[str, Any]:
    cursor.execute(
        f"SELECT actor_id, COUNT(*) FROM {scope.flow_edits} "
        f"WHERE at >= %s AND at < %s{scope.graph} GROUP BY actor_id",
        scope.period_params,
    )
    by_reviewer: Counter[str] = Counter()
    for actor, count in cursor.fetchall():
        by_reviewer[actor or "unknown"] += int(count)
    return {
        "value": by_reviewer.total(),
        "by_reviewer": dict(sorted(by_reviewer.items())),
        "how": "edits of the state as_node (each stands in for that node having run, so "
        "decides the flow: StateEdited with decision edit) recorded in the period, by "
        "reviewer ('unknown': none named)",
    }


def _refusals(cursor: Cursor, scope: ReportScope) -> Counter[tuple[str, str]]:
    """The hold-point refusals of the period, by (reason, principal). A refusal names no
    graph: with one, those whose target is one of the graph's threads or interrupts."""
    graph = ""
    if scope.graph_id:
        graph = (
            f" AND (EXISTS (SELECT 1 FROM {scope.log} l WHERE l.thread_id = r.target "
            f"AND l.graph_id = %s) OR EXISTS (SELECT 1 FROM {scope.log} l "
            "WHERE l.interrupt_id = r.target AND l.graph_id = %s))"
        )
    cursor.execute(
        f"SELECT reason, principal_id, COUNT(*) FROM {scope.refusals} r "
        f"WHERE at >= %s AND at < %s{graph} GROUP BY reason, principal_id",
        [scope.start, scope.end, *scope.graph_params * 2],
    )
    refused: Counter[tuple[str, str]] = Counter()
    for reason, principal, count in cursor.fetchall():
        refused[str(reason), principal or "unknown"] += int(count)
    return refused
