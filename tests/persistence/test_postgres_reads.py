"""Reading an aggregate's events on PostgreSQL: our statement, rendered once per shape,
gives what the library's `select_events` gives, for every combination of bounds."""

from __future__ import annotations

import itertools
import uuid

from eventsourcing import postgres as library
from eventsourcing.persistence import StoredEvent

from domain.record.store import open_store


def test_every_shape_of_read_gives_the_librarys_rows(postgres_url):
    with open_store(postgres_url) as store:
        # Given an aggregate of five events, and another one beside it
        recorder = store.recorder
        wanted, other = uuid.uuid4(), uuid.uuid4()
        recorder.insert_events(
            [
                StoredEvent(aggregate, version, f"topic-{version}", b"{}")
                for aggregate in (wanted, other)
                for version in range(1, 6)
            ]
        )
        librarys = library.PostgresAggregateRecorder.select_events.__wrapped__  # type: ignore[attr-defined]
        bounds = itertools.product((None, 0, 2), (None, 4, 5), (False, True), (None, 1, 3))
        for gt, lte, desc, limit in bounds:
            # When it is read with these bounds, by us and by the library
            ours = recorder.select_events(wanted, gt=gt, lte=lte, desc=desc, limit=limit)
            theirs = librarys(recorder, wanted, gt=gt, lte=lte, desc=desc, limit=limit)
            # Then both give the same events, in the same order
            assert ours == theirs, (gt, lte, desc, limit)
            assert all(event.originator_id == wanted for event in ours)
        assert [e.originator_version for e in recorder.select_events(wanted, gt=2, lte=4)] == [3, 4]
