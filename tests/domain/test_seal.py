"""Seals, pure: positions and gaps, and what a log compared with a seal reveals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.integrity.merkle import leaf_hash
from domain.integrity.seal import (
    Seal,
    SealedLog,
    SealFormatError,
    check_against_seal,
    position_of_leaf,
    present_before,
    seal_statement,
    subtract,
)
from domain.integrity.whole_log import FORGED, MISSING

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def leaves(count: int) -> bytes:
    return b"".join(leaf_hash(str(n).encode()) for n in range(count))


def sealed(count: int, gaps: list[tuple[int, int]]) -> Seal:
    position = count + sum(b - a + 1 for a, b in gaps)
    statement = seal_statement(position=position, leaves=leaves(count), gaps=gaps, sealed_at=NOW)
    return Seal.from_document(
        {**statement, "public_key": "00" * 32, "key_id": "0" * 16, "signature": ""}
    )


def test_subtracting_ranges_keeps_what_the_second_does_not_cover():
    assert subtract([(1, 10)], [(3, 4), (8, 12)]) == [(1, 2), (5, 7)]
    assert subtract([(5, 5)], [(5, 5)]) == []
    assert subtract([(1, 3), (7, 9)], []) == [(1, 3), (7, 9)]


def test_leaf_indexes_and_positions_skip_the_gaps():
    gaps = [(3, 4), (8, 8)]
    assert [position_of_leaf(i, gaps) for i in range(6)] == [1, 2, 5, 6, 7, 9]
    assert [present_before(p, gaps) for p in (1, 3, 5, 9, 10)] == [0, 2, 2, 5, 6]


def test_the_log_as_sealed_has_no_problems():
    # Given
    seal = sealed(10, [(4, 4)])

    # When
    problems = check_against_seal(seal, SealedLog(11, [(4, 4)], leaves(10), []), [], timedelta(0))

    # Then
    assert problems == []


def test_a_position_emptied_since_the_seal_is_reported_deleted():
    # Given
    seal = sealed(10, [])

    # When
    log = SealedLog(10, [(6, 6)], leaves(9), [])
    problems = check_against_seal(seal, log, [], timedelta(0))

    # Then
    assert [(p.kind, p.position) for p in problems] == [(MISSING, 6)]


def test_a_log_that_ends_before_the_seal_is_reported_truncated():
    # When
    problems = check_against_seal(sealed(10, []), SealedLog(7, [], leaves(7), []), [], timedelta(0))

    # Then
    assert [(p.kind, p.position, p.until) for p in problems] == [(MISSING, 8, 10)]


def test_an_event_dated_before_the_seal_but_recorded_after_it_is_backdated():
    # Given
    seal = sealed(5, [])
    late = [
        (6, "ab" * 16, 4, (NOW - timedelta(hours=1)).isoformat()),
        (7, "ab" * 16, 5, (NOW - timedelta(seconds=30)).isoformat()),  # in flight: tolerated
    ]

    # When
    problems = check_against_seal(seal, SealedLog(7, [], leaves(5), late), [], timedelta(minutes=5))

    # Then
    assert [(p.kind, p.position, p.version) for p in problems] == [(FORGED, 6, 4)]


@pytest.mark.parametrize(
    "document",
    [None, {}, {"format": "holdpoint-seal/1"}, {"format": "other"}],
)
def test_a_document_that_is_not_a_seal_is_refused(document):
    with pytest.raises(SealFormatError):
        Seal.from_document(document)
