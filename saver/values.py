"""The values of real LangGraph graphs as JSON an auditor can read, and back.

LangGraph's own savers store channel values and writes as msgpack (or pickle) blobs.
Holdpoint records them in its events as JSON, so that the record says what a thread held
in words: a LangChain message is its `type`, `content`, `tool_calls`, `id` and `name`;
a pydantic model, a dataclass, a date, a set are tagged objects with their fields. Each
comes back as the same object (`from_record(to_record(v)) == v`), but a tuple, which comes
back a list, as LangGraph's own savers give it back (msgpack has no tuple).

A tagged object is a JSON object with the key `$type`:

- `error`: an exception, read back as its `repr` (as LangGraph's own savers do);
- `message`: a LangChain message (`type` names its class: human, ai, tool, system...),
  with its fields, those at their default left out;
- `interrupt`, `send`: LangGraph's `Interrupt` and `Send` (an interrupt's response schema
  as `schema`: its JSON schema, and its class's name when it has one);
- `pydantic`, `dataclass`, `namedtuple`, `enum`: an instance of `class`
  ("module:QualName"), with its fields or value;
- `set`, `frozenset`, `deque`, `dict` (a dict whose keys are not all strings, or that has
  a `$type` key itself; a tuple among its keys as `tuple`), `bytes`, `datetime`, `date`,
  `time`, `timedelta`, `timezone`, `uuid`, `decimal`, `path`, `float` (NaN and the
  infinities), `int` (beyond 64 bits), `str` (text JSON cannot store: NUL, a lone
  surrogate);
- `serialized`: a value with no JSON form, in LangGraph's own typed serialization
  (msgpack, base64), shown to auditors as such. Pickle is never used: a value that even
  msgpack cannot hold is refused (`NotRecordableError`), naming its type.

A class is restored only if it is a pydantic model, a dataclass, a named tuple or an
enum: the record names classes, and reading it must not call anything else.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import functools
import importlib
import math
import pathlib
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt, Send
from pydantic import BaseModel, TypeAdapter

from domain.errors import NotSerializableError
from domain.record.json_limits import MAX_JSON_DEPTH

TAG = "$type"
INT64 = 2**63
_SERDE = JsonPlusSerializer()  # pickle_fallback off: never a pickle


class NotRecordableError(NotSerializableError):
    """A value has no JSON form and LangGraph's serializer cannot hold it either."""


def to_record(value: Any) -> Any:
    """`value` as JSON for an event (see the module's docstring)."""
    return _encode(value, 0)


def from_record(data: Any) -> Any:
    """The value `to_record` recorded as `data`."""
    if type(data) is list:
        return [from_record(item) for item in data]
    if type(data) is dict:
        tag = data.get(TAG)
        if tag is None:
            return {key: from_record(item) for key, item in data.items()}
        return _DECODERS[tag](data)
    return data


# -- encoding ------------------------------------------------------------------------


def _encode(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str:
        return value if _storable(value) else _text(value)
    if kind is int:
        return value if -INT64 <= value < INT64 else {TAG: "int", "value": str(value)}
    if value is None or kind is bool:
        return value
    if kind is float:
        return value if math.isfinite(value) else {TAG: "float", "value": repr(value)}
    if depth >= MAX_JSON_DEPTH - 2:  # leave room for the tags' own nesting
        return _serialized(value)
    depth += 1
    if kind is list:
        return [_encode(item, depth) for item in value]
    if kind is dict:
        if TAG not in value and all(type(key) is str for key in value):
            return {key: _encode(item, depth) for key, item in value.items()}
        return {
            TAG: "dict",
            "items": [[_key(k, depth), _encode(v, depth)] for k, v in value.items()],
        }
    if isinstance(value, BaseMessage):
        return _message(value, depth)
    for cls, encode in _ENCODERS:
        if isinstance(value, cls):
            return encode(value, depth)
    return _serialized(value)


def _storable(text: str) -> bool:
    """Whether a string can be stored as JSON text (no NUL, no lone surrogate)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(text: str) -> dict[str, Any]:
    raw = text.encode("utf-8", "surrogatepass")
    return {TAG: "str", "base64": base64.b64encode(raw).decode()}


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _message(message: BaseMessage, depth: int) -> dict[str, Any]:
    record: dict[str, Any] = {TAG: "message", "type": message.type}
    for name, default in _defaults(type(message)).items():
        item = getattr(message, name)
        if default is _REQUIRED or item != default:
            record[name] = _encode(item, depth)
    if _MESSAGE_CLASSES.get(message.type) is not type(message):
        record["class"] = _class_name(type(message))
    return record


_REQUIRED = object()


@functools.cache
def _defaults(cls: type[BaseModel]) -> dict[str, Any]:
    """A message class's fields but `type`, each with its default (or `_REQUIRED`): a
    field at its default is left out of the record, which then reads as the message."""
    return {
        name: _REQUIRED if field.is_required() else field.get_default(call_default_factory=True)
        for name, field in cls.model_fields.items()
        if name != "type"
    }


def _model(model: BaseModel, depth: int) -> dict[str, Any]:
    data = {name: getattr(model, name) for name in type(model).model_fields}
    return {TAG: "pydantic", "class": _class_name(type(model)), "data": _encode(data, depth)}


def _dataclass(instance: Any, depth: int) -> dict[str, Any]:
    fields = {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance)}
    return {
        TAG: "dataclass",
        "class": _class_name(type(instance)),
        "fields": _encode(fields, depth),
    }


def _interrupt(interrupt: Interrupt, depth: int) -> dict[str, Any]:
    record = {TAG: "interrupt", "id": interrupt.id, "value": _encode(interrupt.value, depth)}
    schema = interrupt.response_schema
    if schema is not None:
        record["response_schema"] = _schema(schema, depth)
    return record


def _schema(schema: Any, depth: int) -> Any:
    """An interrupt's `response_schema`: a JSON schema as it is; a type (a pydantic model, a
    TypedDict, a union made at run time) as its JSON schema, with its class's name when
    it has one a reader may restore."""
    if isinstance(schema, dict):
        return _encode(schema, depth)
    try:
        json_schema = TypeAdapter(schema).json_schema()
    except Exception:  # a type pydantic cannot describe: its name, at least
        json_schema = {"title": getattr(schema, "__name__", repr(schema))}
    record = {TAG: "schema", "json_schema": _encode(json_schema, depth)}
    if isinstance(schema, type):
        record["class"] = _class_name(schema)
    return record


def _send(send: Send, depth: int) -> dict[str, Any]:
    record = {TAG: "send", "node": send.node, "arg": _encode(send.arg, depth)}
    timeout = getattr(send, "timeout", None)
    if timeout is not None:
        record["timeout"] = _encode(timeout, depth)
    return record


def _tuple(value: tuple[Any, ...], depth: int) -> Any:
    """A named tuple as its class and fields; any other tuple as a list, as LangGraph's own
    savers give it back (msgpack has no tuple): a program reads the same value from either
    saver. A dict's tuple key keeps its kind (`_key`)."""
    if hasattr(value, "_asdict") and hasattr(type(value), "_fields"):
        fields = _encode(dict(value._asdict()), depth)
        return {TAG: "namedtuple", "class": _class_name(type(value)), "fields": fields}
    return [_encode(item, depth) for item in value]


def _key(key: Any, depth: int) -> Any:
    """A dict's key (in a `dict` tag), a tuple kept a tuple: a list cannot be a key."""
    if type(key) is tuple:
        return {TAG: "tuple", "items": [_key(item, depth) for item in key]}
    return _encode(key, depth)


def _collection(value: Any, depth: int) -> dict[str, Any]:
    name = {set: "set", frozenset: "frozenset", deque: "deque"}[type(value)]  # type: ignore[index]
    items = [_encode(item, depth) for item in value]
    if name != "deque":
        items.sort(key=repr)  # a set has no order: record one that does not vary
    return {TAG: name, "items": items}


def _serialized(value: Any) -> dict[str, Any]:
    """LangGraph's typed serialization of a value JSON cannot hold (never pickle)."""
    try:
        kind, data = _SERDE.dumps_typed(value)
    except Exception as error:
        msg = (
            f"A value of type {type(value).__qualname__} cannot be recorded: it has no JSON "
            f"form and LangGraph's serializer cannot hold it either ({error})"
        )
        raise NotRecordableError(msg) from None
    return {TAG: "serialized", "format": kind, "base64": base64.b64encode(data).decode()}


def _datetime(value: dt.datetime, _: int) -> dict[str, Any]:
    return {TAG: "datetime", "iso": value.isoformat()}


def _date(value: dt.date, _: int) -> dict[str, Any]:
    return {TAG: "date", "iso": value.isoformat()}


def _time(value: dt.time, _: int) -> dict[str, Any]:
    return {TAG: "time", "iso": value.isoformat()}


def _timedelta(value: dt.timedelta, _: int) -> dict[str, Any]:
    return {
        TAG: "timedelta",
        "seconds": value.total_seconds(),
        "days": value.days,
        "s": value.seconds,
        "us": value.microseconds,
    }


def _uuid(value: uuid.UUID, _: int) -> dict[str, Any]:
    return {TAG: "uuid", "value": str(value)}


def _decimal(value: decimal.Decimal, _: int) -> dict[str, Any]:
    return {TAG: "decimal", "value": str(value)}


def _bytes(value: bytes | bytearray, _: int) -> dict[str, Any]:
    kind = "bytearray" if isinstance(value, bytearray) else "bytes"
    return {TAG: kind, "base64": base64.b64encode(bytes(value)).decode()}


def _enum(value: enum.Enum, depth: int) -> dict[str, Any]:
    return {TAG: "enum", "class": _class_name(type(value)), "value": _encode(value.value, depth)}


def _path(value: pathlib.PurePath, _: int) -> dict[str, Any]:
    return {TAG: "path", "value": str(value)}


def _timezone(value: dt.timezone, _: int) -> dict[str, Any]:
    offset = value.utcoffset(None)
    return {TAG: "timezone", "seconds": offset.total_seconds(), "name": value.tzname(None)}


def _error(value: BaseException, _: int) -> dict[str, Any]:
    """An exception (a task's error), as LangGraph's savers keep it: read back as its
    `repr`; its type and message are kept apart for the record's NodeFailed."""
    return {TAG: "error", "type": type(value).__name__, "message": str(value), "repr": repr(value)}


def _generic_dataclass(value: Any, depth: int) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dataclass(value, depth)
    return _serialized(value)


# Most specific first: an Interrupt is a dataclass, a datetime is a date, a bool an int.
_ENCODERS: tuple[tuple[type, Callable[[Any, int], Any]], ...] = (
    (Interrupt, _interrupt),
    (Send, _send),
    (BaseModel, _model),
    (tuple, _tuple),
    (set, _collection),
    (frozenset, _collection),
    (deque, _collection),
    (dt.datetime, _datetime),
    (dt.date, _date),
    (dt.time, _time),
    (dt.timedelta, _timedelta),
    (dt.timezone, _timezone),
    (uuid.UUID, _uuid),
    (decimal.Decimal, _decimal),
    (bytes, _bytes),
    (bytearray, _bytes),
    (enum.Enum, _enum),
    (pathlib.PurePath, _path),
    (BaseException, _error),
    (str, lambda value, _: _encode(str(value), 0)),  # a str subclass: its text
    (int, lambda value, _: _encode(int(value), 0)),
    (float, lambda value, _: _encode(float(value), 0)),
    (list, lambda value, depth: [_encode(item, depth) for item in value]),
    (dict, lambda value, depth: _encode(dict(value), depth - 1)),
    (object, _generic_dataclass),
)


# -- decoding ------------------------------------------------------------------------


def _message_classes() -> dict[str, type[BaseMessage]]:
    from langchain_core import messages  # noqa: PLC0415 - the classes, by their `type`

    classes: dict[str, type[BaseMessage]] = {}
    for name in sorted(dir(messages)):
        cls = getattr(messages, name)
        if isinstance(cls, type) and issubclass(cls, BaseMessage) and cls is not BaseMessage:
            field = cls.model_fields.get("type")
            kind = None if field is None else field.get_default()
            if isinstance(kind, str):
                classes.setdefault(kind, cls)
    return classes


_MESSAGE_CLASSES = _message_classes()


def _resolve(name: str, allowed: Callable[[type], bool]) -> Any:
    """The class a record names, if `allowed` (only such classes are imported)."""
    module, _, qualname = name.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    if not (isinstance(found, type) and allowed(found)):
        msg = f"The record names {name}, which is not a class Holdpoint restores"
        raise NotSerializableError(msg)
    return found


def _is_model(cls: type) -> bool:
    return issubclass(cls, BaseModel)


def _is_message(cls: type) -> bool:
    return issubclass(cls, BaseMessage)


def _is_enum(cls: type) -> bool:
    return issubclass(cls, enum.Enum)


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _is_schema(cls: type) -> bool:
    return _is_model(cls) or dataclasses.is_dataclass(cls)


def _decode_message(data: dict[str, Any]) -> BaseMessage:
    fields = {k: from_record(v) for k, v in data.items() if k not in (TAG, "type", "class")}
    if "class" in data:
        cls = _resolve(data["class"], _is_message)
    else:
        cls = _MESSAGE_CLASSES[data["type"]]
    message: BaseMessage = cls(**fields)
    return message


def _decode_dataclass(data: dict[str, Any]) -> Any:
    cls = _resolve(data["class"], dataclasses.is_dataclass)
    fields = from_record(data["fields"])
    init = {f.name: fields[f.name] for f in dataclasses.fields(cls) if f.init and f.name in fields}
    instance = cls(**init)
    for f in dataclasses.fields(cls):
        if not f.init and f.name in fields:
            object.__setattr__(instance, f.name, fields[f.name])
    return instance


def _decode_interrupt(data: dict[str, Any]) -> Interrupt:
    schema = data.get("response_schema")
    if isinstance(schema, dict) and schema.get(TAG) == "schema":
        schema = _restored_schema(schema)
    elif schema is not None:
        schema = from_record(schema)
    return Interrupt(value=from_record(data["value"]), id=data["id"], response_schema=schema)


def _restored_schema(data: dict[str, Any]) -> Any:
    """A recorded response schema: its class where it has one that can be imported, else
    its JSON schema (enough to show it: LangGraph checks an answer against the schema
    the node gives when it runs again, not against this one)."""
    name = data.get("class")
    if name is not None:
        try:
            return _resolve(name, _is_schema)
        except (ImportError, AttributeError, NotSerializableError):
            pass
    return from_record(data["json_schema"])


def _decode_send(data: dict[str, Any]) -> Send:
    if "timeout" in data:
        return Send(data["node"], from_record(data["arg"]), timeout=from_record(data["timeout"]))
    return Send(data["node"], from_record(data["arg"]))


def _decode_serialized(data: dict[str, Any]) -> Any:
    return _SERDE.loads_typed((data["format"], base64.b64decode(data["base64"])))


def _decode_timedelta(data: dict[str, Any]) -> dt.timedelta:
    return dt.timedelta(days=data["days"], seconds=data["s"], microseconds=data["us"])


def _decode_timezone(data: dict[str, Any]) -> dt.timezone:
    offset = dt.timedelta(seconds=data["seconds"])
    name = data.get("name")
    return (
        dt.timezone(offset)
        if name in (None, dt.timezone(offset).tzname(None))
        else dt.timezone(offset, name)
    )


def _items(data: dict[str, Any]) -> list[Any]:
    return [from_record(item) for item in data["items"]]


_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "message": _decode_message,
    "interrupt": _decode_interrupt,
    "send": _decode_send,
    "pydantic": lambda d: _resolve(d["class"], _is_model).model_validate(from_record(d["data"])),
    "dataclass": _decode_dataclass,
    "namedtuple": lambda d: _resolve(d["class"], _is_namedtuple)(**from_record(d["fields"])),
    "enum": lambda d: _resolve(d["class"], _is_enum)(from_record(d["value"])),
    "tuple": lambda d: tuple(_items(d)),
    "set": lambda d: set(_items(d)),
    "frozenset": lambda d: frozenset(_items(d)),
    "deque": lambda d: deque(_items(d)),
    "dict": lambda d: {from_record(k): from_record(v) for k, v in d["items"]},
    "bytes": lambda d: base64.b64decode(d["base64"]),
    "bytearray": lambda d: bytearray(base64.b64decode(d["base64"])),
    "str": lambda d: base64.b64decode(d["base64"]).decode("utf-8", "surrogatepass"),
    "int": lambda d: int(d["value"]),
    "float": lambda d: float(d["value"]),
    "datetime": lambda d: dt.datetime.fromisoformat(d["iso"]),
    "date": lambda d: dt.date.fromisoformat(d["iso"]),
    "time": lambda d: dt.time.fromisoformat(d["iso"]),
    "timedelta": _decode_timedelta,
    "timezone": _decode_timezone,
    "uuid": lambda d: uuid.UUID(d["value"]),
    "decimal": lambda d: decimal.Decimal(d["value"]),
    "path": lambda d: pathlib.Path(d["value"]),
    "serialized": _decode_serialized,
    "error": lambda d: d["repr"],
}
