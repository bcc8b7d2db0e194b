"""The library's mapper, with a fast path for the states most events have.

The library's JSON transcoder decodes a stored state with the json module and
an object hook that it calls on every dict, looking for typed values
(`{"_type_": ..., "_data_": ...}`). Most of Holdpoint's events hold one typed
value, their timestamp, as the library writes it first: such a state is
decoded here with orjson, its timestamp parsed, and the event built exactly as
the library builds it (originator id and version set, upcast by its class
version). Decoding is then several times faster wherever events are read: a
thread loaded for a run, a history listing, a rebuild of the read models.

Anything else goes to the library's path: another typed value, a cipher or a
compressor, a `\\u` escape (which might spell a key `_type_` that a byte search
would miss), a number of 19 digits or more (orjson reads an integer beyond 64
bits as a float; the json module keeps it exact), and JSON that orjson does not
read (NaN, an infinite number), which it refuses.

Writing, an event whose class says its fields are plain JSON (`plain_json`: a thread's
events, the hot path) is encoded by orjson, not the library's json encoder: the same
JSON, its timestamp the library's typed value, its numbers maybe spelled otherwise
(`1e-7` for `1e-07`) and read back as the same values. An integer beyond 64 bits,
which orjson refuses, goes to the library's encoder. Any other event (a snapshot, a
key, whose state may hold UUIDs that orjson would write as plain strings) is the
library's. The hash chain covers the canonical JSON of the fields
(`domain.record.hashing`), never these bytes, so it is unchanged.

A stored state that holds sealed values (personal data encrypted under a data
subject's key: `domain/privacy`, whose `EnvelopeOpener` the store hands the mapper as
`sealed`, and a cheap byte search for its marker finds them) is decoded as any other,
then `sealed.open` opens each envelope with the keys as they are at that moment (none
is kept here): its value, or `[erased]` once the key is gone. Writing, an event that
carries its fields as recorded (sealed: what its hash covers, in the attribute
`sealed.attribute`) is stored in that form, never in the plaintext the domain folds.

A stored event that cannot be made into its event, by either path, raises
`UndecodableEventError` (the library's `MapperDeserialisationError`, naming the
topic, the originator and its version, and why): JSON that cannot be read, a
topic that names no class, a state that is not an object, or one that lacks a
field the event's class has no default for (the library would build the event
and fail later, wherever the field is first read). Readers turn it into their
own answer: a thread that cannot be read (`domain.record.application`), an
event the read models quarantine (`projections.quarantine`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from datetime import datetime
from typing import Any, NamedTuple, Protocol, cast
from uuid import UUID

import orjson
from eventsourcing.persistence import (
    Mapper,
    MapperDeserialisationError,
    StoredEvent,
    find_id_convertor,
)
from eventsourcing.utils import TopicError, get_topic, resolve_topic

TYPED_VALUE = b'"_type_"'
ESCAPE = b"\\u"
# A number of 19 digits or more might be an integer beyond 64 bits. It is looked for with
# a translation and a substring search (C, no regex): digits become "0", what may come
# before a number's first digit (",", ":", "[", "-", whitespace) becomes ":", the rest "x";
# so a run of digits inside a string (a hash, the genesis hash's 64 zeros) is not taken
# for one unless the string itself holds such a sign before it (then: the library's path).
NUMBER_START = b",:[- \t\n\r"
NUMBER_SHAPES = bytes(
    48 if 48 <= byte <= 57 else 58 if byte in NUMBER_START else 120 for byte in range(256)
)
LONG_NUMBER = b":" + b"0" * 19
PASS_DATETIMES = orjson.OPT_PASSTHROUGH_DATETIME  # to `_timestamp`, as the library writes them
_FROM_THE_ROW = frozenset({"originator_id", "originator_version"})


class Sealed(Protocol):
    """How events with sealed (personal) values are told apart, written and opened."""

    marker: bytes  # in a stored state that holds sealed values
    attribute: str  # of an event: its fields as recorded, sealed

    def open(self, fields: dict[str, Any]) -> None:
        """Replace the sealed values in a decoded event's fields, in place."""
        ...


class UndecodableEventError(MapperDeserialisationError):
    """A stored event that cannot be made into its event; `reason` says why."""

    def __init__(
        self, topic: str, originator_id: Any, originator_version: int, reason: str
    ) -> None:
        super().__init__(
            f"The event at version {originator_version} of {originator_id} ({topic}) "
            f"cannot be decoded: {reason}"
        )
        self.topic = topic
        self.originator_id = originator_id
        self.originator_version = originator_version
        self.reason = reason


class _EventClass(NamedTuple):
    cls: type
    class_version: int
    required: frozenset[str]  # the fields a stored state must hold


def required_fields(cls: type) -> frozenset[str]:
    """The fields of an event class without a default, but those the row itself gives."""
    if not dataclasses.is_dataclass(cls):
        return frozenset()
    return frozenset(
        field.name
        for field in dataclasses.fields(cls)
        if field.init
        and field.default is dataclasses.MISSING
        and field.default_factory is dataclasses.MISSING
        and field.name not in _FROM_THE_ROW
    )


class EventMapper(Mapper[UUID]):
    """A `Mapper` whose `to_domain_event` takes the fast path where it gives the same event,
    and raises `UndecodableEventError` for a stored event that makes no event."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plain = self.cipher is None and self.compressor is None
        self._classes: dict[str, _EventClass] = {}
        self._topics: dict[type, str] = {}
        self.sealed: Sealed | None = None  # set by the store (domain/privacy)

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        """The library's, but an event with personal values is stored as recorded: sealed,
        and an event of plain JSON is encoded by orjson (see the module's docstring)."""
        attribute = None if self.sealed is None else self.sealed.attribute
        protected = None if attribute is None else domain_event.__dict__.get(attribute)
        if protected is None:
            if self._plain and getattr(type(domain_event), "plain_json", False):
                return self._plain_stored(domain_event)
            return super().to_stored_event(domain_event)
        event_state = {k: v for k, v in vars(domain_event).items() if k != attribute}
        event_state.update(protected)
        originator_id = event_state.pop("originator_id")
        originator_version = event_state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            event_state["class_version"] = class_version
        stored_state = self.transcoder.encode(event_state)
        if self.compressor:
            stored_state = self.compressor.compress(stored_state)
        if self.cipher:
            stored_state = self.cipher.encrypt(stored_state)
        topic = get_topic(type(domain_event))
        return StoredEvent(originator_id, originator_version, topic, stored_state)

    def _plain_stored(self, domain_event: Any) -> StoredEvent:
        event_state = dict(vars(domain_event))
        originator_id = event_state.pop("originator_id")
        originator_version = event_state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            event_state["class_version"] = class_version
        try:
            state = orjson.dumps(event_state, default=_timestamp, option=PASS_DATETIMES)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits, say: as the library does
            state = self.transcoder.encode(event_state)
        topic = self._topics.get(type(domain_event))
        if topic is None:
            topic = self._topics[type(domain_event)] = get_topic(type(domain_event))
        return StoredEvent(originator_id, originator_version, topic, state)

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        return self.event_of(
            stored_event.topic,
            stored_event.originator_id,
            stored_event.originator_version,
            stored_event.state,
            stored_event,
        )

    def event_of(
        self,
        topic: str,
        originator_id: Any,
        version: int,
        state: bytes,
        stored: StoredEvent | None = None,
    ) -> Any:
        """The event of a stored record's parts, without a `StoredEvent` unless the fast
        path does not apply (for readers with their own SQL: the read models' log).

        Raises UndecodableEventError.
        """
        try:
            found = self._class(topic)
            event = self.decode(topic, originator_id, version, state)
            if event is None:
                stored = stored or StoredEvent(originator_id, version, topic, bytes(state))
                event = super().to_domain_event(stored)
        except UndecodableEventError:
            raise
        except Exception as error:  # whatever fails here, the stored event makes no event
            reason = _reason(error)
            raise UndecodableEventError(topic, originator_id, version, reason) from error
        if not found.required <= vars(event).keys():
            missing = ", ".join(sorted(found.required - vars(event).keys()))
            reason = f"its stored state lacks the field(s) {missing}"
            raise UndecodableEventError(topic, originator_id, version, reason)
        if self.sealed is not None and self.sealed.marker in state:
            self.sealed.open(event.__dict__)
        return event

    def decode(self, topic: str, originator_id: Any, version: int, state: bytes) -> Any | None:
        """The event of a stored state by the fast path, or None where it does not apply."""
        if (
            not self._plain
            or state.count(TYPED_VALUE) != 1
            or ESCAPE in state
            or LONG_NUMBER in state.translate(NUMBER_SHAPES)
        ):
            return None
        try:
            data = orjson.loads(state)
        except orjson.JSONDecodeError:
            return None
        stamp = data.get("timestamp") if type(data) is dict else None
        if type(stamp) is not dict or len(stamp) != 2 or stamp.get("_type_") != "datetime_iso":
            return None
        moment = stamp.get("_data_")
        if type(moment) is not str:
            return None
        try:
            data["timestamp"] = datetime.fromisoformat(moment)
        except ValueError:
            return None
        cls, class_version, _ = self._class(topic)
        convert = find_id_convertor(cls, cast("Hashable", type(originator_id)))
        data["originator_id"] = convert(originator_id)
        data["originator_version"] = version
        from_version = data.pop("class_version", 1)
        while from_version < class_version:
            getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(data)
            from_version += 1
        event: Any = object.__new__(cls)
        object.__setattr__(event, "__dict__", data)
        return event

    def _class(self, topic: str) -> _EventClass:
        found = self._classes.get(topic)
        if found is None:
            cls = resolve_topic(topic)
            found = _EventClass(cls, getattr(cls, "class_version", 1), required_fields(cls))
            self._classes[topic] = found
        return found


def _timestamp(value: Any) -> dict[str, str]:
    """A datetime as the library's transcoding writes it (the only typed value of an
    event of plain JSON); anything else is not for orjson's path."""
    if type(value) is datetime:
        return {"_type_": "datetime_iso", "_data_": value.isoformat()}
    raise TypeError(type(value).__name__)


def _reason(error: Exception) -> str:
    """Why a stored event made no event, in words."""
    if isinstance(error, TopicError):
        return "its topic names no event class"
    if isinstance(error, MapperDeserialisationError):
        cause = error.__cause__ or error
        return f"its stored state is not JSON ({type(cause).__name__}: {cause})"
    if isinstance(error, TypeError | AttributeError):
        return f"its stored state is not an event's object ({type(error).__name__}: {error})"
    return f"its stored state makes no event ({type(error).__name__}: {error})"
