"""Moments as read-model text: written in UTC at a fixed width, and read back as the
same moment, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from projections.timestamps import parse_utc_text, utc_text

MOMENTS = st.datetimes(
    min_value=datetime(1970, 1, 2),  # naive bounds: the zone comes from `timezones`
    max_value=datetime(9998, 12, 30),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
    ),
)


@given(MOMENTS)
def test_a_moment_read_back_from_its_text_is_the_same_moment_in_utc(moment):
    text = utc_text(moment)
    assert len(text) == 27
    assert text.endswith("Z")
    read = parse_utc_text(text)
    assert read == moment
    assert read.utcoffset() == timedelta(0)


@given(MOMENTS, MOMENTS)
def test_text_order_is_time_order(first, second):
    assert (utc_text(first) < utc_text(second)) == (first < second)
