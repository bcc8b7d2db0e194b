"""Whether a stored event can be decoded, by the rules the store's mapper reads it with.

The store's mapper (`persistence.event_mapper`) refuses a stored event that makes
no event: JSON that cannot be read, or that is not an object; a topic that names
no class; a state without a field its class has no default for (once upcast to
the class's version). The projector quarantines such an event and a read of its
thread is refused; `holdpoint verify` names it, by these same rules, here
written with the library's own JSON transcoder (the domain reads no orjson).

A thread's first event names the thread; damaged, it may still spell the name.
`thread_id_in` finds it, and names it only if the thread's id hashes to the
aggregate's (`thread_uuid`): a damaged start is named, never guessed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from functools import lru_cache
from typing import Any

from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, UUIDAsHex
from eventsourcing.utils import TopicError, resolve_topic

from domain.integrity.whole_log import thread_aggregate_id
from domain.record.aggregates import AGGREGATES

RECORDED = AGGREGATES  # imported: their topics resolve, in a verify worker too

_FROM_THE_ROW = frozenset({"originator_id", "originator_version"})
_THREAD_ID = re.compile(rb'"thread_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def reference_transcoder() -> JSONTranscoder:
    """The library's JSON transcoder, with the transcodings an application registers."""
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        transcoder.register(transcoding)
    return transcoder


@lru_cache(maxsize=256)
def event_class(topic: str) -> type | None:
    """The class a topic names, or None if it names none."""
    try:
        cls: type = resolve_topic(topic)
    except TopicError:
        return None
    return cls


@lru_cache(maxsize=256)
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


def problem_of(topic: str, data: Any) -> str | None:
    """Why a stored event cannot be decoded (None: it can), given its topic and its state
    as the library's transcoder read it (None: it could not)."""
    cls = event_class(topic)
    if cls is None:
        return f"its topic {topic!r} names no event class"
    if data is None:
        return "its stored state is not JSON"
    if not isinstance(data, dict):
        return "its stored state is not a JSON object"
    state = data
    from_version, class_version = data.get("class_version", 1), getattr(cls, "class_version", 1)
    if isinstance(from_version, int) and from_version < class_version:
        state = copy.deepcopy(data)
        state.pop("class_version", None)
        try:
            while from_version < class_version:
                getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(state)
                from_version += 1
        except Exception as error:  # an upcaster that fails on it: the event cannot be made
            return f"its stored state makes no event ({type(error).__name__}: {error})"
    missing = required_fields(cls) - state.keys()
    if missing:
        return f"its stored state lacks the field(s) {', '.join(sorted(missing))}"
    return None


class StateChecker:
    """A `domain.integrity.whole_log.Checker`: reads a stored state with the library's
    transcoder and says why it cannot be decoded (slow: for the few events of keys,
    refusals and seals, which have no hash chain to catch them)."""

    def __init__(self) -> None:
        self.transcoder = reference_transcoder()

    def __call__(self, topic: str, state: bytes) -> str | None:
        try:
            data = self.transcoder.decode(state)
        except Exception:  # any failure to decode: not JSON
            data = None
        return problem_of(topic, data)


def thread_id_in(aggregate_id: str, state: bytes) -> str | None:
    """The thread id a (damaged) first event still spells, if it is the aggregate's."""
    for match in _THREAD_ID.finditer(state):
        try:
            name = json.loads(b'"' + match.group(1) + b'"')
        except ValueError:
            continue
        if isinstance(name, str) and thread_aggregate_id(name) == aggregate_id:
            return name
    return None
