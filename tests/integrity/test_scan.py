"""The scanners read the log in position order, batch after batch, whatever the batch size;
PostgreSQL's reads the next batch while the last one is being checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from domain.record.store import open_store
from integrity import scan
from integrity.scan import scanner_for


@pytest.fixture
def scanner(recorded) -> Iterator[Any]:
    """A scanner of a store holding three refund threads."""
    url, _ = recorded
    with open_store(url) as store:
        found = scanner_for(store)
        try:
            yield found
        finally:
            found.close()


def test_small_batches_hold_the_rows_of_one_batch_in_the_same_order(scanner):
    # Given
    head = scanner.head()
    [whole] = list(scanner.batches(0, head, size=head + 1))

    # When
    small = list(scanner.batches(3, head - 2, size=5))

    # Then
    assert [len(rows) for rows in small[:-1]] == [5] * (len(small) - 1)
    assert [row for rows in small for row in rows] == [r for r in whole if 3 < r[0] <= head - 2]


def test_a_scanner_left_in_the_middle_of_its_batches_still_answers(scanner):
    # Given
    batches = scanner.batches(0, scanner.head(), size=2)
    first = next(batches)

    # When: left while the next batch is being read
    batches.close()
    found = scanner.first_events([first[0][1]])

    # Then
    assert list(found) == [first[0][1]]


def test_on_postgresql_a_range_starts_with_a_small_batch_then_full_ones(
    recorded, scanner, monkeypatch
):
    # Given the whole log, read in one batch
    url, _ = recorded
    head = scanner.head()
    [whole] = list(scanner.batches(0, head, size=head + 1))

    # When read with a first batch of 2 rows (nothing overlaps its read), then 5
    monkeypatch.setattr(scan, "FIRST_BATCH", 2)
    batches = list(scanner.batches(0, head, size=5))

    # Then the same rows, in order; only PostgreSQL's scanner (which reads ahead) starts small
    sizes = [len(rows) for rows in batches]
    first = 2 if url.startswith("postgresql") else 5
    assert sizes[:2] == [first, 5]
    assert [row for rows in batches for row in rows] == whole
