"""A commit with a guard, on PostgreSQL: the guard's rows and the events are written
together in one statement, or neither is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.errors import ConcurrentUpdateError
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from persistence.commit_guard import CommitGuard, CommitRefusedError
from projections.database import database_for
from tests.graphs import refund_graph


@pytest.fixture
def store(postgres_url: str) -> Iterator[Workflows]:
    with open_store(postgres_url) as opened:
        db = database_for(opened)
        with db.transaction() as cursor:
            cursor.execute(f"CREATE TABLE {db.table('claims')} (name TEXT PRIMARY KEY)")
        yield opened
        db.close()


def claims(store: Workflows) -> list[str]:
    db = database_for(store)
    rows = db.statement(f"SELECT name FROM {db.table('claims')} ORDER BY name", write=False)
    db.close()
    return [str(row[0]) for row in rows]


def claim(store: Workflows, name: str) -> CommitGuard:
    """A guard that claims `name` in the claims table, once."""
    table = database_for(store).table("claims")
    return CommitGuard(
        f"guard AS (INSERT INTO {table} (name) VALUES (%s) ON CONFLICT DO NOTHING RETURNING name)",
        (name,),
    )


def a_new_thread(store: Workflows, thread_id: str) -> WorkflowThread:
    return refund_graph(store).start_thread(thread_id, {}, {"id": "amy", "role": "agent"})


def test_a_guard_that_holds_is_written_with_the_events(store):
    guard = claim(store, "t-1")

    store.record(a_new_thread(store, "t-1"), guard=guard)

    assert guard.applied
    assert claims(store) == ["t-1"]
    assert store.thread("t-1") is not None


def test_a_guard_that_does_not_hold_writes_no_event(store):
    store.record(a_new_thread(store, "t-1"), guard=claim(store, "taken"))
    refused = claim(store, "taken")

    with pytest.raises(CommitRefusedError):
        store.record(a_new_thread(store, "t-2"), guard=refused)

    assert not refused.applied
    assert store.thread("t-2") is None


def test_events_that_conflict_leave_the_guards_rows_unwritten(store):
    store.record(a_new_thread(store, "t-1"))

    with pytest.raises(ConcurrentUpdateError):  # t-1 is started already
        store.record(a_new_thread(store, "t-1"), guard=claim(store, "t-1"))

    assert claims(store) == []
