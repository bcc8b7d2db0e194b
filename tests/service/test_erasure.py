"""The erasure report, in process, on every store kind (the CLI's is tests/api/cli)."""

from __future__ import annotations

import sqlite3
from typing import Any

from service.erasure import EVENTS, KEYS, _truncate_wal, erase
from tests.personal_threads import ALICE, BOB, REVIEWER, decide, refund_graph, start


def test_the_report_names_each_place_and_finds_nothing_after(store):
    # Given two customers' refunds
    graph = refund_graph(store)
    start(graph, "alice-1", ALICE)
    decide(graph, "alice-1")
    start(graph, "bob-1", BOB)
    said: list[str] = []
    # When Alice is erased
    report = erase(store, ALICE["customer_id"], REVIEWER, "request 12", said.append)
    # Then the report covers the events and the keys, and finds nothing of her after
    kinds = {place.kind for place in report.places}
    assert {EVENTS, KEYS} <= kinds
    assert report.clean
    assert all(place.after == 0 for place in report.places)
    assert report.threads == ["alice-1"]
    assert report.values >= 5
    assert report.searched >= len(ALICE)  # her id, email and name, and their JSON forms
    assert said[0].startswith("Destroyed the key of subject ")
    # And erasing her again finds nothing more to erase
    again = erase(store, ALICE["customer_id"], REVIEWER, "request 13")
    assert (again.key_destroyed, again.values, again.clean) == (False, report.values, True)


class _EndsTheReadOnBusy(sqlite3.Connection):
    """Ends a reader's transaction the first time a checkpoint answers busy: what a
    server's own checkpoint or read does a few milliseconds later."""

    reader: sqlite3.Connection

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = super().execute(sql, *args)
        if "wal_checkpoint" not in sql:
            return cursor
        row = cursor.fetchone()
        if row[0]:
            self.reader.rollback()
        return _Answer(row)  # type: ignore[return-value]


class _Answer:
    def __init__(self, row: tuple[int, int, int]) -> None:
        self.row = row

    def fetchone(self) -> tuple[int, int, int]:
        return self.row


def test_a_wal_busy_for_a_moment_is_truncated_not_reported_busy(tmp_path):
    # Given a WAL database whose reader holds an old snapshot while a write lands
    path = tmp_path / "w.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("CREATE TABLE t (v TEXT)")
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchone()
    writer.execute("INSERT INTO t VALUES ('x')")
    connection = sqlite3.connect(path, timeout=0, factory=_EndsTheReadOnBusy)
    connection.reader = reader
    # When the erasure truncates the WAL, and the first try is answered busy
    busy = _truncate_wal(connection)
    # Then it tries again once the reader is done, and the WAL is empty
    assert not busy
    assert (tmp_path / "w.db-wal").stat().st_size == 0
