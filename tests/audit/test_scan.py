"""The scanners read the log in position order, batch after batch, whatever the batch size;
PostgreSQL's reads the next batch while the last one is being checked."""

from __future__ import annotations

from audit.scan import scanner_for
from domain.store import open_store


def test_small_batches_hold_the_rows_of_one_batch_in_the_same_order(recorded):
    # Given
    url, _ = recorded
    with open_store(url) as store:
        scanner = scanner_for(store)
        try:
            head = scanner.head()
            [whole] = list(scanner.batches(0, head, size=head + 1))

            # When
            small = list(scanner.batches(3, head - 2, size=5))
        finally:
            scanner.close()

    # Then
    assert [len(rows) for rows in small[:-1]] == [5] * (len(small) - 1)
    assert [row for rows in small for row in rows] == [r for r in whole if 3 < r[0] <= head - 2]


def test_a_scanner_left_in_the_middle_of_its_batches_still_answers(recorded):
    # Given
    url, _ = recorded
    with open_store(url) as store:
        scanner = scanner_for(store)
        try:
            batches = scanner.batches(0, scanner.head(), size=2)
            first = next(batches)

            # When: left while the next batch is being read
            batches.close()
            found = scanner.first_events([first[0][1]])
        finally:
            scanner.close()

    # Then
    assert list(found) == [first[0][1]]
