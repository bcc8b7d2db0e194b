"""The index of rare kinds of event (`persistence.kind_index`), on SQLite and PostgreSQL.

Given a log of many thread events and a few keys and refusals, a read by a rare kind
gets exactly what a scan gets, and the database answers it from the index, not by
scanning the log; a read of a frequent kind is left to the library's query.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent

from domain.access.keyring import KEY_TOPICS, REFUSAL_TOPICS
from domain.record.store import open_store
from persistence import kind_index
from tests.fixtures.recorded_store import STORE

THREAD_TOPIC = "domain.thread:WorkflowThread.NodeCompleted"
SCHEMAS = Path(__file__).parents[2] / "docs" / "schemas" / "events.json"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    with open_store(url) as opened:
        yield opened


def stored(topic: str, state: bytes = b"{}") -> StoredEvent:
    return StoredEvent(uuid4(), 1, topic, state)


def mixed_log(store: Any, frequent: int = 5_000) -> list[int]:
    """`frequent` thread events, with a key, a refusal and a revoked key among them;
    the notification ids of the three rare ones."""
    recorder = store.recorder
    rare = []
    for round_, topic in enumerate([KEY_TOPICS[0], REFUSAL_TOPICS[0], KEY_TOPICS[1]]):
        for start in range(0, frequent // 3, 1_000):
            count = min(1_000, frequent // 3 - start)
            recorder.insert_events([stored(THREAD_TOPIC) for _ in range(count)])
        (notification_id,) = recorder.insert_events([stored(topic, b'{"n": %d}' % round_)])
        rare.append(notification_id)
    return rare


def scanned(store: Any, topics: list[str], **bounds: Any) -> list[int]:
    """The ids a scan of the whole log finds: the library's query with no topics."""
    every = store.recorder.select_notifications(None, 1_000_000)
    start, stop = bounds.get("start"), bounds.get("stop")
    inclusive = bounds.get("inclusive_of_start", True)
    return [
        n.id
        for n in every
        if n.topic in topics
        and (start is None or n.id > start or (inclusive and n.id == start))
        and (stop is None or n.id <= stop)
    ]


def test_a_read_by_rare_kinds_finds_what_a_scan_finds(store):
    # Given
    created, refused, revoked = mixed_log(store)
    recorder = store.recorder

    # Then each read, bounded or not, equals the scan's, events and all
    for topics, bounds in [
        (KEY_TOPICS, {}),
        (KEY_TOPICS, {"start": created}),
        (KEY_TOPICS, {"start": created, "inclusive_of_start": False}),
        (KEY_TOPICS + REFUSAL_TOPICS, {"stop": refused}),
        (REFUSAL_TOPICS, {"start": refused + 1}),
    ]:
        found = recorder.select_notifications(
            bounds.get("start"),
            10,
            bounds.get("stop"),
            topics,
            inclusive_of_start=bounds.get("inclusive_of_start", True),
        )
        assert [n.id for n in found] == scanned(store, topics, **bounds)
    (first,) = recorder.select_notifications(None, 1, topics=KEY_TOPICS)
    assert (first.id, first.topic, bytes(first.state)) == (created, KEY_TOPICS[0], b'{"n": 0}')
    assert recorder.select_notifications(revoked + 1, 10, topics=KEY_TOPICS) == []


def test_the_database_answers_a_read_by_rare_kind_from_the_index(store):
    # Given a log mostly of thread events
    mixed_log(store, frequent=20_000)
    table = store.recorder.events_table_name
    index = kind_index.index_name(table)

    # When the database plans the read of keys that `Keyring` makes
    plan = query_plan(store, table, KEY_TOPICS)

    # Then it reads the index, never the whole table
    assert index in plan, plan


def query_plan(store: Any, table: str, topics: list[str]) -> str:
    where = f"{kind_index.condition()} AND topic IN ({', '.join(repr(t) for t in topics)})"
    if store.recorder.__class__.__name__.startswith("AppendOnlySQLite"):
        with store.recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(
                f"EXPLAIN QUERY PLAN SELECT rowid FROM {table} "
                f"INDEXED BY {kind_index.index_name(table)} WHERE {where} "
                "ORDER BY rowid LIMIT 1"
            )
            return " ".join(str(row[3]) for row in cursor.fetchall())
    schema = store.recorder.datastore.schema
    with store.recorder.datastore.get_connection() as connection:
        connection.execute(f"ANALYZE {schema}.{table}")
        rows = connection.execute(
            f"EXPLAIN SELECT notification_id FROM {schema}.{table} WHERE {where} "
            "ORDER BY notification_id LIMIT 1"
        ).fetchall()
    return " ".join(str(next(iter(row.values()))) for row in rows)


def test_a_read_of_a_frequent_kind_is_the_librarys():
    assert kind_index.rare(KEY_TOPICS)
    assert kind_index.rare(REFUSAL_TOPICS)
    assert not kind_index.rare([])
    assert not kind_index.rare([*KEY_TOPICS, THREAD_TOPIC])


def test_the_frequent_kinds_are_a_threads_a_reads_and_a_memory_items():
    # Every kind the index leaves out is one of these aggregates' events, and every
    # other kind of the catalogue is indexed
    topics = json.loads(SCHEMAS.read_text())["events"]
    left_out = {t.split(":")[1].split(".")[0] for t in topics if not kind_index.rare([t])}
    assert left_out == {"WorkflowThread", "ReadLog", "MemoryItem"}


def test_a_store_written_before_the_index_gets_it_when_opened(tmp_path):
    # Given the committed store written before the index, copied
    copy = tmp_path / STORE.name
    shutil.copyfile(STORE, copy)

    # When it is opened, then the index is there and the keys read through it
    with open_store(f"sqlite:///{copy}") as store:
        table = store.recorder.events_table_name
        every = store.recorder.select_notifications(None, 1_000_000)
        keys = store.recorder.select_notifications(None, 1_000, topics=KEY_TOPICS)
        assert kind_index.index_name(table) in query_plan(store, table, KEY_TOPICS)
    assert [n.id for n in keys] == [n.id for n in every if n.topic in KEY_TOPICS]
    assert keys
