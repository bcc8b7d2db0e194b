"""The store's mapper decodes every stored event exactly as the library's mapper does.

Given an event stored by the library's mapper, when the store's mapper
(`persistence.event_mapper.EventMapper`) decodes it, then it is the same event: by
the fast path (orjson) where the state's only typed value is its timestamp,
by the library's path otherwise (other typed values, JSON that orjson reads
otherwise or not at all, escapes). Hypothesis checks it for any JSON values.
A stored event that makes no event (damaged) raises UndecodableEventError, naming it.
"""

from __future__ import annotations

import math
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import Mapper, MapperDeserialisationError, StoredEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from persistence.event_mapper import EventMapper, UndecodableEventError

json_values = st.recursive(  # what a node's update may hold (the domain refuses NaN)
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too: the library's path
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),  # control characters too: \u escapes, the library's path
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def mappers():
    with open_store("memory://") as store:
        assert isinstance(store.mapper, EventMapper)
        yield store.mapper, Mapper(transcoder=store.mapper.transcoder)


def _stored(mapper: Any, update: Any) -> StoredEvent:
    return mapper.to_stored_event(_completed(update))


def _completed(update: Any) -> Any:
    """A NodeCompleted event whose update is `update`, as a thread records it."""
    thread = WorkflowThread.start(
        thread_id="t-1",
        graph_id="g",
        graph_digest="d",
        channels={"x": None},
        initial={},
        waiting_edges={},
        metadata={},
        actor={"id": "agent", "role": "agent"},
    )
    thread._record(
        WorkflowThread.NodeCompleted,
        step=1,
        node="n",
        task_id="k",
        update=update,
        routes=[],
        duration_ms=0.5,
    )
    return thread.collect_events()[-1]


def _forged(stored: StoredEvent, update: bytes) -> StoredEvent:
    """The stored event with its update's JSON replaced, as no writer of ours writes it."""
    state = stored.state.replace(b'"update":{"x":1}', b'"update":' + update)
    assert state != stored.state
    return StoredEvent(stored.originator_id, stored.originator_version, stored.topic, state)


def _same(left: Any, right: Any) -> bool:
    """Equal values, NaN equal to NaN (json writes it, both paths read it back)."""
    if isinstance(left, float) and isinstance(right, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    if isinstance(left, dict) and isinstance(right, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return type(left) is type(right) and left == right


@settings(max_examples=300, deadline=None)
@given(update=st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_any_stored_event_decodes_to_the_librarys_event(mappers, update):
    fast, library = mappers
    stored = _stored(library, update)

    event, expected = fast.to_domain_event(stored), library.to_domain_event(stored)

    assert type(event) is type(expected)
    assert _same(vars(event), vars(expected))


@settings(max_examples=300, deadline=None)
@given(update=st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_a_threads_event_stored_by_orjson_reads_back_as_the_librarys_encoding_does(mappers, update):
    # Given a thread's event, whose fields are plain JSON
    fast, library = mappers
    event = _completed(update)

    # When the store's mapper stores it (orjson), and the library's does
    mine, theirs = fast.to_stored_event(event), library.to_stored_event(event)

    # Then the library reads both back as the same event
    assert (mine.originator_id, mine.originator_version, mine.topic) == (
        theirs.originator_id,
        theirs.originator_version,
        theirs.topic,
    )
    assert _same(vars(library.to_domain_event(mine)), vars(library.to_domain_event(theirs)))


def test_a_threads_event_without_floats_is_stored_byte_for_byte_as_the_library_stores_it(
    mappers,
):
    fast, library = mappers
    event = _completed({"amount": 12, "note": "ok ü \n", "items": [1, None, True]})

    assert fast.to_stored_event(event).state == library.to_stored_event(event).state


def test_a_float_is_spelled_as_orjson_spells_it_and_read_back_the_same(mappers):
    fast, library = mappers
    event = _completed({"small": 1e-7})

    stored = fast.to_stored_event(event)

    assert b'"small":1e-7' in stored.state  # the library's encoder writes 1e-07
    assert library.to_domain_event(stored).update == {"small": 1e-7}


def test_an_integer_beyond_64_bits_is_stored_exactly_by_the_librarys_encoder(mappers):
    fast, library = mappers
    event = _completed({"n": 2**70})

    stored = fast.to_stored_event(event)

    assert stored.state == library.to_stored_event(event).state
    assert library.to_domain_event(stored).update == {"n": 2**70}


def test_an_event_whose_only_typed_value_is_its_timestamp_takes_the_fast_path(mappers):
    fast, library = mappers
    stored = _stored(library, {"amount": 12.5, "note": "ok", "items": [1, 2]})

    event = fast.decode(stored.topic, stored.originator_id, stored.originator_version, stored.state)

    assert event is not None
    assert vars(event) == vars(library.to_domain_event(stored))
    assert isinstance(event.originator_id, UUID)


def test_digits_inside_a_string_do_not_leave_the_fast_path(mappers):
    """The genesis hash's 64 zeros (every ThreadStarted) and any hash's digit runs."""
    fast, library = mappers
    digits = {
        "prev_hash": "0" * 64,
        "event_hash": "ab" + "1" * 40,
        "phone": "x123456789012345678901",
    }
    stored = _forged(_stored(library, {"x": 1}), orjson.dumps(digits))

    event = fast.decode(stored.topic, stored.originator_id, 2, stored.state)

    assert event is not None
    assert event.update == digits


@pytest.mark.parametrize(
    ("why", "update"),
    [
        ("an integer beyond 64 bits", b'{"x":1180591620717411303424}'),
        ("a negative one, in a list", b'{"x":[1, -1180591620717411303424]}'),
        ("one after whitespace", b'{"x":\n 1180591620717411303424}'),
        ("a \\u escape", b'{"x":"bell\\u0007"}'),
        (
            "another typed value",
            b'{"x":{"_type_":"uuid_hex","_data_":"6a6de2507345448aab34e697aec32f87"}}',
        ),
        ("NaN, which orjson refuses", b'{"x":NaN}'),
        (
            "a key _type_ spelled with an escape",
            b'{"\\u005ftype_":"uuid_hex","_data_":"17b083e6bdd14832b25ef21bd068d96c"}',
        ),
    ],
)
def test_other_states_go_to_the_librarys_path(mappers, why, update):
    fast, library = mappers
    stored = _forged(_stored(library, {"x": 1}), update)

    assert fast.decode(stored.topic, stored.originator_id, 2, stored.state) is None, why
    expected = vars(library.to_domain_event(stored))
    assert _same(vars(fast.to_domain_event(stored)), expected)
    parts = (stored.topic, stored.originator_id, stored.originator_version, stored.state)
    assert _same(vars(fast.event_of(*parts)), expected)


# -- a stored event that makes no event ------------------------------------------


def _with_state(stored: StoredEvent, state: bytes, topic: str | None = None) -> StoredEvent:
    return StoredEvent(
        stored.originator_id, stored.originator_version, topic or stored.topic, state
    )


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda s: _with_state(s, s.state[:-7]), "its stored state is not JSON (JSONDecodeError: "),
        (lambda s: _with_state(s, b"[1, 2]"), "its stored state is not an event's object"),
        (lambda s: _with_state(s, s.state, s.topic + "Renamed"), "its topic names no event class"),
        (
            lambda s: _with_state(s, s.state.replace(b'"update":{"x":1},', b"")),
            "its stored state lacks the field(s) update",
        ),
    ],
    ids=["cut short", "not an object", "unknown topic", "a field missing"],
)
def test_a_damaged_state_raises_undecodable_event_error_naming_it(mappers, damage, why):
    # Given a stored event, damaged
    fast, library = mappers
    stored = damage(_stored(library, {"x": 1}))

    # When the store's mapper decodes it, by either of its doors
    for decode in (
        lambda: fast.to_domain_event(stored),
        lambda: fast.event_of(stored.topic, stored.originator_id, 2, stored.state),
    ):
        with pytest.raises(UndecodableEventError) as refused:
            decode()

        # Then the error names the event and says why (the library's own error class)
        error = refused.value
        assert isinstance(error, MapperDeserialisationError)
        assert (error.topic, error.originator_id, error.originator_version) == (
            stored.topic,
            stored.originator_id,
            2,
        )
        assert error.reason.startswith(why)
