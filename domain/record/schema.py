"""State schemas: which keys a state has and how updates to each combine.

A key annotated `Annotated[list, operator.add]` folds updates with its
reducer; any other key keeps the last value written. Reducers are recorded by
name when a thread starts: well-known reducers (`operator.add`, ...) resolve
from a table, so reading a thread that uses only those never needs its graph;
a graph registers its own when it is compiled in this process. A name read
from the store never imports or picks any other code: a stored name is data,
and whoever can write the database must not choose what a reader runs.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin, get_type_hints

from domain.errors import GraphDefinitionError, ReducerUnavailableError

Reducer = Callable[[Any, Any], Any]

_REDUCERS: dict[str, Reducer] = {
    "operator:add": operator.add,
    "operator:or_": operator.or_,
    "operator:and_": operator.and_,
    "operator:mul": operator.mul,
}


@dataclass(frozen=True, slots=True)
class Channel:
    """One state key: its reducer (None keeps the last value) and its default."""

    key: str
    reducer_name: str | None
    reducer: Reducer | None
    default_factory: Callable[[], Any] | None


def reducer_name(reducer: Reducer) -> str:
    module = getattr(reducer, "__module__", None) or "builtins"
    if module == "_operator":
        module = "operator"
    qualname = getattr(reducer, "__qualname__", None) or type(reducer).__qualname__
    return f"{module}:{qualname}"


def register_reducer(name: str, reducer: Reducer) -> None:
    """Make `reducer` resolvable by `name` in this process."""
    _REDUCERS.setdefault(name, reducer)


def resolve_reducer(name: str) -> Reducer:
    """The reducer recorded as `name`: a well-known one, or one a graph compiled in this
    process registered; otherwise ReducerUnavailableError (nothing is imported)."""
    found = _REDUCERS.get(name)
    if found is None:
        msg = (
            f"State reducer {name!r} is not known to this process: load the thread's graph "
            "(`--graph NAME=PATH.py:ATTR`, or compile it) so that its reducers are registered. "
            "A reducer is never looked up by a name read from the store"
        )
        raise ReducerUnavailableError(msg)
    return found


def channels_of(schema: type) -> dict[str, Channel]:
    """The channels of a TypedDict, dataclass or pydantic model schema."""
    try:
        hints = get_type_hints(schema, include_extras=True)
    except Exception as error:  # a schema whose annotations do not resolve
        msg = f"State schema {schema!r} has annotations that do not resolve: {error}"
        raise GraphDefinitionError(msg) from None
    if not hints:
        msg = f"State schema {schema!r} declares no keys"
        raise GraphDefinitionError(msg)
    return {key: _channel(key, hint) for key, hint in hints.items()}


def _channel(key: str, hint: Any) -> Channel:
    if get_origin(hint) is typing.Annotated:
        base, *extras = get_args(hint)
        reducers = [extra for extra in extras if callable(extra)]
        if reducers:
            reducer = reducers[-1]
            return Channel(key, reducer_name(reducer), reducer, _zero_value(base))
    return Channel(key, None, None, None)


def _zero_value(base: Any) -> Callable[[], Any] | None:
    """LangGraph starts a reducer key at its type's empty value, when it has one."""
    origin = get_origin(base) or base
    if origin in (list, typing.Sequence, typing.MutableSequence):
        return list
    if origin in (dict, typing.Mapping, typing.MutableMapping):
        return dict
    if origin in (int, float, str):
        return typing.cast(Callable[[], Any], origin)
    return None


def schema_as_record(channels: Mapping[str, Channel]) -> dict[str, str | None]:
    """What ThreadStarted records of the schema: each key's reducer by name."""
    return {key: channel.reducer_name for key, channel in channels.items()}


def initial_values(channels: Mapping[str, Channel]) -> dict[str, Any]:
    return {
        key: channel.default_factory()
        for key, channel in channels.items()
        if channel.default_factory is not None
    }


def as_state(schema: type, values: dict[str, Any]) -> Any:
    """The value a node receives: a dict for TypedDicts, else an instance."""
    if _instantiated(schema):
        return schema(**values)
    return values


@functools.lru_cache(maxsize=256)
def _instantiated(schema: type) -> bool:
    """Whether nodes receive the schema's instances (a dataclass, a pydantic model)."""
    return dataclasses.is_dataclass(schema) or hasattr(schema, "model_fields")


def as_update(value: Any) -> dict[str, Any] | None:
    """A node's return value as a dict of updates, or None if it is not one."""
    if isinstance(value, dict):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return typing.cast(dict[str, Any], dump(exclude_unset=True))
    return None
