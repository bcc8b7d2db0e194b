"""JSON Schemas (draft 2020-12) of the recorded events: one per event class, describing
its stored state as a reader of the events table finds it, keyed by the event's topic.

Published in the repository (`docs/schemas/events.json`, written by `python -m
integrity.event_schemas`; a test keeps it equal to what the code makes) and served at
`GET /schemas/events`. `version` counts changes to the catalogue; each schema names its
class's `class_version` (an event recorded at an older class version is upcast as it
is read, and its stored state follows that version's fields).

A stored state holds the event's fields (its aggregate's id and version are columns
beside it), `timestamp` as `{"_type_": "datetime_iso", "_data_": "..."}`, and, for the
event that makes an aggregate, `originator_topic`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from eventsourcing.domain import Aggregate
from eventsourcing.utils import get_topic

from domain.record.aggregates import AGGREGATES

VERSION = 1
CATALOGUE_ID = f"https://holdpoint.dev/schemas/events/v{VERSION}.json"
PUBLISHED = Path(__file__).resolve().parent.parent / "docs" / "schemas" / "events.json"
COLUMNS = frozenset({"originator_id", "originator_version"})  # beside the state, not in it
TIMESTAMP = {
    "type": "object",
    "properties": {
        "_type_": {"const": "datetime_iso"},
        "_data_": {"type": "string", "format": "date-time"},
    },
    "required": ["_type_", "_data_"],
    "additionalProperties": False,
}
PLAIN: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    dict: {"type": "object"},
    list: {"type": "array"},
}


def event_classes() -> list[type]:
    """Every event class of every aggregate a store records, by topic."""
    found = [
        value
        for aggregate in AGGREGATES
        for value in vars(aggregate).values()
        if isinstance(value, type)
        and value.__name__ not in ("Event", "Created", "Snapshot")
        and issubclass(value, Aggregate.Event)
    ]
    return sorted(found, key=get_topic)


def catalogue() -> dict[str, Any]:
    """Every event's schema, by topic."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": CATALOGUE_ID,
        "version": VERSION,
        "events": {get_topic(cls): schema_of(cls) for cls in event_classes()},
    }


def schema_of(cls: type) -> dict[str, Any]:
    """The schema of an event class's stored state."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required = []
    for field in dataclasses.fields(cls):
        if field.name in COLUMNS:
            continue
        if field.name == "timestamp":
            properties["timestamp"] = TIMESTAMP
        else:
            properties[field.name] = type_schema(hints.get(field.name, Any))
        missing = dataclasses.MISSING
        if field.default is missing and field.default_factory is missing:
            required.append(field.name)
    if issubclass(cls, Aggregate.Created):
        properties["originator_topic"] = {"type": "string"}
        required.append("originator_topic")
    properties["class_version"] = {"type": "integer"}  # stored when above 1
    return {
        "title": cls.__qualname__,
        "description": (cls.__doc__ or "").strip().split("\n\n")[0] or None,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        "x-class-version": getattr(cls, "class_version", 1),
    }


def type_schema(hint: Any) -> dict[str, Any]:
    """A field's type as JSON Schema: JSON's own types, lists, objects, optional values;
    anything else (`Any`) is any JSON."""
    origin = typing.get_origin(hint)
    if hint in PLAIN:
        return PLAIN[hint]
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [type_schema(arg) for arg in typing.get_args(hint)]}
    if origin in (list, tuple):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        return {"type": "array", "items": type_schema(args[0])} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    return {}


def main() -> int:
    """Write the published catalogue (docs/schemas/events.json)."""
    PUBLISHED.parent.mkdir(parents=True, exist_ok=True)
    PUBLISHED.write_text(json.dumps(catalogue(), indent=2, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {PUBLISHED}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
