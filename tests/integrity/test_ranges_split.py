"""The log is cut into ranges that cover it exactly, the last ones smaller, so that the
processes checking it finish together."""

from __future__ import annotations

import pytest

from integrity.verify_log import LAST_RANGE, RANGES_PER_JOB, _ranges


@pytest.mark.parametrize("head", [1, 7, 99_999, 100_000, 123_457, 1_000_000])
@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_the_ranges_cover_every_position_once_in_order(head, jobs):
    # When
    ranges = _ranges(head, jobs)

    # Then
    assert ranges[0][0] == 0
    assert ranges[-1][1] == head
    assert all(after < upto for after, upto in ranges)
    assert all(ranges[n][1] == ranges[n + 1][0] for n in range(len(ranges) - 1))


def test_the_last_ranges_are_smaller_than_the_first():
    # When
    sizes = [upto - after for after, upto in _ranges(1_000_000, 2)]

    # Then
    assert sizes[0] == 1_000_000 // (2 * RANGES_PER_JOB)
    assert max(sizes[-4:]) == LAST_RANGE
    assert sizes == sorted(sizes[:-1], reverse=True) + sizes[-1:]


def test_a_short_log_is_cut_in_equal_ranges():
    # When
    sizes = {upto - after for after, upto in _ranges(64_000, 2)}

    # Then
    assert sizes == {2_000}
