"""Five-field cron schedules (minute hour day-of-month month day-of-week), as LangGraph's
crons take them, and the next time one is due.

Each field is `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a list of
those; months and weekdays may be named (`jan`, `mon`), and 7 is Sunday as 0 is. As in
cron, when both day fields are restricted a day matching either is due. Times are in
the schedule's IANA time zone (UTC by default); a local time skipped by a clock change
is not due that day, and one repeated is due once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from domain.errors import InvalidScheduleError

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (  # name, lowest, highest, names
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, MONTHS),
    ("day of week", 0, 7, DAYS),
)
SEARCH_DAYS = 366 * 5  # a schedule due on no day within this (Feb 30th) is refused


@dataclass(frozen=True)
class CronSchedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day of month `*`
    any_weekday: bool  # day of week `*`
    zone: ZoneInfo

    def next_after(self, moment: datetime) -> datetime:
        """The first due time strictly after `moment` (aware), in UTC."""
        local = moment.astimezone(self.zone).replace(second=0, microsecond=0, tzinfo=None)
        day = local.date()
        for _ in range(SEARCH_DAYS):
            if day.month in self.months and self._day_matches(day.day, (day.isoweekday() % 7)):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        naive = datetime(day.year, day.month, day.day, hour, minute)
                        if naive <= local:
                            continue
                        due = _exact_local(naive, self.zone)
                        if due is not None and due > moment:
                            return due.astimezone(UTC)
            day += timedelta(days=1)
        raise InvalidScheduleError("the schedule is never due")

    def _day_matches(self, day: int, weekday: int) -> bool:
        in_days, in_weekdays = day in self.days, weekday in self.weekdays
        if self.any_day or self.any_weekday:
            return in_days and in_weekdays
        return in_days or in_weekdays


def parse(expression: str, timezone: str | None = None) -> CronSchedule:
    """The schedule of a five-field cron expression; InvalidScheduleError naming the field."""
    if not isinstance(expression, str):
        raise InvalidScheduleError("a schedule is a cron expression, e.g. '0 9 * * mon-fri'")
    parts = expression.split()
    if len(parts) != len(FIELDS):
        msg = (
            f"{expression!r} has {len(parts)} fields; a cron schedule has 5: "
            "minute hour day-of-month month day-of-week"
        )
        raise InvalidScheduleError(msg)
    values = [_field(part, *spec) for part, spec in zip(parts, FIELDS, strict=True)]
    weekdays = frozenset(0 if day == 7 else day for day in values[4])
    try:
        zone = ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidScheduleError(f"unknown time zone {timezone!r} (an IANA name)") from None
    schedule = CronSchedule(
        frozenset(values[0]),
        frozenset(values[1]),
        frozenset(values[2]),
        frozenset(values[3]),
        weekdays,
        parts[2] == "*",
        parts[4] == "*",
        zone,
    )
    schedule.next_after(datetime(2000, 1, 1, tzinfo=UTC))  # never due: refused now
    return schedule


def _field(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> set[int]:
    found: set[int] = set()
    for item in text.lower().split(","):
        base, _, step_text = item.partition("/")
        step = _number(step_text, name, 1, high) if step_text else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _value(first, name, low, high, names), _value(last, name, low, high, names)
        else:
            start = _value(base, name, low, high, names)
            end = high if step_text else start
        if start > end:
            raise InvalidScheduleError(f"{name}: range {item!r} runs backwards")
        found.update(range(start, end + 1, step))
    return found


def _value(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> int:
    if text in names:
        return names.index(text) + (1 if name == "month" else 0)
    return _number(text, name, low, high)


def _number(text: str, name: str, low: int, high: int) -> int:
    if not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
        raise InvalidScheduleError(f"{name}: {text!r} is not a value from {low} to {high}")
    return int(text)


def _exact_local(naive: datetime, zone: ZoneInfo) -> datetime | None:
    """The aware time of a local wall-clock time: None if the clock skipped it; the first
    of two if it was repeated."""
    aware = naive.replace(tzinfo=zone, fold=0)
    if aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != naive:
        return None  # in a gap: that local time did not happen
    return aware
