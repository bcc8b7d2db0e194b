"""The oversight report's hold-point figures, from real runs of the hold points' rules.

Given the stories of `record_hold_points` in two graphs (four eyes approved and
rejected, a question asked again, an edit as_node, refused attempts), when the
read models catch up, then the report counts them in the period they happened,
for all graphs or one; a node run past an answer it did not apply leaves the
interrupts unaccounted for; and JSON, CSV and HTML carry the same numbers.
The period is the hour around now: refused attempts are stamped by the
library's clock, which the report test's clock does not set.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from projections.catalog import runner_for
from projections.oversight_report import oversight_report
from projections.report_formats import to_html
from tests.projections.hold_point_histories import record_hold_points, record_unapplied
from tests.projections.test_oversight_report import assert_same_values

HOLD_POINT_FIGURES = ("reasked", "four_eyes", "flow_edits", "bypass_attempts")


@pytest.fixture
def recorded(store):
    """The stories in graph refund, then in graph payout (threads prefixed p-)."""
    refunds = record_hold_points(store)
    record_hold_points(store, "p-", graph_name="payout")
    return refunds


@pytest.fixture
def runner(store, recorded):
    runner = runner_for(store)
    runner.catch_up()
    yield runner
    runner.close()


@pytest.fixture
def db(runner):
    return runner.db


def report(db: Any, **overrides: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    params = {"since": now - timedelta(hours=1), "until": now + timedelta(hours=1), "now": now}
    return oversight_report(db, **(params | overrides))


def hold_points(full: dict[str, Any]) -> dict[str, Any]:
    """The hold-point figures without their `how`s, re-asks without their time."""
    figures = {k: {n: v for n, v in full[k].items() if n != "how"} for k in HOLD_POINT_FIGURES}
    for pair in figures["reasked"]["pairs"]:
        del pair["raised_at"]
    return figures


def per_graph(recorded: Any, prefix: str = "") -> dict[str, Any]:
    """The figures of one graph's stories (see `record_hold_points`)."""
    return {
        "reasked": {
            "value": 1,  # sam's approval of 50 did not apply: rita had made it 40
            "pairs": [
                {
                    "interrupt_id": recorded.reasking,
                    "reasks": recorded.asked,
                    "thread_id": f"{prefix}reasked",
                    "node": "approve",
                }
            ],
            "stale_decisions_refused": 1,  # sam's decision on the payload of 50
        },
        "four_eyes": {
            "value": 2,
            "approved": 1,  # rita and sam
            "approved_short": 0,
            "rejected": 1,  # rita approved, sam rejected
            "expired": 0,
            "approvals": 3,
            "repeat_approvals_refused": 1,  # rita's second approval
        },
        "flow_edits": {"value": 1, "by_reviewer": {"tess": 1}},
        "bypass_attempts": {"value": 2, "by_principal": {"agent-7": 2}},  # an edit, as_node
    }


def test_one_graphs_figures_count_its_stories_alone(db, recorded):
    full = report(db, graph_id="refund")

    assert hold_points(full) == per_graph(recorded)
    assert {k: v for k, v in full["coverage"].items() if k != "how"} == {
        "raised": 5,  # four-eyes, rejected, the question asked and the one asked again, edited
        "decided": 4,
        "cancelled": 0,
        "expired": 0,
        "superseded": 0,
        "open": 1,  # edited: tess's edit as_node stood in for the node, not for an answer
        "unapplied": 0,
        "accounted_for": True,
    }


def test_all_graphs_figures_count_every_story(db, recorded):
    full = hold_points(report(db))

    assert [f["value"] for f in full.values()] == [2, 4, 2, 4]
    assert full["four_eyes"]["approvals"] == 6
    assert full["flow_edits"]["by_reviewer"] == {"tess": 2}
    assert full["bypass_attempts"]["by_principal"] == {"agent-7": 4}
    assert [p["thread_id"] for p in full["reasked"]["pairs"]] == ["reasked", "p-reasked"]


def test_a_period_before_the_stories_counts_none_of_them(db):
    before = datetime.now(UTC) - timedelta(days=2)

    full = hold_points(report(db, since=before, until=before + timedelta(days=1)))

    assert [f["value"] for f in full.values()] == [0, 0, 0, 0]
    assert full["reasked"]["pairs"] == []
    assert full["bypass_attempts"]["by_principal"] == {}


def test_a_node_run_past_an_answer_it_did_not_apply_leaves_the_period_unaccounted_for(
    store, runner
):
    # Given a node that completed without applying its interrupt's answer (events
    # written directly: the domain never records it)
    record_unapplied(store, "ran-past")
    runner.catch_up()

    # When
    coverage = report(runner.db)["coverage"]

    # Then every outcome is known, yet the interrupts are not accounted for
    assert coverage["raised"] == coverage["decided"] + coverage["open"] == 11
    assert coverage["unapplied"] == 1
    assert coverage["accounted_for"] is False
    assert "none is unapplied" in coverage["how"]


def test_json_csv_and_html_carry_the_same_hold_point_numbers(db):
    full = report(db)

    assert_same_values(full)
    assert_same_values(report(db, graph_id="payout"))
    page = to_html(full)
    for chart in (
        "Four-eyes decisions by how they ended",
        "Edits as_node by reviewer",
        "Refused bypass attempts by principal",
    ):
        assert chart in page
    assert 'data-key="reasked.pairs.0.reasks"' in page
