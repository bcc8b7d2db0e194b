"""The fast hasher (orjson) gives exactly the hash of the reference (json module), always.

Where orjson would write a value differently from `domain.record.hashing.canonical_json`
the fast hasher hands the event to the reference; these properties hold for
any JSON value, any thread id and any UTC time (hypothesis), and for states
written by hand in forms the library never writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.integrity.decodable import reference_transcoder
from domain.integrity.diagnosis import ReferenceHasher
from domain.record.hashing import (
    GENESIS_HASH,
    canonical_json,
    event_hash,
    use_encoder,
)
from integrity.fast_hash import FastHasher, canonical_bytes

TOPIC = "domain.thread:WorkflowThread.NodeCompleted"
NOT_FIELDS = {"timestamp", "prev_hash", "event_hash", "originator_topic", "class_version"}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
fields_strategy = st.dictionaries(
    st.text(max_size=10).filter(lambda key: key not in NOT_FIELDS), json_values, max_size=6
)
moments = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


def stored(fields: dict, moment: datetime, prev: str, thread_id: str, version: int) -> bytes:
    """The state as the library stores it, with the hash Holdpoint records."""
    digest = event_hash("NodeCompleted", thread_id, version, moment, prev, fields)
    state = {"timestamp": moment, "prev_hash": prev, "event_hash": digest, **fields}
    return reference_transcoder().encode(state)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_orjson_canonical_bytes_are_the_reference_bytes_whenever_it_gives_any(value):
    # When
    fast = canonical_bytes(value)

    # Then
    try:
        reference = canonical_json(value).encode()
    except (ValueError, UnicodeEncodeError):
        return  # the reference refuses the value: nothing to be equal to
    assert fast is None or fast == reference


@settings(max_examples=300, deadline=None)
@given(fields_strategy, moments, st.text(min_size=1, max_size=12), st.integers(2, 10**6))
def test_the_fast_hasher_returns_what_the_reference_returns(fields, moment, thread_id, version):
    # Given
    state = stored(fields, moment, "ab" * 32, thread_id, version)

    # When
    fast = FastHasher()(TOPIC, state, thread_id, version)
    reference = ReferenceHasher()(TOPIC, state, thread_id, version)

    # Then
    assert fast == reference
    assert fast[3] == fast[2]  # the recomputed hash is the recorded one


@settings(max_examples=200, deadline=None)
@given(moments)
def test_every_time_the_library_writes_is_taken_as_canonical(moment):
    assert FastHasher().canonical_moment(moment.isoformat()) is True


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789-T:.+ Z", min_size=19, max_size=34))
def test_a_time_taken_as_canonical_is_what_isoformat_writes(text):
    if FastHasher().canonical_moment(text):
        assert datetime.fromisoformat(text).isoformat() == text


HAND_WRITTEN = [
    '"value":1E5',
    '"value":1e5',
    '"value":-0',
    '"value":0.00001',
    '"value":1e-7',
    '"value":9.9e-05',
    '"value":1e+16',
    '"value":123456789012345678901234567890',
    '"value":-9223372036854775809',
    '"value":{"\\u005ftype_":"datetime_iso","_data_":"2025-01-01T00:00:00+00:00"}',
    '"value":{"_type_":"decimal_str","_data_":"1.5"}',
    '"value":"caf\\u00e9"',
    '"value":NaN',
    '"value":"line\\nbreak\\u0000"',
]
STAMPS = [
    "2025-03-01T09:30:00.123456+00:00",
    "2025-03-01T09:30:00+00:00",
    "2025-03-01 09:30:00.123456+00:00",
    "2025-03-01T09:30:00.000000+00:00",
    "2025-03-01T09:30:00.123456+01:00",
    "2025-03-01T09:30:00.123456-00:00",
    "2025-02-30T09:30:00.123456+00:00",
    "2025-03-01T24:00:00.123456+00:00",
    "not a time",
]


@pytest.mark.parametrize("value", HAND_WRITTEN)
@pytest.mark.parametrize("stamp", STAMPS[:2])
def test_states_written_by_hand_get_the_reference_answer(value, stamp):
    # Given: the hash an attacker would compute with the json module, over what json reads
    text = (
        f'{{"timestamp":{{"_type_":"datetime_iso","_data_":"{stamp}"}},'
        f'"prev_hash":"{GENESIS_HASH}","event_hash":"x",{value}}}'
    ).encode()

    # When
    fast = FastHasher()(TOPIC, text, "t", 3)
    reference = ReferenceHasher()(TOPIC, text, "t", 3)

    # Then
    assert fast == reference


@pytest.mark.parametrize("stamp", STAMPS)
def test_times_written_by_hand_get_the_reference_answer(stamp):
    # Given
    text = json.dumps(
        {
            "timestamp": {"_type_": "datetime_iso", "_data_": stamp},
            "prev_hash": GENESIS_HASH,
            "event_hash": "x",
            "step": 1,
        },
        separators=(",", ":"),
    ).encode()

    # When
    fast = FastHasher()(TOPIC, text, "t", 3)

    # Then
    assert fast == ReferenceHasher()(TOPIC, text, "t", 3)


def test_the_events_of_a_refund_cycle_all_take_the_fast_path(store):
    # Given
    from tests.integrity.conftest import record_threads  # noqa: PLC0415

    record_threads(store, ("fast",))
    rows = store.recorder.select_notifications(start=1, limit=100)
    hasher = FastHasher()

    # When
    for notification in rows:
        thread_id = None if notification.originator_version == 1 else "fast"
        hasher(notification.topic, notification.state, thread_id, notification.originator_version)

    # Then
    assert hasher.slow == 0


def test_a_thread_id_with_a_lone_surrogate_gets_the_reference_answer():
    # Given: the id the reference reads from a tampered first event ("\\ud800" in its JSON)
    thread_id = "refund-\ud800"
    state = stored({"step": 1}, datetime(2025, 3, 1, tzinfo=UTC), GENESIS_HASH, "t", 2)

    # When
    fast = FastHasher()(TOPIC, state, thread_id, 2)

    # Then
    assert fast == ReferenceHasher()(TOPIC, state, thread_id, 2)


@settings(max_examples=300, deadline=None)
@given(fields_strategy, moments, st.text(min_size=1, max_size=12), st.integers(1, 10**6))
def test_a_hash_recorded_by_orjson_is_the_reference_hash(fields, moment, thread_id, version):
    # Given orjson's encoder in use for recording (as every store installs it)
    use_encoder(canonical_bytes)
    # When an event's hash is taken as it is recorded
    recorded = event_hash(
        "NodeCompleted", thread_id, version, moment, "ab" * 32, fields, recording=True
    )
    # Then it is the reference's, which verification recomputes
    assert recorded == event_hash("NodeCompleted", thread_id, version, moment, "ab" * 32, fields)


def test_a_value_orjson_writes_and_the_reference_refuses_is_left_to_the_reference():
    # datetimes, dataclasses and subclasses of JSON types: the reference decides
    assert canonical_bytes({"at": datetime(2025, 1, 1, tzinfo=UTC)}) is None
    assert canonical_bytes({"n": _Count(3)}) is None
    assert canonical_bytes([Point(1, 2)]) is None


class _Count(int):
    pass


@dataclass
class Point:
    x: int
    y: int
