"""The whole-log check, pure: rows in position order in, suspects and problems out."""

from __future__ import annotations

import itertools

import pytest

from domain.integrity.decodable import reference_transcoder
from domain.integrity.diagnosis import ReferenceHasher, diagnose
from domain.integrity.whole_log import (
    MISSING,
    REORDERED,
    LogCheck,
    RangeCheck,
    Row,
    thread_aggregate_id,
)
from domain.record.store import open_store
from domain.record.thread_uuids import thread_uuid
from tests.integrity.conftest import record_threads


@pytest.fixture
def rows() -> list[Row]:
    with open_store("memory://") as store:
        record_threads(store, ("a", "b"))
        notifications = store.recorder.select_notifications(start=1, limit=1000)
    return [
        (n.id, n.originator_id.hex, n.originator_version, n.topic, n.state)  # type: ignore[union-attr]
        for n in notifications
    ]


def check(rows: list[Row], cuts: list[int], *, dense: bool = True):
    """Check the log cut into ranges at `cuts`, each range on its own, then joined."""
    head = rows[-1][0] if rows else 0
    bounds = [0, *cuts, head]
    joined = LogCheck(dense=dense)
    for after, upto in itertools.pairwise(bounds):
        part = RangeCheck(after, upto, ReferenceHasher())
        first_ids = {r[1]: "a" if r[1] == thread_uuid("a").hex else "b" for r in rows if r[2] == 1}
        part.feed([r for r in rows if after < r[0] <= upto], first_ids)
        joined.add(part.finish())
    return joined


@pytest.mark.parametrize("cuts", [[], [1], [9], [17], [5, 12, 16]])
def test_a_whole_log_verifies_however_it_is_cut_into_ranges(rows, cuts):
    # When
    joined = check(rows, cuts)
    verdict = joined.finish()

    # Then
    assert verdict.ok is True
    assert verdict.suspects == {}
    assert (verdict.events, verdict.threads, verdict.head) == (18, 2, 18)


@pytest.mark.parametrize("cuts", [[], [7], [3, 11]])
def test_a_version_recorded_before_the_one_before_it_is_suspected_in_any_range(rows, cuts):
    # Given: a's versions 6 and 7 trade positions
    swapped = list(rows)
    six = next(i for i, r in enumerate(rows) if r[1] == thread_uuid("a").hex and r[2] == 6)
    seven = next(i for i, r in enumerate(rows) if r[1] == thread_uuid("a").hex and r[2] == 7)
    swapped[six] = (rows[six][0], *rows[seven][1:])
    swapped[seven] = (rows[seven][0], *rows[six][1:])

    # When
    verdict = check(swapped, cuts).verdict
    problems = diagnose(
        thread_uuid("a").hex,
        [r for r in swapped if r[1] == thread_uuid("a").hex],
        reference_transcoder(),
    )

    # Then
    assert list(verdict.suspects) == [thread_uuid("a").hex]
    assert [(p.kind, p.version) for p in problems] == [(REORDERED, 6)]


def test_a_hole_in_a_dense_log_is_a_deletion_and_in_a_sparse_one_only_a_gap(rows):
    # Given: position 17 gone
    holed = [r for r in rows if r[0] != 17]

    # When
    dense = check(holed, []).finish()
    sparse = check(holed, [], dense=False).finish()

    # Then
    assert dense.gaps == sparse.gaps == [(17, 17)]
    assert [(p.kind, p.position) for p in dense.problems] == [(MISSING, 17)]
    assert sparse.problems == []


def test_the_aggregate_id_of_a_thread_is_computed_as_thread_uuid_does():
    for thread_id in ("a", "refund-0000042", "ünïcode", ""):
        assert thread_aggregate_id(thread_id) == thread_uuid(thread_id).hex
