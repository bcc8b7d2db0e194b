"""Five-field cron schedules: what each field takes, and the next time one is due, in
UTC and across a time zone's clock changes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from domain.errors import InvalidScheduleError
from domain.schedule.cron_expression import parse


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def following(expression: str, start: datetime, count: int, zone: str | None = None):
    schedule, times = parse(expression, zone), []
    for _ in range(count):
        start = schedule.next_after(start)
        times.append(start)
    return times


def test_every_quarter_hour_in_office_hours_skips_the_weekend():
    # 2026-12-04 is a Friday
    assert following("*/15 9-17 * * mon-fri", at(2026, 12, 4, 17, 50), 2) == [
        at(2026, 12, 7, 9, 0),
        at(2026, 12, 7, 9, 15),
    ]


def test_a_time_due_is_strictly_after_the_moment_given():
    assert following("0 * * * *", at(2026, 1, 1, 10, 0), 1) == [at(2026, 1, 1, 11, 0)]


def test_lists_names_and_sunday_as_seven():
    assert following("0 12 1,15 jan,jul *", at(2026, 1, 1, 13), 2) == [
        at(2026, 1, 15, 12),
        at(2026, 7, 1, 12),
    ]
    assert following("0 0 * * 7", at(2026, 12, 4), 1) == [at(2026, 12, 6)]  # a Sunday


def test_both_day_fields_restricted_match_either_as_cron_does():
    # the 13th, or any Friday
    assert following("0 0 13 * fri", at(2026, 11, 1), 3) == [
        at(2026, 11, 6),
        at(2026, 11, 13),
        at(2026, 11, 20),
    ]


def test_a_local_time_skipped_by_the_clock_is_not_due_that_day():
    # Berlin skips 02:00-03:00 on 2026-03-29
    assert following("30 2 * * *", at(2026, 3, 28, 12), 1, "Europe/Berlin") == [
        at(2026, 3, 30, 0, 30)
    ]


def test_a_local_time_the_clock_repeats_is_due_once():
    # Berlin repeats 02:00-03:00 on 2026-10-25
    assert following("30 2 * * *", at(2026, 10, 24, 12), 2, "Europe/Berlin") == [
        at(2026, 10, 25, 0, 30),
        at(2026, 10, 26, 1, 30),
    ]


@pytest.mark.parametrize(
    ("expression", "zone", "says"),
    [
        ("* * * *", None, "has 4 fields"),
        ("60 * * * *", None, "minute"),
        ("* 24 * * *", None, "hour"),
        ("5-1 * * * *", None, "backwards"),
        ("0 0 30 2 *", None, "never due"),
        ("* * * * funday", None, "day of week"),
        ("0 0 * * *", "Mars/Olympus", "time zone"),
    ],
)
def test_a_schedule_that_cannot_be_kept_is_refused_naming_why(expression, zone, says):
    with pytest.raises(InvalidScheduleError, match=says):
        parse(expression, zone)
