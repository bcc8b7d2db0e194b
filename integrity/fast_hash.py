"""The hash of a stored thread event, fast: orjson instead of the json module.

`domain.record.hashing.canonical_json` is `json.dumps` with sorted keys and no
spaces; `orjson.dumps(..., option=OPT_SORT_KEYS)` writes the same bytes for
the same JSON value except in a few places, which are sent to the slow,
exact `domain.integrity.diagnosis.ReferenceHasher` instead:

- floats below 1e-4 (orjson writes 0.00001 or 1e-7, Python 1e-05) and floats
  with an exponent, and integers beyond 64 bits (orjson reads them as floats):
  any number written `0.0000...` or with an `e` exponent;
- a timestamp not in the one form the library writes for a UTC time
  (`2025-03-01T09:30:00.123456+00:00`): the reference would re-format it;
- a `"_type_"` anywhere but the timestamp (the library would decode a typed
  value there), a state that orjson cannot read, a non-string thread id or
  prev_hash, a thread id that is not Unicode text (a lone surrogate, which
  the reference reads from a tampered first event and then passes on).

`canonical_bytes` also gives the canonical bytes of events being recorded
(`domain.record.hashing.event_hash(..., recording=True)`; every store installs it).

`tests/integrity/test_fast_hash.py` checks that both give the same hash for any
JSON value (hypothesis), and `tests/persistence/test_store_fixture.py` that
recording gives, byte for byte, each hash of the committed fixture store.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from domain.integrity.whole_log import Decoded, event_name

if TYPE_CHECKING:
    from domain.integrity.diagnosis import ReferenceHasher

# Sorted keys; and a datetime, dataclass or subclass of a JSON type is not written (the
# stdlib's encoder refuses the first two and may write a subclass otherwise): it raises,
# and the reference decides.
_SORTED = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# A number with an exponent (canonical output has no spaces: a number ends at , ] } or the end).
_EXPONENT = re.compile(rb"e[-+][0-9]+(?:[,\]}]|$)")
_SMALL = re.compile(rb"0\.0000")  # regexes: their literal search beats bytes.find on JSON
_TYPED = re.compile(rb'"_type_"')
_MOMENT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-5][0-9]:[0-5][0-9](?:\.(?!000000)[0-9]{6})?\+00:00",
    re.ASCII,
)
_UTC = "+00:00"
_HOURS_KEPT = 100_000


def _valid_hour(hour: str) -> bool:
    """Whether 'YYYY-MM-DDTHH' is a real hour written as isoformat writes it."""
    text = hour + ":00:00" + _UTC
    try:
        return datetime.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def canonical_bytes(value: Any) -> bytes | None:
    """`canonical_json(value).encode()` by orjson, or None where orjson may write otherwise."""
    try:
        text = orjson.dumps(value, option=_SORTED)
    except TypeError:  # an integer beyond 64 bits, a value that is not JSON, a subclass
        return None
    if _EXPONENT.search(text) or _SMALL.search(text) or _TYPED.search(text):
        return None
    return text


class FastHasher:
    """A `domain.integrity.whole_log.Hasher` that equals `ReferenceHasher`, several times faster."""

    def __init__(self) -> None:
        self._reference: ReferenceHasher | None = None
        self._names: dict[str, bytes] = {}
        self._hours: set[str] = set()  # real hours seen, as 'YYYY-MM-DDTHH'
        self.slow = 0  # events sent to the reference, for profiling

    def canonical_moment(self, moment: str) -> bool:
        """Whether `datetime.fromisoformat(moment).isoformat() == moment`, for UTC times."""
        return _MOMENT.fullmatch(moment) is not None and (
            moment[:13] in self._hours or self._real_hour(moment[:13])
        )

    def _real_hour(self, hour: str) -> bool:
        if not _valid_hour(hour):
            return False
        if len(self._hours) > _HOURS_KEPT:
            self._hours.clear()
        self._hours.add(hour)
        return True

    def __call__(self, topic: str, state: bytes, thread_id: str | None, version: int) -> Decoded:
        try:
            data = orjson.loads(state)
        except orjson.JSONDecodeError:
            return self._slow(topic, state, thread_id, version)
        if type(data) is not dict:
            return self._slow(topic, state, thread_id, version)
        stamp = data.pop("timestamp", None)
        moment = stamp.get("_data_") if type(stamp) is dict and len(stamp) == 2 else None
        prev = data.pop("prev_hash", None)
        claimed = data.pop("event_hash", None)
        named = data.get("thread_id")
        tid = named if thread_id is None else thread_id
        if (
            type(moment) is not str
            or stamp.get("_type_") != "datetime_iso"
            or type(prev) is not str
            or type(tid) is not str
            or _MOMENT.fullmatch(moment) is None  # canonical_moment, inlined: once per event
            or (moment[:13] not in self._hours and not self._real_hour(moment[:13]))
        ):
            return self._slow(topic, state, thread_id, version)
        data.pop("originator_topic", None)
        data.pop("class_version", None)
        fields = canonical_bytes(data)
        if fields is None:
            return self._slow(topic, state, thread_id, version)
        try:
            thread = orjson.dumps(tid)
        except TypeError:  # a lone surrogate, in a thread id the reference read from a tampered row
            return self._slow(topic, state, thread_id, version)
        name = self._names.get(topic)
        if name is None:
            name = self._names[topic] = orjson.dumps(event_name(topic))
        body = (
            b'{"fields":%b,"prev_hash":%b,"thread_id":%b,"timestamp":"%b","type":%b,"version":%d}'
            % (fields, orjson.dumps(prev), thread, moment.encode(), name, version)
        )
        return named, prev, claimed, hashlib.sha256(body).hexdigest(), moment

    def _slow(self, topic: str, state: bytes, thread_id: str | None, version: int) -> Decoded:
        self.slow += 1
        if self._reference is None:  # made when first needed: a worker starts without it
            from domain.integrity.diagnosis import ReferenceHasher  # noqa: PLC0415

            self._reference = ReferenceHasher()
        return self._reference(topic, state, thread_id, version)
