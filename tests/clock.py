"""A clock a test sets: the events a thread records are stamped with `clock.now`.

`domain.record.thread` stamps events with `datetime.now(UTC)`; `set_clock` replaces that
module's `datetime` with one whose `now()` reads the clock, for the test's duration.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pytest

import domain.record.thread


@dataclass
class Clock:
    now: datetime


def set_clock(monkeypatch: pytest.MonkeyPatch, start: datetime) -> Clock:
    """A clock at `start` that stamps every thread event until the test ends."""
    holder = Clock(start)

    class FakeDatetime(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
            return holder.now if tz is None else holder.now.astimezone(tz)

    monkeypatch.setattr(domain.record.thread, "datetime", FakeDatetime)
    return holder
