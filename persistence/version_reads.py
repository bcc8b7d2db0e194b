"""A thread as of a version in one query: the statement both SQL stores run.

`domain.record.application.ReadsAtVersion` is what it answers: the latest snapshot at
or before the version, the events from that snapshot's own version (from the
first without one) to the last wanted, and, when asked, the aggregate's latest
version. Each row is tagged with its part, and the rows come in part order,
then in version order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

SNAPSHOT, EVENT, HEAD = 0, 1, 2


def select_at_sql(
    events: str, snapshots: str | None, marks: Mapping[str, str], *, head: bool
) -> str:
    """The statement, on the (quoted) tables `events` and `snapshots` (None: no snapshot
    looked for); its parameters `id`, `version` and `upto` are written as `marks` says.

    The head is a second scan of the events table: on PostgreSQL it adds about
    a third to the statement's planning, and more to a connection's first
    read, so it is only there when asked (`head`).
    """
    id_, version, upto = marks["id"], marks["version"], marks["upto"]
    start, first = "", "1"
    if snapshots is not None:
        start = (
            f"WITH snapshot AS (SELECT originator_version, topic, state FROM {snapshots} "
            f"WHERE originator_id = {id_} AND originator_version <= {version} "
            "ORDER BY originator_version DESC LIMIT 1) "
            f"SELECT {SNAPSHOT} AS part, originator_version, topic, state FROM snapshot "
            "UNION ALL "
        )
        first = "coalesce((SELECT originator_version FROM snapshot), 1)"
    last = (
        f"UNION ALL SELECT {HEAD}, max(originator_version), NULL, NULL FROM {events} "
        f"WHERE originator_id = {id_} "
        if head
        else ""
    )
    return (
        f"{start}SELECT {EVENT} AS part, originator_version, topic, state FROM {events} "
        f"WHERE originator_id = {id_} AND originator_version >= {first} "
        f"AND originator_version <= {upto} "
        f"{last}ORDER BY part, originator_version"
    )


def split_rows(
    originator_id: UUID, rows: Iterable[Mapping[str, Any]]
) -> tuple[StoredEvent | None, list[StoredEvent], int | None]:
    """The snapshot (or None), the events and the latest version in `rows` (0: none
    recorded; None: not asked for)."""
    snapshot: StoredEvent | None = None
    events: list[StoredEvent] = []
    head: int | None = None
    for row in rows:
        part, number = row["part"], row["originator_version"]
        if part == HEAD:
            head = int(number or 0)
            continue
        stored = StoredEvent(originator_id, number, row["topic"], bytes(row["state"]))
        if part == SNAPSHOT:
            snapshot = stored
        else:
            events.append(stored)
    return snapshot, events, head
