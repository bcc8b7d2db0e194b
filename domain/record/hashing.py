"""Canonical JSON and the per-thread hash chain.

Each event carries `prev_hash` (the hash of the event before it in its
thread, or `GENESIS_HASH`) and `event_hash`, a SHA-256 over the canonical
JSON of the event's type, thread, version, timestamp and fields. Canonical
JSON is `json.dumps` with sorted keys, no spaces, UTF-8 and no NaN, taken on
values already normalised to JSON (see `to_json`), so that hashing the event
read back from any store gives the same digest as hashing it when recorded.

`event_hash(..., recording=True)` may take the canonical bytes from a faster encoder
(`use_encoder`): the store installs orjson's (`integrity.fast_hash.canonical_bytes`, by
topic, as the domain imports no infrastructure), which gives the same bytes or None
where its text could differ (floats with an exponent, ...), and then the stdlib's are
taken.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

from domain.errors import NotSerializableError
from domain.record.json_limits import MAX_JSON_DEPTH, encoded_value_problem

GENESIS_HASH = "0" * 64
DEPTH_PROBLEM = f"it nests arrays and objects more than {MAX_JSON_DEPTH} levels deep"

_dumps = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode
_loads = json.loads
_dumps_unsorted = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode

CanonicalEncoder = Callable[[Any], "bytes | None"]
_encoder: list[CanonicalEncoder] = []  # the faster encoder, once installed


def use_encoder(encoder: CanonicalEncoder) -> None:
    """Take the events' canonical bytes from `encoder` where it gives them: it must return
    `canonical_json(value).encode()` or None (this process, from now on)."""
    _encoder[:] = [encoder]


def _canonical_bytes(value: Any) -> bytes:
    if _encoder:
        encoded = _encoder[0](value)
        if encoded is not None:
            return encoded
    return _dumps(value).encode()


def canonical_json(value: Any) -> str:
    """The one canonical text of a JSON value."""
    return _dumps(value)


def to_json(value: Any, what: str) -> Any:
    """Return `value` as plain JSON data (tuples become lists, and so on).

    Raises NotSerializableError, naming `what`, when it is not JSON or JSON that
    cannot be recorded (see `domain.record.json_limits`: too deep, NUL, lone surrogates).
    """
    if value is None or type(value) in (int, bool):
        return value
    if type(value) is dict and _flat_and_plain(value):
        return dict(value)
    try:
        text = _dumps_unsorted(value)
    except RecursionError:
        msg = f"{what} cannot be recorded: {DEPTH_PROBLEM}"
        raise NotSerializableError(msg) from None
    except (TypeError, ValueError) as error:
        where = _path_to_unserialisable(value)
        at = f" at {where}" if where else ""
        msg = f"{what} is not JSON-serialisable{at}: {error}"
        raise NotSerializableError(msg) from None
    problem = encoded_value_problem(text)
    if problem is not None:
        msg = f"{what} cannot be recorded: {problem}"
        raise NotSerializableError(msg)
    return value if type(value) is str else _loads(text)


def _flat_and_plain(value: dict[Any, Any]) -> bool:
    """Whether `value` is an object of ASCII keys and scalars that JSON holds as they are
    (ints, bools, nulls, finite floats, ASCII strings without NUL): a node's usual update,
    normalised by a copy instead of a round trip through JSON text."""
    for key, item in value.items():
        if type(key) is not str or not key.isascii() or "\x00" in key:
            return False
        kind = type(item)
        if kind is str:
            plain = item.isascii() and "\x00" not in item
        elif kind is float:
            plain = math.isfinite(item)
        else:
            plain = item is None or kind is int or kind is bool
        if not plain:
            return False
    return True


def _path_to_unserialisable(value: Any, path: str = "") -> str | None:
    """Where in `value` the first value JSON cannot hold is, as `['key'][0]`."""
    items: Any = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    elif not isinstance(value, str | int | float | bool | type(None)):
        return path
    for key, item in items:
        found = _path_to_unserialisable(item, f"{path}[{key!r}]")
        if found is not None:
            return found
    return None


def event_hash(
    event_type: str,
    thread_id: str,
    version: int,
    timestamp: datetime,
    prev_hash: str,
    fields: dict[str, Any],
    *,
    recording: bool = False,
) -> str:
    """The SHA-256 hex digest that chains one event to the one before it.

    Verification recomputes it by the stdlib's encoder alone (the reference). An event
    being `recording` is hashed by the faster encoder where one is installed: its fields
    are plain JSON with finite numbers (`to_json` makes them so), and there the encoder
    writes the stdlib's bytes. A stored event's fields, as the library decodes them, may
    hold values (a UUID, say) that the stdlib refuses and orjson writes: so not there."""
    body = {
        "type": event_type,
        "thread_id": thread_id,
        "version": version,
        "timestamp": timestamp.isoformat(),
        "prev_hash": prev_hash,
        "fields": fields,
    }
    encoded = _canonical_bytes(body) if recording else _dumps(body).encode()
    return hashlib.sha256(encoded).hexdigest()
