"""The read models of the hold points: what each interrupt asked, its approvals, whether
its answer applied; the edits that decided the flow; the attempts the rules refused.

Given real graphs run through the Python API by named actors (and, for what the
domain never records, events written directly), when the runner catches up,
then the oversight log and the approval queue hold the rows below. Every test
runs on each store kind.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from domain.oversight.hold_points import question_digest
from projections.catalog import runner_for
from projections.database import Database
from projections.oversight import OversightProjection
from projections.oversight_tables import FLOW_EDITS, INTERRUPTS, LOG_SHAPE, REFUSALS
from projections.pending_approvals import PendingApprovals, PendingApprovalsProjection
from projections.runner import ProjectionRunner
from tests.projections.histories import read_models, rows
from tests.projections.hold_point_histories import (
    RITA,
    SAM,
    decide,
    question,
    record_hold_points,
    record_legacy,
    record_unapplied,
    refund_graph,
    start,
)

OVERSIGHT = ("oversight",)


@pytest.fixture
def runner(store):
    runner = runner_for(store)
    yield runner
    runner.close()


@pytest.fixture
def ids(store, runner):
    recorded = record_hold_points(store)
    runner.catch_up()
    return recorded


def logged(db: Database, interrupt_id: str) -> dict[str, Any]:
    """The oversight log's row of `interrupt_id`, by column."""
    with db.transaction(write=False) as cursor:
        cursor.execute(
            f"SELECT {', '.join(LOG_SHAPE.columns)} FROM {db.table(INTERRUPTS)} "
            "WHERE interrupt_id = %s",
            (interrupt_id,),
        )
        return dict(zip(LOG_SHAPE.columns, cursor.fetchone(), strict=True))


def settled(db: Database, interrupt_id: str) -> tuple[Any, ...]:
    row = logged(db, interrupt_id)
    return (row["outcome"], row["decision"], row["approvals_given"], row["applied"])


# -- four eyes --------------------------------------------------------------------


def test_a_four_eyes_interrupt_counts_both_approvals_and_its_answer_applies(runner, ids):
    row = logged(runner.db, ids.four_eyes)

    assert row["digest"] == question_digest(question(5000.0))
    assert (row["approvals_needed"], row["approvals_given"]) == (2, 2)
    assert (row["outcome"], row["decision"], row["reviewer_id"]) == ("decided", "approve", "sam")
    assert row["applied"] == "applied"
    assert row["reasked"] is None


def test_a_four_eyes_interrupt_rejected_after_one_approval_keeps_that_approval(runner, ids):
    row = logged(runner.db, ids.rejected)

    assert (row["approvals_needed"], row["approvals_given"]) == (2, 1)
    assert (row["decision"], row["reviewer_id"], row["applied"]) == ("reject", "sam", "applied")


def test_the_queue_shows_a_four_eyes_interrupt_with_its_digest_and_approvals_so_far(store):
    # Given an interrupt that needs two approvals, approved once
    runner = ProjectionRunner(store, [PendingApprovalsProjection()])
    graph = refund_graph(store)
    interrupt_id = start(graph, "big", 5000.0)
    runner.catch_up()
    before = PendingApprovals(runner.db).page().items
    decide(graph, "big", RITA)

    # When the queue catches up
    runner.catch_up()
    [item] = PendingApprovals(runner.db).page().items

    # Then it still waits, for one more approval, on the question it asks
    assert [(i.approvals_needed, i.approvals_given) for i in before] == [(2, 0)]
    assert (item.interrupt_id, item.approvals_needed, item.approvals_given) == (interrupt_id, 2, 1)
    assert item.payload_digest == question_digest(question(5000.0))
    # And the HTTP API's item (asdict) names the fields so
    assert {"payload_digest", "approvals_needed", "approvals_given"} <= asdict(item).keys()
    # And the last approval takes it off the queue
    decide(graph, "big", SAM)
    runner.catch_up()
    assert PendingApprovals(runner.db).page().items == []
    runner.close()


def test_a_one_approval_interrupt_needs_one_and_has_none_while_it_waits(store):
    runner = ProjectionRunner(store, [PendingApprovalsProjection()])
    start(refund_graph(store), "small", 50.0)
    runner.catch_up()

    [item] = PendingApprovals(runner.db).page().items

    assert (item.approvals_needed, item.approvals_given) == (1, 0)
    assert item.payload_digest == question_digest(question(50.0))
    runner.close()


# -- answers bound to their questions ---------------------------------------------


def test_an_answer_to_a_question_the_node_no_longer_asks_is_reasked(runner, ids):
    old, new = logged(runner.db, ids.asked), logged(runner.db, ids.reasking)

    # The first was answered, but the node asked about the edited amount in its place
    assert (old["outcome"], old["decision"], old["applied"]) == ("decided", "approve", "reasked")
    assert old["digest"] == question_digest(question(50.0))
    # The second names the one it re-asks, and its answer applied
    assert new["reasked"] == ids.asked
    assert new["digest"] == question_digest(question(40.0))
    assert (new["outcome"], new["applied"]) == ("decided", "applied")


def test_an_open_interrupt_has_no_applied_until_its_node_runs_past_it(runner, ids):
    assert settled(runner.db, ids.edited) == ("open", None, 0, None)


def test_a_node_that_completes_without_applying_its_answer_leaves_it_unapplied(store, runner):
    # Given a node that completed after its interrupt's answer, not having received it
    answered = record_unapplied(store, "ran-past")
    # And one that completed while its interrupt was still open
    ignored = record_unapplied(store, "ran-round", answered=False)

    # When
    runner.catch_up()

    # Then
    assert settled(runner.db, answered) == ("decided", "approve", 1, "unapplied")
    assert settled(runner.db, ignored) == ("open", None, 0, "unapplied")


def test_events_recorded_before_hold_points_read_as_an_answer_applied_by_position(store, runner):
    # Given an interrupt raised, answered and run past by events that lack the new fields
    interrupt_id = record_legacy(store, "legacy")

    # When
    runner.catch_up()
    row = logged(runner.db, interrupt_id)

    # Then its digest is the payload's, it needed one approval, and its answer applied
    assert row["digest"] == question_digest(question(10.0))
    assert (row["approvals_needed"], row["approvals_given"]) == (1, 1)
    assert (row["reasked"], row["applied"]) == (None, "applied")


# -- flow edits and refusals -------------------------------------------------------


def test_an_edit_as_node_is_kept_as_a_flow_edit_and_a_plain_edit_is_not(runner, ids):
    [(_, thread, graph, _, actor, role, as_node, reason)] = rows(runner.db, FLOW_EDITS)

    # tess's edit as_node; rita's plain edit of the amount (the reasked thread) is not one
    assert (thread, graph, actor, role) == ("edited", "refund", "tess", "reviewer")
    assert (as_node, reason) == ("approve", "approved by phone")


def test_the_hold_points_refusals_are_kept_with_who_why_and_on_what(runner, ids):
    kept = [
        (p, role, why, action, target)
        for _, _, p, role, why, action, target in rows(runner.db, REFUSALS)
    ]

    # The agent's wrong_role decision is another rule's refusal: not kept here
    assert kept == [
        ("rita", "reviewer", "four_eyes", "invoke", "four-eyes"),
        ("sam", "reviewer", "question_changed", "invoke", "reasked"),
        ("agent-7", "agent", "hold_point", "update_state", "edited"),
        ("agent-7", "agent", "hold_point", "update_state", "edited"),
    ]


# -- batches and decoding ----------------------------------------------------------


def test_one_position_per_batch_gives_the_rows_of_one_batch(store, runner):
    # Given every story, and the events the domain never records, in one batch
    record_hold_points(store)
    record_unapplied(store, "ran-past")
    record_legacy(store, "legacy")
    runner.catch_up()
    at_once = read_models(runner.db, OVERSIGHT)

    # When the oversight log is built again one position per batch
    slow = ProjectionRunner(store, [OversightProjection()], batch_size=1, rebuild_batch_size=1)
    slow.rebuild()

    # Then each batch found the unsettled rows of the threads it continues
    assert read_models(slow.db, OVERSIGHT) == at_once
    assert len(at_once[INTERRUPTS]) == 7
    slow.close()
