"""Read-model versions: a model whose tables are of another shape is rebuilt from the log.

Given read models as an older runner left them (the approval queue and the
oversight log in their first shape, no version recorded), when a runner whose
code has them at version 2 sets up, then it drops those two, creates them anew,
sets them back to position 0 and says so in a warning; its next catch-up gives
the rows a rebuild from zero gives. A model of the same version keeps its rows
and its position. Run on SQLite and PostgreSQL, where read models outlive
their runner.
"""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from projections.catalog import runner_for
from projections.database import Database
from projections.model_tables import VERSIONS
from projections.oversight_tables import FLOW_EDITS, INTERRUPTS, REFUSALS
from projections.pending_approvals import QUEUE
from projections.runner import ProjectionRunner
from projections.thread_index import ThreadIndexProjection
from tests.projections.histories import (
    READ_MODEL_TABLES,
    positions,
    read_models,
    record_history,
    rows,
)
from tests.projections.hold_point_histories import record_hold_points

ALL = tuple(READ_MODEL_TABLES)
WARNING = "read model changed shape: rebuilding it from the log"
# The first shapes, as the runner before versions created them.
FIRST_SHAPES = {
    QUEUE: (
        "interrupt_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
        "node TEXT NOT NULL, idx INTEGER NOT NULL, payload TEXT NOT NULL, "
        "raised_at TEXT NOT NULL, required_role TEXT, due_by TEXT, assigned_to TEXT, "
        "position BIGINT NOT NULL",
        "interrupt_id, thread_id, graph_id, node, idx, payload, raised_at, required_role, "
        "due_by, assigned_to, position",
    ),
    INTERRUPTS: (
        "interrupt_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
        "node TEXT NOT NULL, idx INTEGER NOT NULL, raised_at TEXT NOT NULL, "
        "required_role TEXT, due_by TEXT, escalations INTEGER NOT NULL DEFAULT 0, "
        "outcome TEXT NOT NULL, closed_at TEXT, decision TEXT, "
        "reviewer_id TEXT, reviewer_role TEXT, reason TEXT, "
        "seconds_to_decision DOUBLE PRECISION",
        "interrupt_id, thread_id, graph_id, node, idx, raised_at, required_role, due_by, "
        "escalations, outcome, closed_at, decision, reviewer_id, reviewer_role, reason, "
        "seconds_to_decision",
    ),
}


@pytest.fixture(autouse=True)
def lasting_read_models(store_kind):
    if store_kind == "memory":
        pytest.skip("a memory store's read models end with their runner")


def as_left_before_versions(db: Database) -> None:
    """Turn caught-up read models into what the runner before versions left: the queue
    and the oversight log in their first shape, with their rows' first columns; no flow
    edits, refusals or versions tables."""
    with db.transaction() as cursor:
        for table in (VERSIONS, FLOW_EDITS, REFUSALS):
            cursor.execute(f"DROP TABLE {db.table(table)}")
        for table, (definition, columns) in FIRST_SHAPES.items():
            cursor.execute(f"SELECT {columns} FROM {db.table(table)}")
            kept = cursor.fetchall()
            cursor.execute(f"DROP TABLE {db.table(table)}")
            cursor.execute(f"CREATE TABLE {db.table(table)} ({definition})")
            marks = ", ".join(["%s"] * len(columns.split(", ")))
            cursor.executemany(f"INSERT INTO {db.table(table)} ({columns}) VALUES ({marks})", kept)


def versions(db: Database) -> dict[str, int]:
    return {name: int(version) for name, version in rows(db, VERSIONS)}


def warned(logs: list[dict]) -> list[tuple[str, int, int]]:
    return sorted(
        (log["projection"], log["recorded_version"], log["version"])
        for log in logs
        if log["event"] == WARNING
    )


def test_a_fresh_store_records_each_models_version_and_warns_of_nothing(store):
    with capture_logs() as logs:
        runner = runner_for(store)

    assert versions(runner.db) == {
        "pending_approvals": 4,
        "thread_index": 1,
        "oversight": 3,
        "memory_items": 1,
        "cron_index": 1,
        "assistant_index": 1,
        "change_log": 1,
        "decision_register": 2,
        "read_records": 1,
        "record_life": 1,
    }
    assert warned(logs) == []
    runner.close()


def test_models_of_a_first_shape_are_rebuilt_and_give_the_rows_of_a_rebuild_from_zero(store):
    # Given a history with every kind of thread and every hold-point story, and the read
    # models a rebuild from zero gives for it
    record_history(store)
    record_hold_points(store, "hp-")
    runner = runner_for(store)
    runner.rebuild()
    from_zero, head = read_models(runner.db, ALL), runner.head()
    # And those models as the runner before versions left them, caught up to the head
    as_left_before_versions(runner.db)
    assert positions(runner.db) == dict.fromkeys(ALL, head)
    runner.close()

    # When a runner with the queue at version 4 and the oversight log at 3 sets up
    with capture_logs() as logs:
        upgraded = runner_for(store)

    # Then it says it rebuilds those two and the decision register (at version 2), which
    # are back at position 0; the index is kept
    assert warned(logs) == [
        ("decision_register", 1, 2),
        ("oversight", 1, 3),
        ("pending_approvals", 1, 4),
    ]
    assert positions(upgraded.db) == {
        "pending_approvals": 0,
        "thread_index": head,
        "oversight": 0,
        "memory_items": head,
        "cron_index": head,
        "assistant_index": head,
        "change_log": head,
        "decision_register": 0,
        "read_records": head,
        "record_life": head,
    }
    assert versions(upgraded.db) == {
        "pending_approvals": 4,
        "thread_index": 1,
        "oversight": 3,
        "memory_items": 1,
        "cron_index": 1,
        "assistant_index": 1,
        "change_log": 1,
        "decision_register": 2,
        "read_records": 1,
        "record_life": 1,
    }
    # And its catch-up gives every row a rebuild from zero gives
    upgraded.catch_up()
    assert read_models(upgraded.db, ALL) == from_zero
    assert positions(upgraded.db) == dict.fromkeys(ALL, head)
    upgraded.close()


class ThreadIndexAtVersion2(ThreadIndexProjection):
    """The thread index, as if its tables had changed shape."""

    version = 2


def test_a_recorded_version_other_than_the_codes_rebuilds_that_model_alone(store):
    # Given read models caught up, their versions recorded
    record_history(store)
    runner = runner_for(store)
    runner.catch_up()
    before, head = read_models(runner.db, ALL), runner.head()
    runner.close()

    # When a runner has the thread index at version 2
    with capture_logs() as logs:
        changed = ProjectionRunner(store, [ThreadIndexAtVersion2()])

    # Then that model alone is dropped and set back to 0, and catching up rebuilds it
    assert warned(logs) == [("thread_index", 1, 2)]
    assert positions(changed.db) == dict.fromkeys(ALL, head) | {"thread_index": 0}
    assert rows(changed.db, "holdpoint_threads") == []
    changed.catch_up()
    assert read_models(changed.db, ALL) == before
    changed.close()
    # And a runner of the same version keeps its rows and position; going back rebuilds
    with capture_logs() as again:
        ProjectionRunner(store, [ThreadIndexAtVersion2()]).close()
        back = ProjectionRunner(store, [ThreadIndexProjection()])
    assert warned(again) == [("thread_index", 2, 1)]
    assert versions(back.db)["thread_index"] == 1
    back.close()
